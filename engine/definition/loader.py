"""YAML files -> `MachineDefinition` models, each with the positions of its nodes.

A file may hold several `StateMachine` documents. Syntax, duplicate-key and
schema problems come back as diagnostics at the offending node; the models of
the documents that loaded keep a position index so later checks can point at
the exact line and column too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError
from ruamel.yaml.nodes import Node, ScalarNode

from engine.definition.errors import DefinitionError, Diagnostic, Position, error
from engine.definition.positions import PositionIndex, convert_document
from engine.definition.schema import API_VERSION, KIND, MachineDefinition
from engine.definition.schema_errors import schema_diagnostics, yaml_kind


@dataclass(frozen=True)
class LoadedDefinition:
    """One definition as written: the model, where it came from, where its nodes are."""

    definition: MachineDefinition
    path: str
    document: int  # 0-based index of the document in its file
    positions: PositionIndex

    @property
    def name(self) -> str:
        return self.definition.name


def load_file(path: str | Path) -> list[LoadedDefinition]:
    """Every definition in one file; raises `DefinitionError` on any load problem."""
    definitions, diagnostics = parse_file(path)
    _raise_on_errors(diagnostics)
    return definitions


def load_text(text: str, filename: str = "<text>") -> list[LoadedDefinition]:
    """Like `load_file` for text already in memory (tests, API objects)."""
    definitions, diagnostics = parse_text(text, filename)
    _raise_on_errors(diagnostics)
    return definitions


def parse_file(path: str | Path) -> tuple[list[LoadedDefinition], list[Diagnostic]]:
    """The definitions that loaded and the problems of those that did not."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return [], [error(Position(name, 1, 1), f"cannot read the file: {_reason(exc)}")]
    return parse_text(text, name)


def parse_text(text: str, filename: str) -> tuple[list[LoadedDefinition], list[Diagnostic]]:
    """Parse all documents of `text`; a syntax error stops the whole file."""
    yaml = YAML(typ="safe", pure=True)
    try:
        nodes = list(yaml.compose_all(text))
    except MarkedYAMLError as exc:
        return [], [_syntax_diagnostic(exc, filename)]
    lines = text.splitlines()
    definitions: list[LoadedDefinition] = []
    diagnostics: list[Diagnostic] = []
    for number, node in enumerate(nodes):
        if _is_empty(node):
            continue
        data, index, problems = convert_document(node, filename, lines, yaml.constructor)
        diagnostics += problems
        loaded, schema_problems = _validate(data, index, filename, number)
        diagnostics += schema_problems
        if loaded is not None and not problems:
            definitions.append(loaded)
    return definitions, diagnostics


def _validate(
    data: Any, index: PositionIndex, filename: str, number: int
) -> tuple[LoadedDefinition | None, list[Diagnostic]]:
    start = index.value(())
    if not isinstance(data, dict):
        return None, [error(start, f"a document must be a {KIND} mapping, not {yaml_kind(data)}")]
    if data.get("apiVersion") == API_VERSION and data.get("kind") not in (None, KIND):
        where = index.value(("kind",))
        return None, [error(where, f"kind must be {KIND}, not {data['kind']!r}")]
    try:
        definition = MachineDefinition.model_validate(data)
    except ValidationError as exc:
        return None, schema_diagnostics(exc, data, index)
    return LoadedDefinition(definition, filename, number, index), []


def _is_empty(node: Node | None) -> bool:
    return node is None or (isinstance(node, ScalarNode) and str(node.tag).endswith(":null"))


def _syntax_diagnostic(exc: MarkedYAMLError, filename: str) -> Diagnostic:
    mark = exc.problem_mark or exc.context_mark
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    parts = [p for p in (exc.context, exc.problem) if p]
    return error(Position(filename, line, column), "YAML syntax: " + ", ".join(parts))


def _reason(exc: Exception) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)


def _raise_on_errors(diagnostics: list[Diagnostic]) -> None:
    if any(d.is_error for d in diagnostics):
        raise DefinitionError(diagnostics)
