"""A scenario file -> the scenario, its job and the compiled machine, or every problem found.

Scenario, job manifest and machine are read with the machine loader's YAML machinery
(`engine/definition/loader.py`, `positions.py`, `schema_errors.py`), so a problem in
any of the three is one `FILE:LINE:COL: error: ...` line at the offending node, as
`jobmachine validate` reports machines.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.jobspec import read_job_spec
from engine.definition import CompiledDefinition, DefinitionError, load_definitions
from engine.definition.errors import Diagnostic, Position, error, sorted_diagnostics
from engine.definition.loader import read_file
from engine.definition.positions import Path as DataPath
from engine.definition.positions import PositionIndex
from engine.definition.schema_errors import schema_diagnostics, yaml_kind
from engine.simulation.scenario import Fact, Scenario


class ScenarioError(Exception):
    """A scenario that cannot be played; carries every diagnostic found."""

    def __init__(self, diagnostics: Iterable[Diagnostic]) -> None:
        self.diagnostics = tuple(sorted_diagnostics(diagnostics))
        super().__init__("\n".join(str(d) for d in self.diagnostics if d.is_error))


@dataclass(frozen=True)
class TimedFact:
    """A fact of the timeline, its replica read, and where it was written."""

    fact: Fact
    replica: ReplicaId | None
    position: Position


@dataclass(frozen=True)
class LoadedScenario:
    """A scenario ready to play."""

    path: str
    scenario: Scenario
    positions: PositionIndex
    job: dict[str, Any]
    """The job as written (the driver adds what the API server would: uid, namespace...)."""
    definition: CompiledDefinition
    facts: tuple[TimedFact, ...]


@dataclass(frozen=True)
class _Document:
    """One YAML document's data and where its nodes are; `prefix` is its path in `index`."""

    data: Any
    index: PositionIndex
    prefix: DataPath = ()

    def at(self, *path: str | int) -> Position:
        return self.index.value((*self.prefix, *path))


def load_scenario(path: str | Path, *, machines: Path) -> LoadedScenario:
    """Read, check and resolve a scenario file; `machines` is where the shipped machine of
    the job's kind is looked for when the scenario names none. Raises `ScenarioError`."""
    document = _read_one(Path(path), "scenario")
    if not isinstance(document.data, dict):
        raise ScenarioError([error(document.at(), "a scenario is a mapping with job, machine, "
                                                  f"pods, timeline and expect, not "
                                                  f"{yaml_kind(document.data)}")])
    try:
        scenario = Scenario.model_validate(document.data)
    except ValidationError as exc:
        raise ScenarioError(schema_diagnostics(exc, document.data, document.index,
                                               root=Scenario)) from None
    base = Path(path).parent
    job = _job(scenario, document, base)
    definition = _definition(scenario, document, job, base, machines)
    if definition.schedule is not None:
        raise ScenarioError([error(document.at("job"), (
            f"machine {definition.name} makes its children on a schedule (spec.schedule, a "
            f"{job.data['kind']}'s Jobs), which simulate does not play: it runs one job and "
            "its pods. Simulate the child kind instead (its template as a job of its own)"))])
    if definition.child is not None:
        child = definition.child
        raise ScenarioError([error(document.at("job"), (
            f"machine {definition.name}'s replicas are {child.kind} objects (spec.child), which "
            "simulate does not play yet: it runs one job and its pods. Simulate the child "
            "kind instead (a replica's template as a job of its own)"))])
    facts = _facts(scenario, document, job.data, definition)
    return LoadedScenario(str(path), scenario, document.index, job.data, definition, facts)


def _read_one(path: Path, what: str) -> _Document:
    """The one document of a YAML file."""
    raws, problems = read_file(path)
    if any(p.is_error for p in problems):
        raise ScenarioError(problems)
    if len(raws) != 1:
        where = raws[1].positions.value(()) if raws else Position(str(path), 1, 1)
        raise ScenarioError([error(where, f"a {what} file holds exactly one YAML document")])
    return _Document(raws[0].data, raws[0].positions)


def _relative(base: Path, written: str) -> Path:
    return Path(os.path.normpath(base / written))


