"""Breadth-first over every settled situation of one job shape, checking the rules as it goes.

Each step is an outside move followed by engine passes until nothing changes,
all through `World`, so what is checked is the engine's real decisions. The
search is breadth-first, so the first trace found to a broken rule is a
shortest one. Rules about single passes are checked on every pass; whether a
terminal state stays reachable is judged on the whole graph at the end.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from engine.controller.reconcile.children import ReplicaId, attempt_of
from engine.controller.reconcile.decide import Planned
from engine.controller.reconcile.record import MachineRecord, read_record
from engine.controller.reporting.evaluation_errors import without_replica
from engine.definition import CompiledDefinition
from engine.definition.positions import Path
from engine.modelcheck.moves import Move, ReplicaMoves, moves, situation
from engine.modelcheck.referenced import objects_of
from engine.modelcheck.shapes import START, Bounds, Shape, build_job
from engine.simulation import kubelet
from engine.simulation.world import Pass, ReferenceKey, World

TRANSITIONS_KEPT = 3
"""Status history kept, as the engine's default: the path is counted in full anyway."""
MAX_PASSES = 50
"""Engine passes at one instant before the engine is judged never to settle."""


@dataclass(frozen=True)
class Step:
    """One step of a trace: the outside move, then what the engine did about it."""

    move: str
    engine: tuple[str, ...]


@dataclass(frozen=True)
class Violation:
    """A rule broken, where in the machine, and a shortest way there."""

    rule: str
    message: str
    where: Path
    """The data path of the offending state or transition in the definition."""
    shape: Shape
    trace: tuple[Step, ...]
    job: Mapping[str, Any] = field(compare=False, repr=False)
    """The job as the trace leaves it (its status counts the path it took)."""


_Before = tuple[str | None, dict[ReplicaId, tuple[int, bool]]]
"""The job's state, and each pod's restart attempt and whether it was being deleted,
before a pass (the pass changes the pods themselves)."""


@dataclass
class _Node:
    world: World
    parent: int | None
    step: Step | None
    next_look: datetime | None
    faults: int
    """Disruptions on the way here (a budget: `Bounds.faults`)."""
    edges: list[tuple[int, bool]] = field(default_factory=list)


@dataclass
class ShapeResult:
    """What exploring one shape found."""

    shape: Shape
    situations: int
    violations: list[Violation]
    complete: bool
    """False when the shape had more situations than `Bounds.max_states`."""
    job_states: set[str] = field(default_factory=set)
    replica_states: set[str] = field(default_factory=set)
    conditions: set[str] = field(default_factory=set)
    codes: tuple[int, ...] = ()
    """The exit codes explored, one per class the machine tells apart."""
    failed_expressions: dict[str, int] = field(default_factory=dict)
    """Each expression that could not be evaluated (its error, replica names left out) and
    in how many passes: the cause of what breaks after, said once."""


def evaluation_gists(result: Pass) -> list[str]:
    """The pass's evaluation errors without what varies between situations (the replica a
    guard was for): failed guards and messages, and pod values that could not be built."""
    return [*map(without_replica, result.decision.errors),
            *(f"pod value: {cause}" for cause in result.template_errors)]


