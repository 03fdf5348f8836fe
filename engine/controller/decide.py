"""The pure heart of a reconcile: step the replica machines, then the job machine, to a fixed point.

Nothing here reads the clock or the network. Given the job, its record and the
observations, `decide` returns the new record, the transitions that fired, the
conditions to set and the actions to run, so the reconcile can write status
first and act after (the write-ahead rule of the architecture page).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from engine.controller.children import ReplicaId
from engine.controller.jobspec import JobSpecView
from engine.controller.observe import MISSING, PodFacts
from engine.controller.record import MachineRecord, RestartRecord
from engine.controller.variables import common_variables, replica_summary, replica_variables
from engine.definition import (
    CompiledDefinition,
    CompiledMachine,
    Facts,
    FiredTransition,
    PlannedAction,
    entry_actions,
    step,
)

REPLAYABLE_ACTIONS = frozenset(
    {"createPod", "createService", "deletePod", "deleteService", "cleanupPods"}
)
"""Actions whose effect is a desired state of the world, so doing them twice is harmless."""


@dataclass(frozen=True)
class ConditionUpdate:
    """A condition to set on the job, in the order the machines asked."""

    type: str
    status: str
    reason: str
    message: str


@dataclass(frozen=True)
class Fired:
    """A state change, at job level (replica None) or of one replica."""

    transition: FiredTransition
    replica: ReplicaId | None = None


@dataclass(frozen=True)
class Planned:
    """An action to run after the status write, and for which replica (None: the job)."""

    action: PlannedAction
    replica: ReplicaId | None = None
    replayed: bool = False
    """Planned again for a state the instance stays in (see `_replay_entry`), not new."""


@dataclass(frozen=True)
class Decision:
    """Everything one reconcile decided."""

    record: MachineRecord
    fired: tuple[Fired, ...] = ()
    conditions: tuple[ConditionUpdate, ...] = ()
    actions: tuple[Planned, ...] = ()
    errors: tuple[str, ...] = ()
    variables: Mapping[str, Any] = field(default_factory=dict)
    """The job-level CEL variables of the last round (for requeueAfter and templates)."""
    holds_replicas: bool = False
    """Whether the final job state holds its replicas (terminal, or `holdReplicas`)."""


@dataclass
class _Progress:
    record: MachineRecord
    now: str
    fired: list[Fired] = field(default_factory=list)
    conditions: list[ConditionUpdate] = field(default_factory=list)
    actions: list[Planned] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seen_actions: set[tuple[Any, ...]] = field(default_factory=set)

    def plan(
        self, action: PlannedAction, replica: ReplicaId | None, *, replayed: bool = False
    ) -> None:
        key = (replica, action.name, tuple(sorted((k, repr(v)) for k, v in action.args.items())))
        if key in self.seen_actions:
            return
        self.seen_actions.add(key)
        self.actions.append(Planned(action, replica, replayed))


def decide(
    definition: CompiledDefinition,
    job: Mapping[str, Any],
    spec: JobSpecView,
    record: MachineRecord,
    pods: Mapping[ReplicaId, PodFacts],
    *,
    job_observations: frozenset[str],
    now: str,
    history_limit: int = 100,
) -> Decision:
    """Step every machine of `job` until nothing fires; see the module docstring."""
    progress = _Progress(_without_stale_replicas(record, spec), now)
    state = progress.record.state
    variables: dict[str, Any] = {}
    for _ in range(len(definition.job.states) + 2):
        if state is None or not _holds(definition, state):
            _step_replicas(definition, job, spec, pods, progress)
        summary = replica_summary(spec, progress.record, pods, definition.replica)
        variables = common_variables(job, spec, progress.record, summary)
        result = step(definition.job, state, Facts(job_observations, variables))
        progress.errors += result.errors
        for transition in result.fired:
            _record_job_transition(definition, transition, progress, variables)
        for action in result.actions:
            _apply(action, None, progress)
        if not result.changed and state is not None:
            _replay_entry(definition.job, state, None, Facts(job_observations, variables), progress)
            break
        state = result.state
        progress.record = progress.record.with_changes(state=state)
    history = progress.record.history[-history_limit:]
    return Decision(
        progress.record.with_changes(history=history),
        tuple(progress.fired),
        tuple(progress.conditions),
        tuple(progress.actions),
        tuple(progress.errors),
        variables,
        state is not None and _holds(definition, state),
    )


def _replay_entry(
    machine: CompiledMachine,
    state: str,
    replica: ReplicaId | None,
    facts: Facts,
    progress: _Progress,
) -> None:
    """Plan again the idempotent onEnter actions of a state an instance stays in.

    Entering a state plans its actions once; if carrying one out failed (the API
    server was away), this makes the next pass do it: level-triggered, like the rest.
    """
    actions, errors = entry_actions(machine, state, facts)
    progress.errors += errors
    for action in actions:
        if action.name in REPLAYABLE_ACTIONS:
            progress.plan(action, replica, replayed=True)


def _holds(definition: CompiledDefinition, state: str) -> bool:
    compiled = definition.job.states[state]
    return compiled.hold_replicas or compiled.terminal is not None


def _without_stale_replicas(record: MachineRecord, spec: JobSpecView) -> MachineRecord:
    """Forget replicas the spec no longer has (a scaled-down type, a removed type).

    Their restarts stay counted for the job (backoffLimit), not for the index: a replica
    created there later starts afresh.
    """
    desired = {t.name: t.replicas for t in spec.replica_types}
    states = {r: s for r, s in record.replica_states.items() if r.index < desired.get(r.type, 0)}
    restarts = {
        r: entry for r, entry in record.replica_restarts.items()
        if r.index < desired.get(r.type, 0)
    }
    backoff = {
        r: entry for r, entry in record.replica_backoff.items()
        if r.index < desired.get(r.type, 0)
    }
    if (len(states), len(restarts), len(backoff)) == (
        len(record.replica_states), len(record.replica_restarts), len(record.replica_backoff)
    ):
        return record
    return record.with_changes(
        replica_states=states, replica_restarts=restarts, replica_backoff=backoff
    )


def _step_replicas(
    definition: CompiledDefinition,
    job: Mapping[str, Any],
    spec: JobSpecView,
    pods: Mapping[ReplicaId, PodFacts],
    progress: _Progress,
) -> None:
    summary = replica_summary(spec, progress.record, pods, definition.replica)
    common = common_variables(job, spec, progress.record, summary)
    for replica_type in spec.replica_types:
        for index in range(replica_type.replicas):
            replica = ReplicaId(replica_type.name, index)
            facts = pods.get(replica, MISSING)
            variables = replica_variables(
                common, replica, desired=replica_type.replicas,
                policy=replica_type.restart_policy, record=progress.record, facts=facts,
            )
            current = progress.record.replica_states.get(replica)
            replica_facts = Facts(frozenset({facts.observation}), variables)
            result = step(definition.replica, current, replica_facts)
            progress.errors += [f"{replica}: {error}" for error in result.errors]
            for transition in result.fired:
                if not transition.self_loop:
                    _count(progress, "replica", transition, replica)
            for action in result.actions:
                _apply(action, replica, progress)
            if result.state == current and current is not None:
                _replay_entry(definition.replica, current, replica, replica_facts, progress)
            if result.state != current:
                states = {**progress.record.replica_states, replica: result.state}
                progress.record = progress.record.with_changes(replica_states=states)
                _track_backoff(definition, replica, facts, result.state, progress)


def _track_backoff(
    definition: CompiledDefinition,
    replica: ReplicaId,
    facts: PodFacts,
    state: str,
    progress: _Progress,
) -> None:
    """Count failed attempts in a row per index, counted restarts or not; a success resets.

    The re-creation back-off is computed from this, so a failure that a rule ignores
    (no restart counted) still cannot recreate a pod in a tight loop.
    """
    backoff = dict(progress.record.replica_backoff)
    if facts.observation == "podSucceeded":
        if backoff.pop(replica, None) is None:
            return
    elif facts.observation in ("podFailed", "podLost") and not (
        definition.replica.states[state].terminal
    ):
        previous = backoff.get(replica)
        backoff[replica] = RestartRecord((previous.count if previous else 0) + 1, progress.now)
    else:
        return
    progress.record = progress.record.with_changes(replica_backoff=backoff)


def _record_job_transition(
    definition: CompiledDefinition,
    transition: FiredTransition,
    progress: _Progress,
    variables: Mapping[str, Any],
) -> None:
    if transition.self_loop:
        return
    entered = definition.job.states[transition.target]
    condition_message = transition.message
    if entered.condition_message is not None:
        condition_message, errors = entered.condition_message.render(variables)
        progress.errors += errors
    if transition.source is None:
        transition = replace(transition, message=condition_message)
    _count(progress, "job", transition, None)
    progress.record = progress.record.with_changes(state_since=progress.now)
    if transition.source is not None:
        left = definition.job.states[transition.source].condition
        if (
            left is not None
            and not left.sticky
            and left.type != _condition_type(definition, transition.target)
        ):
            progress.conditions.append(
                ConditionUpdate(left.type, "False", transition.reason, transition.message)
            )
    if entered.condition is not None:
        progress.conditions.append(ConditionUpdate(
            entered.condition.type,
            entered.condition.status,
            entered.condition.reason or transition.reason,
            condition_message,
        ))


def _condition_type(definition: CompiledDefinition, state: str) -> str | None:
    condition = definition.job.states[state].condition
    return condition.type if condition else None


def _count(
    progress: _Progress, level: str, transition: FiredTransition, replica: ReplicaId | None
) -> None:
    progress.fired.append(Fired(transition, replica))
    entry: dict[str, Any] = {"time": progress.now, "level": level}
    if replica is not None:
        entry["replica"] = str(replica)
    entry.update({"from": transition.source, "to": transition.target, "reason": transition.reason})
    key = (level, transition.source or "", transition.target, transition.reason)
    counts = dict(progress.record.transition_counts)
    counts[key] = counts.get(key, 0) + 1
    progress.record = progress.record.with_changes(
        transition_counts=counts, history=(*progress.record.history, entry)
    )


def _apply(action: PlannedAction, replica: ReplicaId | None, progress: _Progress) -> None:
    """Actions on the record happen now; the rest are planned for after the status write."""
    if action.name == "countRestart" and replica is not None:
        previous = progress.record.replica_restarts.get(replica)
        restarts = {
            **progress.record.replica_restarts,
            replica: RestartRecord((previous.count if previous else 0) + 1, progress.now),
        }
        progress.record = progress.record.with_changes(
            restarts=progress.record.restarts + 1, replica_restarts=restarts
        )
    elif action.name == "setCondition":
        args = action.args
        progress.conditions.append(ConditionUpdate(
            str(args["type"]),
            str(args.get("status", "True")),
            str(args.get("reason") or args["type"]),
            str(args.get("message") or ""),
        ))
    else:
        progress.plan(action, replica)
