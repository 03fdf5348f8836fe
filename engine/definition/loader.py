"""YAML files (and API objects) -> `MachineDefinition` models with the positions of their nodes.

A file may hold several `StateMachine` documents. Syntax, duplicate-key and
schema problems come back as diagnostics at the offending node; the models of
the documents that loaded keep a position index so later checks can point at
the exact line and column too. A machine that extends another (`spec.extends`)
is merged with it first; its base is looked for among the documents loaded
together, then in the other machine files of the same folder.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError
from ruamel.yaml.nodes import Node, ScalarNode

from engine.definition.errors import DefinitionError, Diagnostic, Position, error
from engine.definition.extends import RawDefinition, resolve
from engine.definition.positions import PositionIndex, convert_document, object_index
from engine.definition.reasons import expand_kind
from engine.definition.schema import API_VERSION, KIND, MachineDefinition
from engine.definition.schema_errors import schema_diagnostics, yaml_kind
from engine.shipped import shipped_dir_if_present


@dataclass(frozen=True)
class LoadedDefinition:
    """One definition as written: the model, where it came from, where its nodes are."""

    definition: MachineDefinition
    path: str
    document: int  # 0-based index of the document in its file
    positions: PositionIndex
    bases: tuple[str, ...] = ()
    """The machines merged into this one (spec.extends, nearest first)."""
    data: Any = None
    """The document as it runs: bases merged in, `${job.kind}` in reasons replaced."""
    extends_at: Position | None = None
    """Where `spec.extends` is written in the file, for what is said of the base: the merged
    `positions` hold only what the merged document has, and `extends` is not merged."""

    @property
    def name(self) -> str:
        return self.definition.name

    @property
    def abstract(self) -> bool:
        """Whether it only serves as a base of other machines (it governs no kind)."""
        return self.definition.spec.abstract


def load_file(path: str | Path) -> list[LoadedDefinition]:
    """Every definition in one file; raises `DefinitionError` on any load problem."""
    definitions, diagnostics = parse_file(path)
    _raise_on_errors(diagnostics)
    return definitions


def load_text(
    text: str, filename: str = "<text>", *, bases: Iterable[RawDefinition] = ()
) -> list[LoadedDefinition]:
    """Like `load_file` for text already in memory (tests); `bases` may be extended too."""
    definitions, diagnostics = parse_text(text, filename, bases=bases)
    _raise_on_errors(diagnostics)
    return definitions


def parse_file(path: str | Path) -> tuple[list[LoadedDefinition], list[Diagnostic]]:
    """The definitions that loaded and the problems of those that did not.

    Bases named by `spec.extends` are looked for in the other machine files of the
    file's folder; problems of those files are not this file's and are not reported.
    """
    raws, diagnostics = read_file(path)
    return build_definitions(raws, bases=folder_bases(Path(path), raws), problems=diagnostics)


def read_file(path: str | Path) -> tuple[list[RawDefinition], list[Diagnostic]]:
    """The documents of a file as data with positions, before merging and checking."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return [], [error(Position(name, 1, 1), f"cannot read the file: {_reason(exc)}")]
    return read_text(text, name)


def parse_text(
    text: str, filename: str, *, bases: Iterable[RawDefinition] = ()
) -> tuple[list[LoadedDefinition], list[Diagnostic]]:
    """Parse all documents of `text`; a syntax error stops the whole file."""
    raws, diagnostics = read_text(text, filename)
    return build_definitions(raws, bases=bases, problems=diagnostics)


def read_text(text: str, filename: str) -> tuple[list[RawDefinition], list[Diagnostic]]:
    """The documents of `text` as data with positions; duplicate keys and syntax errors."""
    # libyaml's parser (ruamel.yaml.clib) when present: the same nodes and marks, about ten
    # times faster than the pure-Python one, which loading every machine otherwise waits on.
    # A syntax error is told in the pure parser's words, which name what it found instead.
    yaml = YAML(typ="safe")
    try:
        nodes = list(yaml.compose_all(text))
    except MarkedYAMLError:
        try:
            nodes = list(YAML(typ="safe", pure=True).compose_all(text))
        except MarkedYAMLError as exc:
            return [], [_syntax_diagnostic(exc, filename)]
    lines = text.splitlines()
    raws: list[RawDefinition] = []
    diagnostics: list[Diagnostic] = []
    for number, node in enumerate(nodes):
        if _is_empty(node):
            continue
        data, index, problems = convert_document(node, filename, lines, yaml.constructor)
        diagnostics += problems
        usable = not any(p.is_error for p in problems)
        raws.append(RawDefinition(data, index, filename, number, usable))
    return raws, diagnostics


