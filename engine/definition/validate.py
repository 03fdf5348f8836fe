"""Files and folders of definitions -> every diagnostic, or compiled definitions.

`validate_paths` is `jobmachine validate`; `load_definitions` is how the
controller loads its machines: the same checks, and nothing runs unless all pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from engine.definition.checks import check_graph, check_names, check_together
from engine.definition.compiled import CompiledDefinition, compile_definition
from engine.definition.errors import (
    DefinitionError,
    Diagnostic,
    Position,
    error,
    sorted_diagnostics,
)
from engine.definition.expressions import compile_expressions
from engine.definition.extends import RawDefinition
from engine.definition.loader import (
    LoadedDefinition,
    build_definitions,
    folder_bases,
    parse_text,
    read_file,
)

SUFFIXES = (".yaml", ".yml")


def definition_files(paths: Iterable[str | Path]) -> Iterator[Path | Diagnostic]:
    """Each file named, and every *.yaml / *.yml below each folder named (sorted)."""
    for path in map(Path, paths):
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES and p.is_file())
        elif path.exists():
            yield path
        else:
            yield error(Position(str(path), 1, 1), "no such file or folder")


def _load(paths: Iterable[str | Path]) -> tuple[list[LoadedDefinition], list[Diagnostic]]:
    """Every file's documents, read first and merged together, so a machine may extend one
    written in another file."""
    raws: list[RawDefinition] = []
    bases: list[RawDefinition] = []
    diagnostics: list[Diagnostic] = []
    for item in definition_files(paths):
        if isinstance(item, Diagnostic):
            diagnostics.append(item)
            continue
        read, problems = read_file(item)
        raws += read
        diagnostics += problems
        bases += folder_bases(item, read)
    return build_definitions(raws, bases=bases, problems=diagnostics)


def check_definitions(definitions: list[LoadedDefinition]) -> list[Diagnostic]:
    """Every check of `jobmachine validate` on definitions already loaded (abstract ones
    are checked as part of the machines that extend them)."""
    found = check_together(definitions)
    for loaded in definitions:
        if loaded.abstract:
            continue
        names = check_names(loaded)
        # The graph of a definition with undefined names is not the one meant: its
        # reachability and loops would only echo the naming errors.
        graph = [] if any(d.is_error for d in names) else check_graph(loaded)
        found += names + graph + compile_expressions(loaded).diagnostics
    return found


def validate_paths(paths: Iterable[str | Path]) -> list[Diagnostic]:
    """Every error and warning in the definitions under `paths`, sorted by position."""
    definitions, diagnostics = _load(paths)
    return sorted_diagnostics(diagnostics + check_definitions(definitions))


def validate_text(text: str, filename: str = "<text>") -> list[Diagnostic]:
    """Like `validate_paths` for one document text (tests, StateMachine objects)."""
    definitions, diagnostics = parse_text(text, filename)
    return sorted_diagnostics(diagnostics + check_definitions(definitions))


def load_with_positions(
    paths: Iterable[str | Path],
) -> tuple[list[tuple[LoadedDefinition, CompiledDefinition]], list[Diagnostic]]:
    """Every definition under `paths` that has no error, compiled, beside where its parts
    were written (for tools that report FILE:LINE:COL), and every diagnostic found."""
    definitions, diagnostics = _load(paths)
    diagnostics = sorted_diagnostics(diagnostics + check_definitions(definitions))
    if any(d.is_error for d in diagnostics):
        return [], diagnostics
    compiled = [(loaded, compile_definition(loaded)) for loaded in definitions
                if not loaded.abstract]
    return compiled, diagnostics


def load_definitions(paths: Iterable[str | Path]) -> list[CompiledDefinition]:
    """Compiled definitions; raises `DefinitionError` if any file has any error."""
    definitions, diagnostics = _load(paths)
    diagnostics += check_definitions(definitions)
    if any(d.is_error for d in diagnostics):
        raise DefinitionError(diagnostics)
    return [compile_definition(loaded) for loaded in definitions if not loaded.abstract]