class _Explorer:
    def __init__(self, definition: CompiledDefinition, shape: Shape, bounds: Bounds,
                 codes: tuple[int, ...], *, replica_moves: ReplicaMoves | None = None,
                 start: World | None = None, edits: bool = True) -> None:
        """`replica_moves`: what the replicas' objects can do, when they are not pods (a
        spec.child kind's); `start`: the world to explore from (else a job of `shape`);
        `edits`: whether the job's spec may be suspended or made invalid (a child's is
        its parent's to edit)."""
        self.definition = definition
        self.shape = shape
        self.bounds = bounds
        self.codes = codes
        self.replica_moves = replica_moves
        self.start = start
        self.edits = edits
        self.later: Mapping[ReferenceKey, Mapping[str, Any]] = {}
        """Objects the job names that are created after it (`Shape.referenced`)."""
        self.ended: list[World] | None = None
        """When a list: every world that reached a terminal state, as it was then (before
        the known situation it joins took its place), which is how a child's machine ends
        it (`explore_world`)."""
        self.nodes: list[_Node] = []
        self.index: dict[Hashable, int] = {}
        self.violations: list[Violation] = []
        self.broken: set[tuple[str, Path]] = set()
        self.rescued: set[str | None] = set()
        self.result = ShapeResult(shape, 0, self.violations, True, codes=codes)

    def run(self) -> ShapeResult:
        present, self.later = objects_of(self.shape.referenced)
        world = self.start or World(self.definition, build_job(self.definition, self.shape,
                                                               self.bounds),
                                    START, transitions_kept=TRANSITIONS_KEPT,
                                    referenced=present)
        queue: deque[int] = deque()
        first = self._settle(world, None, "the job is created", 0)
        if first is not None:
            queue.append(first)
        while queue:
            current = queue.popleft()
            node = self.nodes[current]
            # A deadline or an invalid spec ends a job the same way from every situation of
            # one job state: tried from the first such situation only.
            state = node.world.state()
            rescues = state not in self.rescued
            self.rescued.add(state)
            for move in moves(node.world, self.codes, node.next_look, rescues=rescues,
                              replica_moves=self.replica_moves, edits=self.edits,
                              later=self.later):
                if move.fault and node.faults >= self.bounds.faults:
                    continue
                known = len(self.nodes)
                child = self._follow(current, move)
                if child is None:
                    continue
                node.edges.append((child, move.rescue))
                # Past the end only "does it stay ended" matters: one move deep is enough.
                if child >= known and not (node.world.ended() and self.nodes[child].world.ended()):
                    queue.append(child)
            if len(self.nodes) > self.bounds.max_states:
                self.result.complete = False
                break
        if self.result.complete:
            self._dead_ends()
        self.result.situations = len(self.nodes)
        return self.result

    def _follow(self, parent: int, move: Move) -> int | None:
        world = self.nodes[parent].world.copy()
        move.apply(world)
        return self._settle(world, parent, move.label,
                            self.nodes[parent].faults + (1 if move.fault else 0))

    def _settle(self, world: World, parent: int | None, label: str, faults: int) -> int | None:
        """Reconcile until nothing changes; the node of the situation reached (known or new),
        None when a rule broke on the way (the trace ends there)."""
        done: list[str] = []
        trace_parent = parent
        for _ in range(MAX_PASSES):
            before = (world.state(), {r: (attempt_of(p), bool(p["metadata"].get(
                "deletionTimestamp"))) for r, p in world.pods.items()})
            status = world.job.get("status")
            result = world.reconcile()
            done += _describe(result)
            self._note(world, result)
            step = Step(label, tuple(done))
            if self._check_pass(world, result, before, trace_parent, step):
                return None
            if self.ended is not None and world.ended():
                self.ended.append(world.copy())
            if not result.changed or _events_only(result, status):
                return self._place(world, trace_parent, step, result.next_look, faults)
            # A changed world that is a known situation settles as that one did: the pass
            # that would confirm it changes nothing (known situations share their future).
            known = self.index.get((situation(world), faults))
            if known is not None:
                return known
        self._break("never-settles", "the engine never settles: it keeps changing the job at "
                    "one instant", ("spec", "job", "states", world.state() or ""),
                    parent=trace_parent, step=Step(label, tuple(done[-10:])), world=world)
        return None

    def _place(self, world: World, parent: int | None, step: Step,
               next_look: datetime | None, faults: int) -> int:
        key = (situation(world), faults)
        known = self.index.get(key)
        if known is not None:
            return known
        self.index[key] = len(self.nodes)
        self.nodes.append(_Node(world, parent, step, next_look, faults))
        node = len(self.nodes) - 1
        self._check_settled(world, node)
        return node

    def _note(self, world: World, result: Pass) -> None:
        failed = self.result.failed_expressions
        for gist in evaluation_gists(result):
            failed[gist] = failed.get(gist, 0) + 1
        for fired in result.decision.fired:
            states = self.result.replica_states if fired.replica else self.result.job_states
            states.add(fired.transition.target)
        for condition in (world.job.get("status") or {}).get("conditions") or []:
            if condition.get("status") == "True":
                self.result.conditions.add(str(condition["type"]))

    def _check_pass(self, world: World, result: Pass, before: _Before, parent: int | None,
                    step: Step) -> bool:
        """The rules about one pass; True when one broke."""
        state_before, pods_before = before
        decision = result.decision
        job_states = self.definition.job.states
        if state_before is not None and job_states[state_before].terminal:
            left = next((f for f in decision.fired if f.replica is None), None)
            if left is not None:
                return self._break(
                    "terminal-left", f"the job left terminal state {state_before} for "
                    f"{left.transition.target}",
                    ("spec", "job", "transitions", left.transition.index or 0), parent=parent,
                    step=step, world=world)
        twice = _wanted_twice(decision.actions, pods_before, decision.record.restart_attempt)
        if twice is not None:
            return self._break(
                "double-pod", f"a new pod is wanted for {twice} while its pod is still there "
                "and not being deleted (two pods for one index)",
                self._replica_where(result, twice), parent=parent, step=step, world=world)
        crowded = _over_parallelism(world, self.shape)
        if crowded is not None:
            return self._break(
                "over-parallelism", crowded, ("spec", "replica", "states",
                                              self.definition.replica.initial),
                parent=parent, step=step, world=world)
        state = decision.record.state or ""
        if result.created and decision.holds_replicas:
            return self._break(
                "pod-after-end", f"pods were created ({_names(result.created)}) while the job "
                f"is in {state}, which holds its replicas (ending or ended)",
                ("spec", "job", "states", state), parent=parent, step=step, world=world)
        if self.shape.per_index:
            spent = [r for r in result.created
                     if _failures(decision.record, r) > self.bounds.backoff_limit]
            if spent:
                return self._break(
                    "backoff-limit", f"pods were created ({_names(spent)}) for indexes that "
                    f"failed more than backoffLimitPerIndex {self.bounds.backoff_limit} times",
                    ("spec", "replica", "states", self.definition.replica.initial),
                    parent=parent, step=step, world=world)
        elif result.created and decision.record.restarts > self.bounds.backoff_limit:
            return self._break(
                "backoff-limit", f"pods were created ({_names(result.created)}) after "
                f"{decision.record.restarts} restarts, more than backoffLimit "
                f"{self.bounds.backoff_limit}", ("spec", "job", "states", state),
                parent=parent, step=step, world=world)
        return False

    def _check_settled(self, world: World, node: int) -> None:
        record_state = world.state() or ""
        restarts = world.record.restarts
        compiled = self.definition.job.states.get(record_state)
        ending = compiled is not None and (compiled.terminal or compiled.hold_replicas)
        # With per-index back-off there is no job-wide limit: indexes fail on their own.
        if restarts > self.bounds.backoff_limit and not ending and not self.shape.per_index:
            self._break_at_node(
                "backoff-limit", f"the job has {restarts} restarts, more than backoffLimit "
                f"{self.bounds.backoff_limit}, and stays in {record_state}",
                ("spec", "job", "states", record_state), node)

    def _replica_where(self, result: Pass, replica: ReplicaId) -> Path:
        fired = [f for f in result.decision.fired if f.replica == replica]
        if fired and fired[-1].transition.index is not None:
            return ("spec", "replica", "transitions", fired[-1].transition.index)
        state = result.decision.record.replica_states.get(replica, "")
        return ("spec", "replica", "states", state)

    def _break(self, rule: str, message: str, where: Path, *, parent: int | None, step: Step,
               world: World) -> bool:
        if (rule, where) not in self.broken:
            self.broken.add((rule, where))
            trace = (*self._trace(parent), step)
            self.violations.append(Violation(rule, message, where, self.shape, trace, world.job))
        return True

    def _break_at_node(self, rule: str, message: str, where: Path, node: int) -> None:
        if (rule, where) not in self.broken:
            self.broken.add((rule, where))
            self.violations.append(Violation(rule, message, where, self.shape,
                                             self._trace(node), self.nodes[node].world.job))

    def _trace(self, node: int | None) -> tuple[Step, ...]:
        steps: list[Step] = []
        while node is not None:
            current = self.nodes[node]
            if current.step is not None:
                steps.append(current.step)
            node = current.parent
        return tuple(reversed(steps))

    def _dead_ends(self) -> None:
        """Situations from which no terminal state can be reached without a rescue."""
        reverse: list[list[int]] = [[] for _ in self.nodes]
        for number, node in enumerate(self.nodes):
            for child, rescue in node.edges:
                if not rescue:
                    reverse[child].append(number)
        # A steady job state (a ReplicaSet keeping its pods) is an end the job may rest in.
        steady = {name for name, state in self.definition.definition.spec.job.states.items()
                  if state.steady}
        alive = {n for n, node in enumerate(self.nodes)
                 if node.world.ended() or node.world.state() in steady}
        queue = deque(alive)
        while queue:
            for parent in reverse[queue.popleft()]:
                if parent not in alive:
                    alive.add(parent)
                    queue.append(parent)
        stuck = next((n for n in range(len(self.nodes)) if n not in alive), None)
        if stuck is None:
            return
        world = self.nodes[stuck].world
        state = world.state() or ""
        replicas = ", ".join(f"{r} {s}" for r, s in sorted(
            (str(r), s) for r, s in _replica_states(world).items())) or "no replicas"
        self._break_at_node(
            "dead-end", f"from job state {state} ({replicas}) no terminal state "
            "can be reached, whatever the pods do (only a deadline or an invalid spec would "
            "end the job)", ("spec", "job", "states", state), stuck)