def object_definition(obj: Mapping[str, Any]) -> RawDefinition:
    """A StateMachine API object as a definition located by field path (it has no lines)."""
    data = {k: obj[k] for k in ("apiVersion", "kind", "metadata", "spec") if k in obj}
    metadata = obj.get("metadata") or {}
    if isinstance(metadata, Mapping):
        data["metadata"] = {k: metadata[k] for k in ("name",) if k in metadata}
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    file = f"StateMachine {name}"
    return RawDefinition(data, object_index(data, file), file)


def build_definitions(
    raws: Iterable[RawDefinition],
    *,
    bases: Iterable[RawDefinition] = (),
    problems: Iterable[Diagnostic] = (),
    searched: str = "",
) -> tuple[list[LoadedDefinition], list[Diagnostic]]:
    """Merge each document with its bases (among `raws`, then `bases`) and check its shape;
    `searched` says where bases were looked for (for the error naming a base not found)."""
    raws = list(raws)
    named: dict[str, RawDefinition] = {}
    for raw in [*raws, *bases]:
        if raw.name is not None:
            named.setdefault(raw.name, raw)
    definitions: list[LoadedDefinition] = []
    diagnostics = list(problems)
    for raw in raws:
        resolved, found = resolve(raw, named.get, searched=searched)
        diagnostics += found
        if resolved is None:
            continue
        extends_at = raw.positions.value(("spec", "extends")) if raw.extends else None
        loaded, schema_problems = _validate(resolved.raw, resolved.bases, extends_at)
        diagnostics += schema_problems
        if loaded is not None and resolved.raw.usable:
            definitions.append(loaded)
    return definitions, diagnostics


def missing_bases(raws: Iterable[RawDefinition]) -> set[str]:
    """The machines some of `raws` extend that none of them defines."""
    raws = list(raws)
    names = {raw.name for raw in raws}
    return {raw.extends for raw in raws if raw.extends is not None} - names


def folder_bases(path: Path, raws: Iterable[RawDefinition], *, besides: Iterable[Path] = ()
                 ) -> list[RawDefinition]:
    """The other documents of `path`'s folder (but for the files `besides`, already read),
    read only when one of `raws` extends a machine that `raws` do not define."""
    if not missing_bases(raws):
        return []
    return _documents_of(sorted(path.parent.glob("*.y*ml")), besides=[path, *besides])


def shipped_bases(raws: Iterable[RawDefinition], read: Iterable[Path]) -> list[RawDefinition]:
    """The shipped machines' documents (the checkout's machines/), read only when one of
    `raws` extends a machine none of them defines; files in `read` are not read again."""
    folder = shipped_dir_if_present("machines")
    if folder is None or not missing_bases(raws):
        return []
    return _documents_of(sorted(folder.rglob("*.y*ml")), besides=list(read))


def _documents_of(files: Iterable[Path], *, besides: list[Path]) -> list[RawDefinition]:
    skipped = {path.resolve() for path in besides}
    found: list[RawDefinition] = []
    for file in files:
        if file.suffix in (".yaml", ".yml") and file.is_file() and file.resolve() not in skipped:
            found += read_file(file)[0]
    return found


def _validate(
    raw: RawDefinition, bases: tuple[str, ...], extends_at: Position | None = None
) -> tuple[LoadedDefinition | None, list[Diagnostic]]:
    data, index = raw.data, raw.positions
    start = index.value(())
    if not isinstance(data, dict):
        return None, [error(start, f"a document must be a {KIND} mapping, not {yaml_kind(data)}")]
    if data.get("apiVersion") == API_VERSION and data.get("kind") not in (None, KIND):
        where = index.value(("kind",))
        return None, [error(where, f"kind must be {KIND}, not {data['kind']!r}")]
    data = expand_kind(data)
    try:
        definition = MachineDefinition.model_validate(data)
    except ValidationError as exc:
        return None, schema_diagnostics(exc, data, index)
    return LoadedDefinition(definition, raw.path, raw.document, index, bases, data,
                            extends_at), []


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
