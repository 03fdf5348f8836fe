"""`jobmachine check`: every machine under some paths, every job shape, every rule.

The rules (docs/machine-language.md, "Model checking"):
- dead-end: from every situation a terminal job state stays reachable;
- terminal-left: a terminal job state is never left;
- double-pod: a new pod is never wanted for an index whose pod is still there;
- over-parallelism: a pool never has more live pods than its parallelism;
- pod-after-end: no pod is created once the job is ending or ended;
- backoff-limit: no pod is created, and no job goes on, past runPolicy.backoffLimit (with
  backoffLimitPerIndex: no pod is created for an index past it);
- never-settles: the engine settles at every instant;
and a machine's rollout (spec.rollout) is explored by its own rules (`rollouts.py`); and
every declared state and condition is reached, or reported unused. A machine whose
replicas are child objects (spec.child) is explored with the machine of its children's
kind, which says how a child can move (`children.py`).
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.api.kind_schemas import kind_schema_lookup
from engine.collector import GC_THRESHOLDS, tune_collector
from engine.controller.reconcile.variables import Summaries, remembering_summaries
from engine.definition import CompiledDefinition, Diagnostic, LoadedDefinition, Position
from engine.definition.cel import RememberedValues, remembering_values
from engine.definition.cel_types import SchemaLookup
from engine.definition.errors import warning
from engine.definition.expressions import compile_expressions
from engine.definition.remembered_steps import RememberedSteps, remembering_steps
from engine.definition.validate import load_with_positions
from engine.modelcheck.children import ChildMoves, Machines
from engine.modelcheck.codes import exit_code_classes
from engine.modelcheck.explore import ShapeResult, Violation, explore
from engine.modelcheck.referenced import referenced_variants
from engine.modelcheck.rollouts import RolloutReport, check_rollout
from engine.modelcheck.shapes import Bounds, Shape, build_job, exit_codes, shapes
from engine.modelcheck.workers import explore_by_machine
from engine.shipped import shipped_dir_if_present


@dataclass(frozen=True)
class Unused:
    """A declared state or condition no explored situation reached."""

    what: str
    position: Position


@dataclass
class MachineReport:
    """What checking one machine found."""

    loaded: LoadedDefinition
    definition: CompiledDefinition
    shapes: list[ShapeResult] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    unused: list[Unused] = field(default_factory=list)
    codes: tuple[int, ...] = ()
    failed_expressions: dict[str, int] = field(default_factory=dict)
    """Each expression that could not be evaluated, and in how many passes (all shapes)."""
    rollout: RolloutReport | None = None
    """With spec.rollout: what exploring its rollout found (`rollouts.py`)."""

    @property
    def situations(self) -> int:
        return sum(result.situations for result in self.shapes)

    @property
    def complete(self) -> bool:
        return all(result.complete for result in self.shapes)

    def position(self, violation: Violation) -> Position:
        """Where the offending state or transition is written."""
        return self.loaded.positions.key(violation.where)

    def expression_position(self, gist: str) -> Position:
        """Where the expression an evaluation error quotes is written (in the machine that
        wrote it: a base's file, or the extending machine's); the machine's own document
        when no expression of it is quoted."""
        quoted = compile_expressions(self.loaded).quoted_by(gist)
        return self.loaded.positions.value(quoted[0] if quoted is not None else ())


@dataclass
class CheckReport:
    """Every machine checked, or the diagnostics that kept them from loading."""

    machines: list[MachineReport] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether every rule held on every machine, fully explored, and every expression
        could be evaluated."""
        return (not any(d.is_error for d in self.diagnostics)
                and all(not m.violations and m.complete and not m.failed_expressions
                        and (m.rollout is None or not m.rollout.violations)
                        for m in self.machines))