def _over_parallelism(world: World, shape: Shape) -> str | None:
    """What is wrong when a pool has more pods that have not ended (nor are being deleted)
    than its parallelism; None when every pool keeps to it."""
    if shape.pool is None:
        return None
    parallelism = shape.pool[1]
    for replica_type, _ in shape.counts:
        live = sorted(str(r) for r, pod in world.pods.items()
                      if r.type == replica_type and kubelet.is_live(pod))
        if len(live) > parallelism:
            return (f"pool {replica_type} has {len(live)} pods that have not ended "
                    f"({', '.join(live)}), more than its parallelism {parallelism}")
    return None


def _replica_states(world: World) -> dict[ReplicaId, str]:
    return dict(read_record(world.job.get("status") or {}).replica_states)


def _wanted_twice(actions: Iterable[Planned], pods: dict[ReplicaId, tuple[int, bool]],
                  attempt: int) -> ReplicaId | None:
    """A replica for which a new pod is planned while its live pod stays (not deleted)."""
    going: set[ReplicaId] = set()
    for planned in actions:
        replica, name = planned.replica, planned.action.name
        if name == "cleanupPods":
            going |= set(pods)
        if replica is None:
            continue
        if name == "deletePod":
            going.add(replica)
        pod = pods.get(replica)
        if (name == "createPod" and not planned.replayed and pod is not None
                and replica not in going and pod == (attempt, False)):
            return replica
    return None


