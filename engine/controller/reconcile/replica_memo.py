"""Replica steps remembered from one pass over a job to the next (issue 33, part 3).

A replica's step is a pure function of its state, the observations that hold for it and
the values of the variables its machine's expressions read (`engine.definition.step`).
A pass over a wide job finds most replicas as the last pass left them: same state, same
pod, same job-level values. For those the step the last pass took is taken again as it
was, without building the replica's variables or evaluating a guard, so a pass costs per
replica a comparison of its inputs, not a step.

The inputs compared are everything the step reads, nothing less: the replica's state,
its pod's facts and the ends not seen yet, its type's size and restart policy, its
restarts as recorded (`replica_inputs`), and of the job-level variables the values at
the paths the replica machine's expressions select (`MachineReads`): a PyTorchJob's
replicas read `job.metadata.name`, `job.metadata.namespace`, `runPolicy.suspend` and
`runPolicy.pendingTimeoutSeconds`, so a status write or a replica moving elsewhere in the
job changes none of them. A machine whose replicas read the replica counts (`replicas`)
steps them all again whenever a count changes. Timers are the decision's own (the clock
is compared every pass); what a step remembers of a state's timeout is its length.

A pass does not even visit a replica whose last visit did nothing (no transition, action,
replay, error or timer) while what that visit read is unchanged: its state, its pod's
observation (the very object: the reconcile keeps one per pod, below), its restarts and
ends seen as recorded, and the job's values and replica types (`quiet`). So a pass over a
wide job steps the replicas that changed, and only looks up the others.

The reconcile keeps each pod's observation here too, while the pod (the cache's object, or
an equal one), the job's failure rules, the main container, the readiness of the pod's
node, its availability and labels are unchanged: then a step finds the very facts it was
taken on, and a pass observes only the pods that changed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.claims import ClaimedBefore
from engine.controller.reconcile.jobspec import ReplicaTypeSpec
from engine.controller.reconcile.observe import PodFacts
from engine.controller.reconcile.record import InPlaceEnds, RestartRecord
from engine.definition import CompiledMachine, StepResult
from engine.definition.cel import CompiledExpression, selected_paths
from engine.definition.compiled import CompiledAction
from engine.definition.templates import TextTemplate

_ABSENT = object()
"""A path the value does not have (a field left out): no value it could have."""


@dataclass(frozen=True)
class MachineReads:
    """What a machine's expressions read: per variable, the field paths selected of it
    (an empty path: the whole value)."""

    paths: Mapping[str, frozenset[tuple[str, ...]]]

    def values(self, variables: Mapping[str, Any]) -> tuple[Any, ...]:
        """The values at the paths read of each of `variables` the machine reads (a
        variable the machine reads that is not among them is left out)."""
        found: list[Any] = []
        for name in sorted(self.paths):
            value = variables.get(name, _ABSENT)
            if value is _ABSENT:
                continue
            paths = self.paths[name]
            found.append((name, value) if () in paths else
                         (name, tuple(_at(value, path) for path in sorted(paths))))
        return tuple(found)


def _at(value: Any, path: tuple[str, ...]) -> Any:
    """The value at `path` of `value`: what any selection beginning with that path reads
    lies within it. Where a step of the path is no map, the value there counts whole."""
    for key in path:
        if not isinstance(value, Mapping):
            return value
        value = value.get(key, _ABSENT)
        if value is _ABSENT:
            return _ABSENT
    return value


def _action_expressions(actions: tuple[CompiledAction, ...]) -> Iterator[CompiledExpression]:
    for action in actions:
        yield from action.expressions.values()
        for template in action.templates.values():
            yield from _template_expressions(template)


def _template_expressions(template: TextTemplate | None) -> Iterator[CompiledExpression]:
    if template is not None:
        yield from (part.expression for part in template.parts if part.expression is not None)


def machine_expressions(machine: CompiledMachine) -> Iterator[CompiledExpression]:
    """Every expression a step of `machine` can evaluate: guards, messages, action
    arguments, and each state's entry actions, condition message, delay and timeout."""
    for transition in machine.transitions:
        if transition.guard is not None:
            yield transition.guard
        yield from _template_expressions(transition.message)
        yield from _action_expressions(transition.actions)
    for state in machine.states.values():
        yield from _action_expressions(state.on_enter)
        yield from _template_expressions(state.condition_message)
        for expression in (state.requeue_expression, state.timeout_expression):
            if expression is not None:
                yield expression


def machine_reads(machine: CompiledMachine) -> MachineReads:
    """What `machine`'s expressions read, worked out once per machine: each job's memo asked
    for it when it began, and walking the expressions of Kubeflow's replica machine took
    2-3% of the engine's CPU in a run of one-replica jobs."""
    known = _READS.get(id(machine))
    if known is not None and known[0] is machine:
        return known[1]
    paths: dict[str, set[tuple[str, ...]]] = {}
    for expression in machine_expressions(machine):
        for name in expression.names:
            paths.setdefault(name, set()).update(selected_paths(expression.source, name))
    reads = MachineReads({name: frozenset(found) for name, found in paths.items()})
    if len(_READS) >= _READS_KEPT:  # the machines of revisions gone: let them go
        _READS.clear()
    _READS[id(machine)] = (machine, reads)
    return reads


_READS: dict[int, tuple[CompiledMachine, MachineReads]] = {}
"""`machine_reads` per machine, by id, with the machine (kept alive while it is here, so
its id is not another's)."""
_READS_KEPT = 256