def check_paths(paths: Iterable[str | Path], bounds: Bounds, *, jobs: int = 1,
                schemas: SchemaLookup | None = None) -> CheckReport:
    """Load the machines under `paths` (as `validate` does, `job` typed against the kinds'
    `schemas`, by default those `validate` finds without --kind) and check each, exploring
    up to `jobs` job shapes at once in worker processes."""
    named = tuple(str(p) for p in paths)
    if schemas is None:
        schemas = kind_schema_lookup([Path(p) for p in named])
    loaded, diagnostics = load_with_positions(named, schemas)
    helpers = child_machines([d for _, d in loaded])
    machines = _by_kind([*(d for _, d in loaded), *helpers])
    unexplored = [(source, d, why) for source, d in loaded
                  if (why := _unexplorable(d, machines)) is not None]
    loaded = [(source, d) for source, d in loaded if _unexplorable(d, machines) is None]
    # Not explored, said as a warning: a folder of machines still checks, and nothing is
    # claimed of the machine check did not run.
    diagnostics += [warning(source.positions.key(where), f"check does not explore machine "
                            f"{d.name}: {reason}; `validate` checks it")
                    for source, d, (where, reason) in unexplored]
    report = CheckReport(diagnostics=diagnostics)
    work = [(source, definition, shape) for source, definition in loaded
            for shape in shapes(definition, bounds, _schema(definition, schemas),
                                child_shapes(definition, machines, bounds, schemas),
                                _referenced(definition, schemas))]
    _SCHEMAS[named] = schemas
    if jobs > 1 and len(work) > 1:
        # Forked workers inherit these and skip loading the machines again (about 2 s of
        # YAML and compiling each); spawned ones load them once each.
        _LOADED[named] = {definition.name: definition
                          for definition in [*helpers, *(d for _, d in loaded)]}
        # Each worker kept on one machine while it has shapes left, the likely longest
        # first, so none warms every machine's memories nor is left with a long shape at
        # the end while the others idle (`workers.py`).
        results = explore_by_machine([(named, d.name, shape, bounds) for _, d, shape in work],
                                     _explore_loaded, jobs=jobs,
                                     machines=[d.name for _, d, _ in work],
                                     weights=[_weight(d, shape) for _, d, shape in work])
    else:
        with _collecting_seldom():
            results = [_explore(d, shape, bounds, machines, schemas) for _, d, shape in work]
    for source, definition in loaded:
        mine = [r for (_, d, _), r in zip(work, results, strict=True) if d is definition]
        machine = _machine_report(source, definition, mine)
        if definition.rollout is not None:  # a second or less: in this process
            machine.rollout = check_rollout(definition)
        report.machines.append(machine)
    return report


def _schema(definition: CompiledDefinition, schemas: SchemaLookup) -> Mapping[str, Any] | None:
    """The schema of the kind the machine governs, when one was found."""
    governs = definition.governs
    found = schemas(governs.api_version, governs.kind)
    return found.schema if found is not None else None


def _referenced(definition: CompiledDefinition, schemas: SchemaLookup
                ) -> Callable[[Mapping[str, Any]], list[tuple[str, str]]] | None:
    """With governs.references: the objects a job of each shape may find
    (`referenced.referenced_variants`)."""
    if not definition.references:
        return None
    return lambda job: referenced_variants(definition, job, schemas)


def _weight(definition: CompiledDefinition, shape: Shape) -> int:
    """A guess at how long a shape takes to explore, to start the long ones first: the
    replicas it moves (a pool's completions), each child several times a pod (its
    machine's outcomes, and a heavier decision)."""
    replicas = sum(shape.pool[0] if shape.pool else count for _, count in shape.counts)
    return replicas ** 2 * (8 if definition.child is not None else 1)


def _by_kind(definitions: Iterable[CompiledDefinition]) -> Machines:
    """The machines by the (apiVersion, kind) each governs (the first of a kind wins)."""
    found: dict[tuple[str, str], CompiledDefinition] = {}
    for definition in definitions:
        found.setdefault((definition.governs.api_version, definition.governs.kind), definition)
    return found


def _unexplorable(definition: CompiledDefinition, machines: Machines
                  ) -> tuple[tuple[str, ...], str] | None:
    """Why check cannot explore the machine, and where to say it; None when it can."""
    child = definition.child
    if child is not None and (child.api_version, child.kind) not in machines:
        return (("spec", "child"), f"its replicas are {child.kind} objects (spec.child) and "
                f"no machine checked with it, nor a shipped one, governs {child.kind} "
                f"({child.api_version}), so nothing says how they end: check it with that "
                "kind's machine")
    return None


