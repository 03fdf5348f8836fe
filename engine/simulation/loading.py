"""A scenario file -> the scenario, its job and the compiled machine, or every problem found.

Scenario, job manifest and machine are read with the machine loader's YAML machinery
(`engine/definition/loader.py`, `positions.py`, `schema_errors.py`), so a problem in
any of the three is one `FILE:LINE:COL: error: ...` line at the offending node, as
`jobmachine validate` reports machines.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from engine.api.kind_schemas import kind_schema_lookup
from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.jobspec import read_job_spec
from engine.definition import CompiledDefinition, DefinitionError, load_definitions
from engine.definition.errors import Diagnostic, Position, error, sorted_diagnostics
from engine.definition.loader import read_file
from engine.definition.positions import Path as DataPath
from engine.definition.positions import PositionIndex
from engine.definition.schema_errors import schema_diagnostics, yaml_kind
from engine.simulation.scenario import Fact, Scenario
from engine.simulation.stored import Storage
from engine.simulation.tree import Machines
from engine.simulation.world import ReferenceKey


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
    above: tuple[ReplicaId, ...] = ()
    """The replicas whose child objects lead down to the pod's job: () for the job's own
    pods, (workers-0,) for a pod of the JobSet's Job workers-0."""


@dataclass(frozen=True)
class LoadedScenario:
    """A scenario ready to play."""

    path: str
    scenario: Scenario
    positions: PositionIndex
    job: dict[str, Any]
    """The job as written, pruned and defaulted by its kind's schema (the driver adds the
    rest of what the API server would: uid, namespace...)."""
    definition: CompiledDefinition
    facts: tuple[TimedFact, ...]
    children: Machines = field(default_factory=dict)
    """The machines of the child kinds below the job's (a JobSet's Jobs: batch-job), by the
    (apiVersion, kind) each governs."""
    referenced: Mapping[ReferenceKey, Mapping[str, Any]] = field(default_factory=dict)
    """The objects a job may name (governs.references), by where it looks for them."""
    storage: Storage = field(default_factory=lambda: Storage(lambda _api, _kind: None))
    """How the API server stores the objects the engine creates (a custom kind's defaults)."""


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
    definition, beside, machine_path = _definition(scenario, document, job, base, machines)
    storage = Storage(kind_schema_lookup([machine_path]))
    stored, refused = storage.stored(job.data)
    if refused:
        raise ScenarioError([error(job.at(), "the API server would refuse the job: "
                                             + "; ".join(refused))])
    if definition.schedule is not None:
        raise ScenarioError([error(document.at("job"), (
            f"machine {definition.name} makes its children on a schedule (spec.schedule, a "
            f"{job.data['kind']}'s Jobs), which simulate does not play: it runs one job and "
            "its pods. Simulate the child kind instead (its template as a job of its own)"))])
    children = _child_machines(definition, beside, machines, document.at("job"))
    facts = _facts(scenario, document, stored, definition, children)
    referenced = _referenced(scenario, document, base, machines, stored)
    return LoadedScenario(str(path), scenario, document.index, stored, definition, facts,
                          children, referenced, storage)


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
                machines: Path) -> tuple[CompiledDefinition, list[CompiledDefinition], Path]:
    """The machine of the job's kind, the others of its file (a child kind's machine is
    looked for among them first), and that file."""
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
            return definition, definitions, path
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


def _child_machines(definition: CompiledDefinition, beside: list[CompiledDefinition],
                    machines: Path, where: Position) -> dict[tuple[str, str], CompiledDefinition]:
    """The machine of each child kind below the job's, level by level: one of the job's
    machine file, else the shipped one (a TrainJob's JobSet, then that JobSet's Jobs)."""
    found: dict[tuple[str, str], CompiledDefinition] = {}
    parent = definition
    while parent.child is not None:
        kind = (parent.child.api_version, parent.child.kind)
        if kind in found:
            break  # a kind whose children are of its own kind: its machine is known
        machine = next((d for d in beside if (d.governs.api_version, d.governs.kind) == kind),
                       None) or _shipped_child(machines, kind, parent, where)
        found[kind] = parent = machine
    return found