QuietKey = tuple[str, PodFacts, RestartRecord | None, InPlaceEnds | None]
"""What a quiet replica's last visit read besides the job's values: its state, its pod's
observation, its restarts and its container's ends seen, as recorded."""


@dataclass
class RememberedStep:
    """One replica's last inputs and what its steps gave on them."""

    inputs: tuple[Any, ...]
    timeout: tuple[float | None, str | None] | None = None
    """The length of its state's timeout and the error working it out, once asked."""
    results: dict[bool, StepResult] = field(default_factory=dict)
    """The step's result with the state's timeout run out (`timedOut` holds) or not: the
    other observations are of the facts among the inputs."""


class ReplicaMemo:
    """One job's remembered replica steps, for the machine they were taken with, its pods'
    observations (a step compares the facts it was taken on: the same object at once), and
    its children as its last claims found them.

    Used by one reconcile of the job at a time (the work queue never runs a key twice at
    once); a pass over another machine (a new revision) starts afresh."""

    def __init__(self) -> None:
        self._machine: CompiledMachine | None = None
        self._reads = MachineReads({})
        self._steps: dict[ReplicaId, RememberedStep] = {}
        self._observations: dict[ReplicaId, tuple[tuple[Any, ...], PodFacts]] = {}
        self._job_values: tuple[Any, ...] | None = None
        self._pod_context: Any = None
        self._quiet_context: tuple[Any, ...] | None = None
        self.quiet: dict[ReplicaId, QuietKey] = {}
        """Replicas whose last visit did nothing, with what it read (`QuietKey`): a visit
        on the same, of the same context, would do nothing again."""
        self.steps_taken = 0
        """Replica steps taken since the memo was made (`recall` found no result)."""
        self.steps_recalled = 0
        """Replica steps recalled instead of taken."""
        self.visits_spared = 0
        """Replica visits left out: the replica was quiet."""
        self.claimed: dict[str, ClaimedBefore] = {}
        """The job's children of each resource (by its plural) as its last claim found
        them (`claim`'s `before`)."""

    def begin(self, machine: CompiledMachine, replica_types: Sequence[ReplicaTypeSpec]) -> None:
        """Start a pass over a job of `machine` with these replica types: the steps of
        another machine, and of replicas the job no longer has, are forgotten."""
        if machine is not self._machine:
            self._machine = machine
            self._reads = machine_reads(machine)
            self._steps = {}
            self._job_values = None
            self.quiet = {}
        wanted = sum(t.replicas for t in replica_types)
        if max(len(self._steps), len(self._observations), len(self.quiet)) > wanted:
            desired = {t.name: t.replicas for t in replica_types}
            self._steps = {r: s for r, s in self._steps.items()
                           if r.index < desired.get(r.type, 0)}
            self._observations = {r: o for r, o in self._observations.items()
                                  if r.index < desired.get(r.type, 0)}
            self.quiet = {r: q for r, q in self.quiet.items() if r.index < desired.get(r.type, 0)}

    def quiet_in(self, job_values: tuple[Any, ...],
                 replica_types: Sequence[ReplicaTypeSpec]) -> dict[ReplicaId, QuietKey]:
        """The quiet replicas, for a round with these job values and replica types: none
        when either changed since the quiet were noted (every replica reads them)."""
        context = (job_values, tuple((t.name, t.replicas, t.restart_policy)
                                     for t in replica_types))
        if context != self._quiet_context:
            self._quiet_context = context
            self.quiet = {}
        return self.quiet

    def job_values(self, common: Mapping[str, Any]) -> tuple[Any, ...]:
        """What the machine's replicas read of the job-level variables `common`; the same
        object as the last time when equal, so replicas compare it at once."""
        values = self._reads.values(common)
        if values != self._job_values:
            self._job_values = values
        assert self._job_values is not None
        return self._job_values

    def recall(self, replica: ReplicaId, inputs: tuple[Any, ...]) -> RememberedStep:
        """The replica's remembered steps on `inputs`; a fresh, empty entry when its inputs
        changed (or it was never stepped)."""
        known = self._steps.get(replica)
        if known is None or known.inputs != inputs:
            known = RememberedStep(inputs)
            self._steps[replica] = known
        return known

    def observation(self, replica: ReplicaId, inputs: tuple[Any, ...]) -> PodFacts | None:
        """The replica's pod's observation made of equal `inputs` (the pod first, then what
        else it is made of), or None."""
        known = self._observations.get(replica)
        return known[1] if known is not None and known[0] == inputs else None

    def pods_observed_in(self, context: Any) -> bool:
        """Whether the observations kept were made in this `context` (what every pod's is
        made of besides the pod and its node's readiness), None: one they cannot be kept
        across; the context is noted for the next pass."""
        same = context is not None and context == self._pod_context
        self._pod_context = context
        return same

    def observation_of(self, replica: ReplicaId, pod: Any, node_ready: bool) -> PodFacts | None:
        """The replica's pod's observation, kept while the pod is the very object it was made
        of and its node's readiness unchanged (in the same context: `pods_observed_in`)."""
        known = self._observations.get(replica)
        if known is None or known[0][0] is not pod or known[0][3] != node_ready:
            return None
        return known[1]

    def observed(self, replica: ReplicaId, inputs: tuple[Any, ...], facts: PodFacts) -> None:
        """Remember the replica's pod's observation, made of `inputs`."""
        self._observations[replica] = (inputs, facts)