def child_shapes(definition: CompiledDefinition, machines: Machines, bounds: Bounds,
                 schemas: SchemaLookup) -> list[tuple[str, str]]:
    """With spec.child: the children each shape's replica specs make, as (words, spec JSON).

    One: the first job shape of the child's machine, a pool where its kind has pools (it
    states its size: a parent may default what needs one, as JobSet makes its Jobs
    Indexed), else one replica of its first type; restartPolicy Never, with the bounds'
    backoff limit and deadline, as that machine's check builds it. The parent reads the
    child's end and readiness only, and what decides those, the child's pods, is the
    child machine's own check; its other shapes would give the parent the same ends
    (Complete, Failed by each reason) at many times the situations."""
    child = definition.child
    if child is None:
        return []
    if "spec" in child.fields:
        # The machine makes the child's whole spec (TrainJob's JobSet, from its runtime).
        return [(f"{child.kind} as the machine makes it", "{}")]
    machine = machines[(child.api_version, child.kind)]
    found = list(shapes(machine, bounds, _schema(machine, schemas),
                        child_shapes(machine, machines, bounds, schemas)))
    first = next((s for s in found if s.pool is not None), found[0] if found else None)
    if first is None:
        return []
    spec = build_job(machine, first, bounds).get("spec") or {}
    return [(f"{child.kind} {first}", json.dumps(spec, sort_keys=True))]


def _explore(definition: CompiledDefinition, shape: Shape, bounds: Bounds,
             machines: Machines, schemas: SchemaLookup) -> ShapeResult:
    # The engine evaluates the same expressions over the same values in most of the
    # thousands of passes of a shape: remembered, they cost a lookup (values, not verdicts:
    # every pass still decides with the engine's code).
    values, steps, summaries = _MEMORY.setdefault((definition.path, definition.name),
                                                  (RememberedValues(), RememberedSteps(), {}))
    with (remembering_values(values), remembering_steps(steps),
          remembering_summaries(summaries)):
        if definition.child is not None:
            return explore(definition, shape, bounds, (),
                           replica_moves=_child_moves(definition, machines, bounds, schemas))
        codes = exit_code_classes(definition, shape, bounds, candidate_codes(definition))
        return explore(definition, shape, bounds, codes)


def _child_moves(definition: CompiledDefinition, machines: Machines,
                 bounds: Bounds, schemas: SchemaLookup) -> ChildMoves:
    """The child moves of a machine, kept per process: what a child's machine makes of a
    child is explored once per child spec, whichever shape meets it first."""
    key = (definition.path, definition.name, bounds)
    if key not in _CHILDREN:
        _CHILDREN[key] = ChildMoves(definition, machines, bounds, schemas)
    return _CHILDREN[key]


@contextmanager
def _collecting_seldom() -> Iterator[None]:
    """Collect garbage less often within the block (`GC_THRESHOLDS`, as the long-running
    processes do), as before after. Every situation found is kept to the end (thousands of
    worlds, none of them garbage), so CPython's defaults (700, 10, 10) rescan them over and
    over: a tenth of machines/job.yaml's CPU went to it. Around all the shapes, not each:
    put back after each shape, the defaults collected at once what the shape had counted
    (up to 50,000 allocations, with the memories the process keeps), 2-40 ms a shape."""
    before = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def _explore_loaded(task: tuple[tuple[str, ...], str, Shape, Bounds]) -> ShapeResult:
    """In a worker process: the same, with the machines loaded there (once per process)."""
    paths, name, shape, bounds = task
    tune_collector()  # for the worker's whole life: it only explores (`_collecting_seldom`)
    definitions = _definitions(paths)
    schemas = _SCHEMAS.get(paths) or kind_schema_lookup([Path(p) for p in paths])
    return _explore(definitions[name], shape, bounds, _by_kind(definitions.values()), schemas)


_MEMORY: dict[tuple[str, str], tuple[RememberedValues, RememberedSteps, Summaries]] = {}
"""What a process remembers of each machine it explores (by its file and name), kept from
one shape to the next: values, steps and replica summaries are remembered by content,
whichever shape saw them first, and a machine's shapes share most of them (its job's
metadata, its states)."""

_CHILDREN: dict[tuple[str, str, Bounds], ChildMoves] = {}
"""What a process found of each machine's children (`ChildMoves`), kept across shapes."""

_LOADED: dict[tuple[str, ...], dict[str, CompiledDefinition]] = {}
"""The machines a worker explores, by the paths they were loaded from."""