def _failures(record: MachineRecord, replica: ReplicaId) -> int:
    """The failures counted for one index (its restarts)."""
    counted = record.replica_restarts.get(replica)
    return 0 if counted is None else counted.count


def _names(replicas: Iterable[ReplicaId]) -> str:
    return ", ".join(str(r) for r in replicas)


def _events_only(result: Pass, status: Any) -> bool:
    """Whether the pass, without an error, only posted Events (a TrainJob's Warning at each
    look while its runtime is missing): no state, pod or status changed, so no watch wakes
    the engine again, and it has settled. A pass that failed to evaluate something posts
    its Warning each time and is looked at again (the engine's back-off): not settled."""
    return (not result.wakes_a_watch(status) and not result.decision.errors
            and not result.template_errors)


def _describe(result: Pass) -> list[str]:
    lines = [
        f"{f.replica or 'job'}: {f.transition.source or '(new)'} -> {f.transition.target}"
        for f in result.decision.fired
    ]
    lines += [f"creates pod {r}" for r in result.created]
    lines += [f"deletes pod {r}" for r in result.deleted]
    return lines


def explore(definition: CompiledDefinition, shape: Shape, bounds: Bounds,
            codes: tuple[int, ...], *, replica_moves: ReplicaMoves | None = None) -> ShapeResult:
    """Every settled situation of a job of this shape, and the rules it breaks; with
    `replica_moves`, the replicas' child objects move so (not pods)."""
    return _Explorer(definition, shape, bounds, codes, replica_moves=replica_moves).run()


def explore_world(definition: CompiledDefinition, world: World, bounds: Bounds,
                  codes: tuple[int, ...], *, replica_moves: ReplicaMoves | None = None
                  ) -> tuple[list[World], list[World]]:
    """Every settled situation of `world` (its spec left as it is) in the order found,
    and every world in which it reached a terminal state: what a child's own machine
    can make of it. No rule is judged (the child's machine is checked on its own)."""
    spec = world.spec
    shape = Shape(tuple((t.name, t.replicas) for t in spec.replica_types), "")
    explorer = _Explorer(definition, shape, bounds, codes, replica_moves=replica_moves,
                         start=world, edits=False)
    explorer.ended = []
    explorer.run()
    return [node.world for node in explorer.nodes], explorer.ended