def _job(scenario: Scenario, document: _Document, base: Path) -> _Document:
    if isinstance(scenario.job, dict):
        job = _Document(scenario.job, document.index, ("job",))
    else:
        path = _relative(base, scenario.job)
        if not path.is_file():
            raise ScenarioError([error(document.at("job"), f"no job manifest {path}")])
        job = _read_one(path, "job manifest")
    problems = _job_problems(job)
    if problems:
        raise ScenarioError(problems)
    return job


def _job_problems(job: _Document) -> list[Diagnostic]:
    data = job.data
    if not isinstance(data, dict):
        return [error(job.at(), f"a job is a mapping, not {yaml_kind(data)}")]
    found = [error(job.at(field), f"the job needs '{field}' (a string)")
             for field in ("apiVersion", "kind") if not isinstance(data.get(field), str)]
    metadata = data.get("metadata")
    if not isinstance(metadata, dict) or not isinstance(metadata.get("name"), str):
        found.append(error(job.at("metadata"), "the job needs metadata.name (a string)"))
    if not isinstance(data.get("spec"), dict):
        found.append(error(job.at("spec"), "the job needs a spec (a mapping)"))
    return found


def _definition(scenario: Scenario, document: _Document, job: _Document, base: Path,
                machines: Path) -> CompiledDefinition:
    api_version, kind = job.data["apiVersion"], job.data["kind"]
    if scenario.machine is not None:
        path, where = _relative(base, scenario.machine), document.at("machine")
        if not path.is_file():
            raise ScenarioError([error(where, f"no machine file {path}")])
    else:
        found, where = _shipped_machine(machines, api_version, kind), job.at("kind")
        if found is None:
            raise ScenarioError([error(where, f"no machine in {machines} governs {api_version} "
                                              f"{kind}: name one with 'machine:'")])
        path = found
    try:
        definitions = load_definitions([path])
    except DefinitionError as exc:
        raise ScenarioError(exc.diagnostics) from None
    for definition in definitions:
        if (definition.governs.api_version, definition.governs.kind) == (api_version, kind):
            return definition
    governed = ", ".join(f"{d.governs.api_version} {d.governs.kind}" for d in definitions)
    raise ScenarioError([error(where, f"{path} governs {governed or 'no kind'}, not the job's "
                                      f"{api_version} {kind}")])


def _shipped_machine(machines: Path, api_version: str, kind: str) -> Path | None:
    """The machine file of `machines` whose definition governs the kind (read, not checked:
    only the one found is loaded and checked)."""
    named = machines / f"{kind.lower()}.yaml"  # the shipped files' naming: read it first
    for path in sorted(machines.glob("*.yaml"), key=lambda p: (p != named, p.name)):
        for raw in read_file(path)[0]:
            spec = raw.data.get("spec") if isinstance(raw.data, dict) else None
            governs = spec.get("governs") if isinstance(spec, dict) else None
            if isinstance(governs, dict) and (governs.get("apiVersion"),
                                              governs.get("kind")) == (api_version, kind):
                return path
    return None


def _facts(scenario: Scenario, document: _Document, job: dict[str, Any],
           definition: CompiledDefinition) -> tuple[TimedFact, ...]:
    spec = read_job_spec(job, definition)
    types = [t.name for t in spec.replica_types]
    facts: list[TimedFact] = []
    problems: list[Diagnostic] = []
    for number, fact in enumerate(scenario.timeline):
        where = document.at("timeline", number)
        if facts and fact.at < facts[-1].fact.at:
            problems.append(error(document.at("timeline", number, "at"),
                                  "the timeline goes back in time: keep its facts in the "
                                  "order they happen"))
        replica = None
        if fact.replica is not None:
            replica = _replica(fact.replica)
            if replica is None or (types and replica.type not in types):
                known = ", ".join(f"{t}-0" for t in types) or "(none: the job is invalid)"
                problems.append(error(document.at("timeline", number, "replica"),
                                      f"no replica {fact.replica!r}: name one as Type-Index "
                                      f"({known}, ...)"))
        facts.append(TimedFact(fact, replica, where))
    if problems:
        raise ScenarioError(problems)
    return tuple(facts)


def _replica(written: str) -> ReplicaId | None:
    kind, _, index = written.rpartition("-")
    return ReplicaId(kind, int(index)) if kind and index.isdigit() else None