_SCHEMAS: dict[tuple[str, ...], SchemaLookup] = {}
"""Where the kinds' schemas were found for those paths (forked workers inherit it)."""


def _definitions(paths: tuple[str, ...]) -> dict[str, CompiledDefinition]:
    if paths not in _LOADED:
        loaded = [definition for _, definition in load_with_positions(paths)[0]]
        _LOADED[paths] = {d.name: d for d in [*child_machines(loaded), *loaded]}
    return _LOADED[paths]


def child_machines(definitions: list[CompiledDefinition]) -> list[CompiledDefinition]:
    """The shipped machines of the children's kinds that none of `definitions` governs
    (and of their children's, in turn), as a base is found among them: `check
    machines/jobset.yaml` explores JobSet with the shipped batch-job machine moving its
    Jobs. [] when every child kind's machine is here, or none is shipped."""
    here = _by_kind(definitions)
    wanted = {(d.child.api_version, d.child.kind) for d in definitions
              if d.child is not None} - here.keys()
    folder = shipped_dir_if_present("machines")
    if not wanted or folder is None:
        return []
    shipped = _by_kind(d for _, d in load_with_positions([str(folder)])[0])
    found: list[CompiledDefinition] = []
    while wanted:
        more = [shipped[kind] for kind in sorted(wanted) if kind in shipped]
        found += more
        known = here.keys() | {(d.governs.api_version, d.governs.kind) for d in found}
        wanted = {(d.child.api_version, d.child.kind) for d in more
                  if d.child is not None} - known
    return found


def candidate_codes(definition: CompiledDefinition) -> tuple[int, ...]:
    """Exit codes the machine's guards may tell apart (`shapes.exit_codes`)."""
    guards = [t.guard.source for m in (definition.job, definition.replica)
              for t in m.transitions if t.guard is not None]
    return exit_codes(definition, guards)


def _machine_report(loaded: LoadedDefinition, definition: CompiledDefinition,
                    results: list[ShapeResult]) -> MachineReport:
    """The shortest trace per broken rule and place, and what was never reached."""
    report = MachineReport(loaded, definition, results)
    shortest: dict[tuple[str, tuple[object, ...]], Violation] = {}
    for result in results:
        report.codes = tuple(sorted(set(report.codes) | set(result.codes)))
        for gist, count in result.failed_expressions.items():
            report.failed_expressions[gist] = report.failed_expressions.get(gist, 0) + count
        for violation in result.violations:
            key = (violation.rule, violation.where)
            known = shortest.get(key)
            if known is None or len(violation.trace) < len(known.trace):
                shortest[key] = violation
    report.violations = sorted(shortest.values(),
                               key=lambda v: (len(v.trace), v.rule, str(v.where)))
    report.unused = _unused(report)
    return report


def _unused(report: MachineReport) -> list[Unused]:
    definition, positions = report.definition, report.loaded.positions
    reached_job = set().union(*(r.job_states for r in report.shapes))
    reached_replica = set().union(*(r.replica_states for r in report.shapes))
    conditions = set().union(*(r.conditions for r in report.shapes))
    spec = report.loaded.definition.spec
    # States only a job's failure rules reach, which the check does not explore.
    marked = {(level, name) for level, states in (("job", spec.job.states),
                                                  ("replica", spec.replica.states))
              for name, state in states.items() if state.reached_only_by is not None}
    found: list[Unused] = []
    for level, machine, reached in (("job", definition.job, reached_job),
                                    ("replica", definition.replica, reached_replica)):
        for name in machine.states:
            if name not in reached and (level, name) not in marked:
                found.append(Unused(f"{level} state {name} is never entered",
                                    positions.key(("spec", level, "states", name))))
    # A condition another state's condition takes over (moveFrom) is True only within the
    # pass that enters both, which no settled situation shows: by design, not unused.
    taken_over = {state.condition.move_from for state in definition.job.states.values()
                  if state.condition is not None and state.condition.move_from}
    for name, state in definition.job.states.items():
        if ("job", name) in marked or (name in reached_job and state.condition is not None
                                       and state.condition.type in taken_over):
            continue
        if state.condition is not None and state.condition.type not in conditions:
            found.append(Unused(f"condition {state.condition.type} (of job state {name}) is "
                                "never set True",
                                positions.key(("spec", "job", "states", name))))
    return found