def _shipped_child(machines: Path, kind: tuple[str, str], parent: CompiledDefinition,
                   where: Position) -> CompiledDefinition:
    path = _shipped_machine(machines, *kind)
    if path is None:
        raise ScenarioError([error(where, (
            f"machine {parent.name}'s replicas are {kind[1]} objects (spec.child), and no "
            f"machine in {machines} governs {kind[0]} {kind[1]}: simulate plays a child with "
            "its own machine"))])
    try:
        definitions = load_definitions([path])
    except DefinitionError as exc:
        raise ScenarioError(exc.diagnostics) from None
    return next(d for d in definitions if (d.governs.api_version, d.governs.kind) == kind)


def _facts(scenario: Scenario, document: _Document, job: dict[str, Any],
           definition: CompiledDefinition, children: Machines) -> tuple[TimedFact, ...]:
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
        path: list[ReplicaId] = []
        if fact.replica is not None:
            found = _replica_path(fact.replica, types, definition, children)
            if isinstance(found, str):
                problems.append(error(document.at("timeline", number, "replica"), found))
            else:
                path = found
        facts.append(TimedFact(fact, path[-1] if path else None, where, tuple(path[:-1])))
    if problems:
        raise ScenarioError(problems)
    return tuple(facts)


def _replica_path(written: str, types: list[str], definition: CompiledDefinition,
                  children: Machines) -> list[ReplicaId] | str:
    """The replicas of `workers-0/Job-1`, down to a pod; or what is wrong with it."""
    path: list[ReplicaId] = []
    machine: CompiledDefinition | None = definition
    for part in written.split("/"):
        replica = _replica(part)
        if machine is None or replica is None or (not path and types
                                                  and replica.type not in types):
            known = ", ".join(f"{t}-0" for t in types) or "(none: the job is invalid)"
            below = "" if definition.child is None else (
                ", a pod of a child's machine by the replicas down to it (workers-0/Job-1)")
            return f"no replica {written!r}: name one as Type-Index ({known}, ...){below}"
        path.append(replica)
        child = machine.child
        machine = None if child is None else children.get((child.api_version, child.kind))
    if machine is not None:
        kind = definition.child.kind if definition.child and len(path) == 1 else "child"
        return (f"replica {written!r} is a {kind} object (spec.child), not a pod: name one of "
                f"its pods by the replicas down to it ({written}/Type-Index)")
    return path


def _referenced(scenario: Scenario, document: _Document, base: Path, machines: Path,
                job: Mapping[str, Any]) -> dict[ReferenceKey, Mapping[str, Any]]:
    """The objects of `objects:` (default: the manifests beside the machines, as `jobmachine
    up` installs them), by where a job looks for each; one without a namespace is where
    the job looks, in its namespace or in none."""
    namespace = (job.get("metadata") or {}).get("namespace") or "default"
    found: dict[ReferenceKey, Mapping[str, Any]] = {}
    for obj in _objects(scenario, document, base, machines):
        metadata = obj.get("metadata") if isinstance(obj, dict) else None
        if not isinstance(metadata, dict) or not isinstance(metadata.get("name"), str):
            continue
        api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
        for where in ((metadata["namespace"],) if metadata.get("namespace") else ("", namespace)):
            found[(api_version, kind, where, metadata["name"])] = obj
    return found


def _objects(scenario: Scenario, document: _Document, base: Path, machines: Path
             ) -> list[Any]:
    if scenario.objects is None:
        shipped = machines.parent / "manifests"
        files = sorted(shipped.glob("*.yaml")) if shipped.is_dir() else []
        return [raw.data for path in files for raw in read_file(path)[0]]
    objects: list[Any] = []
    for number, given in enumerate(scenario.objects):
        if isinstance(given, dict):
            objects.append(given)
            continue
        path = _relative(base, given)
        if not path.is_file():
            raise ScenarioError([error(document.at("objects", number), f"no manifest {path}")])
        raws, problems = read_file(path)
        if any(p.is_error for p in problems):
            raise ScenarioError(problems)
        objects += [raw.data for raw in raws]
    return objects


def _replica(written: str) -> ReplicaId | None:
    kind, _, index = written.rpartition("-")
    return ReplicaId(kind, int(index)) if kind and index.isdigit() else None
