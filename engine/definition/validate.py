"""Files and folders of definitions -> every diagnostic, or compiled definitions.

`validate_paths` is `jobmachine validate`; `load_definitions` is how the
controller loads its machines: the same checks, and nothing runs unless all pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from engine.definition.cel_types import JobSchema, SchemaLookup
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
    shipped_bases,
)
from engine.definition.schema import BUILT_IN_KINDS
from engine.shipped import shipped_dir_if_present

SUFFIXES = (".yaml", ".yml")


def definition_files(paths: Iterable[str | Path], *, recursive: bool = True
                     ) -> Iterator[Path | Diagnostic]:
    """Each file named, and every *.yaml / *.yml in each folder named (below it too when
    `recursive`), sorted; a path that does not exist is a Diagnostic."""
    for path in map(Path, paths):
        if path.is_dir():
            found = path.rglob("*") if recursive else path.glob("*")
            yield from sorted(p for p in found if p.suffix in SUFFIXES and p.is_file())
        elif path.exists():
            yield path
        else:
            yield error(Position(str(path), 1, 1), "no such file or folder")


@dataclass
class _Loaded:
    definitions: list[LoadedDefinition]
    diagnostics: list[Diagnostic]
    base_files: dict[str, str] = field(default_factory=dict)
    """Where each base found outside the files named was read, by machine name."""


def _load(paths: Iterable[str | Path]) -> _Loaded:
    """Every file's documents, read first and merged together, so a machine may extend one
    written in another file; a base none of them defines is looked for in each file's
    folder, then among the shipped machines."""
    raws: list[RawDefinition] = []
    bases: list[RawDefinition] = []
    diagnostics: list[Diagnostic] = []
    files: list[Path] = []
    for item in definition_files(paths):
        if isinstance(item, Diagnostic):
            diagnostics.append(item)
            continue
        read, problems = read_file(item)
        raws += read
        files.append(item)
        diagnostics += problems
    # Each folder once, and only while a base is missing (the Kubeflow machines all extend
    # one given beside them: `check machines/` read the folder again for each of them).
    looked_in: set[Path] = set()
    for item in files:
        if item.parent not in looked_in:
            looked_in.add(item.parent)
            bases += folder_bases(item, [*raws, *bases], besides=files)
    bases += shipped_bases([*raws, *bases], [*files, *(Path(b.path) for b in bases)])
    folders = sorted({str(file.parent) + "/" for file in files})
    searched = ", ".join(["the files given", *folders, f"the shipped machines ({_shipped()})"])
    definitions, diagnostics = build_definitions(raws, bases=bases, problems=diagnostics,
                                                 searched=searched)
    given = {raw.name for raw in raws}
    base_files = {str(b.name): b.path for b in bases if b.name not in given}
    return _Loaded(definitions, diagnostics, base_files)


def _shipped() -> str:
    folder = shipped_dir_if_present("machines")
    return f"{folder}/" if folder else "none: no machines/ beside the package"


def check_definitions(definitions: list[LoadedDefinition], schemas: SchemaLookup | None = None
                      ) -> list[Diagnostic]:
    """Every check of `jobmachine validate` on definitions already loaded (abstract ones
    are checked as part of the machines that extend them); `schemas` gives the governed
    kinds' schemas, which `job` is typed against where one is known."""
    found = check_together(definitions)
    for loaded in definitions:
        if loaded.abstract:
            continue
        names = check_names(loaded)
        # The graph of a definition with undefined names is not the one meant: its
        # reachability and loops would only echo the naming errors.
        graph = [] if any(d.is_error for d in names) else check_graph(loaded)
        found += names + graph + compile_expressions(loaded, job_schema(loaded, schemas)
                                                     ).diagnostics
    return found


def job_schema(loaded: LoadedDefinition, schemas: SchemaLookup | None) -> JobSchema | None:
    """The schema of the kind `loaded` governs, when `schemas` knows it."""
    governs = loaded.definition.spec.governs
    if schemas is None or governs is None:
        return None
    return schemas(governs.api_version, governs.kind)


@dataclass
class ValidationReport:
    """What `jobmachine validate` prints: the diagnostics, where bases came from, a count."""

    diagnostics: list[Diagnostic]
    machines: int
    notes: list[str]

    @property
    def errors(self) -> int:
        return sum(1 for d in self.diagnostics if d.is_error)

    @property
    def warnings(self) -> int:
        return len(self.diagnostics) - self.errors

    def summary(self) -> str:
        """`8 machines, 0 errors, 0 warnings`."""
        return (f"{_count(self.machines, 'machine')}, {_count(self.errors, 'error')}, "
                f"{_count(self.warnings, 'warning')}")


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def validate_report(paths: Iterable[str | Path], schemas: SchemaLookup | None = None
                    ) -> ValidationReport:
    """`jobmachine validate`: every diagnostic, sorted, and a note for each base read from
    outside the files named (a sibling file, or the shipped machines)."""
    loaded = _load(paths)
    diagnostics = sorted_diagnostics(
        loaded.diagnostics + check_definitions(loaded.definitions, schemas))
    notes: list[str] = []
    for definition in loaded.definitions:
        for base in definition.bases:
            if base in loaded.base_files:
                where = definition.extends_at or definition.positions.value(("spec",))
                notes.append(f"{where}: note: machine '{definition.name}' extends '{base}' "
                             f"from {loaded.base_files[base]}")
        governs = definition.definition.spec.governs
        if (schemas is not None and governs is not None and (governs.api_version, governs.kind)
                not in BUILT_IN_KINDS and job_schema(definition, schemas) is None):
            where = definition.positions.value(("spec", "governs"))
            notes.append(f"{where}: note: no CRD or kind description of {governs.kind} "
                         f"({governs.api_version}) beside the machine or given with --kind: "
                         f"`job` is not typed")
    machines = sum(1 for d in loaded.definitions if not d.abstract)
    return ValidationReport(diagnostics, machines, sorted(set(notes)))



def validate_paths(paths: Iterable[str | Path]) -> list[Diagnostic]:
    """Every error and warning in the definitions under `paths`, sorted by position."""
    return validate_report(paths).diagnostics


def validate_text(text: str, filename: str = "<text>") -> list[Diagnostic]:
    """Like `validate_paths` for one document text (tests, StateMachine objects)."""
    definitions, diagnostics = parse_text(text, filename)
    return sorted_diagnostics(diagnostics + check_definitions(definitions))


def load_with_positions(
    paths: Iterable[str | Path], schemas: SchemaLookup | None = None,
) -> tuple[list[tuple[LoadedDefinition, CompiledDefinition]], list[Diagnostic]]:
    """Every definition under `paths` that has no error, compiled, beside where its parts
    were written (for tools that report FILE:LINE:COL), and every diagnostic found."""
    loaded = _load(paths)
    definitions = loaded.definitions
    diagnostics = sorted_diagnostics(loaded.diagnostics + check_definitions(definitions, schemas))
    if any(d.is_error for d in diagnostics):
        return [], diagnostics
    compiled = [(loaded, compile_definition(loaded)) for loaded in definitions
                if not loaded.abstract]
    return compiled, diagnostics


def load_definitions(paths: Iterable[str | Path]) -> list[CompiledDefinition]:
    """Compiled definitions; raises `DefinitionError` if any file has any error."""
    loaded = _load(paths)
    definitions = loaded.definitions
    diagnostics = loaded.diagnostics + check_definitions(definitions)
    if any(d.is_error for d in diagnostics):
        raise DefinitionError(diagnostics)
    return [compile_definition(loaded) for loaded in definitions if not loaded.abstract]
