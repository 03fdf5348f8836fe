"""The pure heart of a reconcile: step the replica machines, then the job machine, to a fixed point.

Nothing here reads the clock or the network. Given the job, its record and the
observations, `decide` returns the new record, the transitions that fired, the
conditions to set and the actions to run, so the reconcile can write status
first and act after (the write-ahead rule of the architecture page).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.cleanup import cleanup_policy, pods_to_clean
from engine.controller.reconcile.jobspec import JobSpecView, ReplicaTypeSpec
from engine.controller.reconcile.observe import MISSING, PodFacts
from engine.controller.reconcile.record import (
    LAST_TRANSITIONS,
    POD_UID_KEPT,
    InPlaceEnds,
    MachineRecord,
    RestartRecord,
    shown_in_history,
)
from engine.controller.reconcile.replica_memo import QuietKey, RememberedStep, ReplicaMemo
from engine.controller.reconcile.variables import (
    Surroundings,
    children_seen,
    common_variables,
    pod_counts,
    replica_inputs,
    replica_summary,
    replica_variables,
)
from engine.definition import (
    CompiledDefinition,
    Facts,
    FiredTransition,
    PlannedAction,
    StepResult,
    replays,
    state_timeout,
    step,
)
from engine.definition.cel import Activation, CelEvaluationError
from engine.definition.vocabulary import CREATING_ACTIONS, job_value
from engine.kube.timestamps import parse_time


@dataclass(frozen=True)
class ConditionUpdate:
    """A condition to set on the job, in the order the machines asked; `removed`: the job
    loses the condition of this type instead (a state's `moveFrom` took it over, or the
    state entered `replaces` it)."""

    type: str
    status: str
    reason: str
    message: str
    removed: bool = False


CONDITION_REASON = re.compile(r"[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?")
"""What the API server takes as a condition's reason (metav1.Condition's pattern): a
templated setCondition reason must render to one."""


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
    """Planned again for a state the instance stays in (`StepResult.replays`), not new."""


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
    timer_due: datetime | None = None
    """When the earliest replica state timeout that has not passed yet runs out."""
    restarts: tuple[tuple[str, int], ...] = ()
    """Restarts counted in this decision, each with the reason of the transition that
    counted it (PodFailed, PodRestarted, RestartJob...): what the restart metric counts."""
    pods: Mapping[ReplicaId, PodFacts] = field(default_factory=dict)
    """The replicas' pods (or child objects) the decision was made on: status says from them
    what the pod of a replica whose machine stopped at the job's end became."""


@dataclass
class _Progress:
    record: MachineRecord
    now: str
    job: Mapping[str, Any]
    fired: list[Fired] = field(default_factory=list)
    conditions: list[ConditionUpdate] = field(default_factory=list)
    actions: list[Planned] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seen_actions: set[tuple[Any, ...]] = field(default_factory=set)
    timer_due: datetime | None = None
    restarts: list[tuple[str, int]] = field(default_factory=list)
    restarted_job: bool = False
    """Whether `restartJob` ran in this pass: every pod (or child) seen is of the old attempt
    now, and is deleted after the status write."""
    timeouts_said: set[tuple[ReplicaId, str]] = field(default_factory=set)
    """Replicas (and states) whose timeout's error this decision has said."""
    pod_counts: dict[str, dict[str, int]] | None = None
    """What the replica counts take of the pods alone (`pod_counts`): made once, as the
    pods do not change in a decision."""
    common: tuple[MachineRecord, bool, dict[str, Any]] | None = None
    """The job-level variables last made, with the record and `restarted_job` they were
    made of (the record is immutable: while it is the same object, so are they)."""

    def apply_all(self, actions: Sequence[PlannedAction], replica: ReplicaId | None,
                  fired: Sequence[FiredTransition]) -> None:
        """Apply the actions of the transitions that fired, noting the restarts they count
        under the reason of the first of them."""
        before = self.record.restarts
        for action in actions:
            _apply(action, replica, self)
        counted = self.record.restarts - before
        if counted > 0:
            self.restarts.append((fired[0].reason if fired else "", counted))

    def actions_planned(self) -> Iterator[tuple[PlannedAction, ReplicaId | None]]:
        """Every action planned so far, with its replica (None: the job)."""
        return ((p.action, p.replica) for p in self.actions)

    def timer_runs_out(self, due: datetime) -> None:
        """Note a replica timer that has not run out yet (the engine wakes for the first)."""
        if self.timer_due is None or due < self.timer_due:
            self.timer_due = due

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
    transitions_kept: int = LAST_TRANSITIONS,
    surroundings: Surroundings | None = None,
    memo: ReplicaMemo | None = None,
) -> Decision:
    """Step every machine of `job` until nothing fires; see the module docstring.
    `surroundings`: by default, not gang scheduled and no child object seen yet. `memo`:
    the job's replica steps remembered from its last passes (none by default: every
    replica is stepped); the decision is the same with it or without."""
    if surroundings is None:
        surroundings = Surroundings(objects={child.name: {} for child in definition.objects})
    if memo is not None:
        memo.begin(definition.replica, spec.replica_types)
    progress = _Progress(
        _within_parallelism(definition, _without_stale_replicas(record, spec), spec, pods),
        now, job)
    state = progress.record.state
    variables: dict[str, Any] = {}
    cel_job = job_value(job)
    shared = Activation({})
    observations = job_observations
    deferred: StepResult | None = None
    for _ in range(len(definition.job.states) + len(definition.replica.states) + 2):
        replicas_moved = False
        fired_before = len(progress.fired)
        if progress.restarted_job:
            # Every pod or child seen is of the old attempt now: the new attempt's replicas
            # are stepped from the next pass, on what is observed of that attempt.
            replicas_moved = False
        elif state is None or not _holds(definition, state):
            replicas_moved = _step_replicas(definition, cel_job, spec, pods, progress,
                                            shared=shared, surroundings=surroundings,
                                            memo=memo)
        else:
            _replay_held_deletions(definition, cel_job, spec, pods, progress,
                                   surroundings=surroundings)
        variables = _variables_now(definition, cel_job, spec, pods, progress,
                                   surroundings=surroundings)
        unsettled = partial(_unsettled, progress, pods, spec)
        seen = observations | {_restarts(definition, progress, since=fired_before)}
        result = step(definition.job, state,
                      Facts(seen, variables, sharing=shared, withheld=unsettled))
        observations = observations - result.withheld
        if not result.changed and state is not None and replicas_moved:
            # Only self-loops fired, on replicas that moved this round: the job is stepped
            # again on what they are now, and a self-loop's actions (a condition, an Event)
            # are applied once a pass, from that last step, not once a round.
            deferred = result
            continue
        deferred = None
        _apply_job_step(definition, result, progress, variables)
        if not result.changed and state is not None:
            break
        state = result.state
        progress.record = progress.record.with_changes(state=state)
    else:
        if deferred is not None:
            _apply_job_step(definition, deferred, progress, variables)
    holds = state is not None and _holds(definition, state)
    history = progress.record.history[-transitions_kept:] if transitions_kept > 0 else ()
    timers = {} if holds else progress.record.replica_timers
    actions = tuple(planned for planned in progress.actions
                    if not (holds and planned.replica is not None
                            and planned.action.name in CREATING_ACTIONS))
    return Decision(
        progress.record.with_changes(history=history, replica_timers=timers),
        tuple(progress.fired),
        tuple(progress.conditions),
        actions,
        tuple(progress.errors),
        variables,
        holds,
        None if holds else progress.timer_due,
        tuple(progress.restarts),
        pods,
    )


def _unsettled(
    progress: _Progress,
    pods: Mapping[ReplicaId, PodFacts],
    spec: JobSpecView,
    replays: Sequence[PlannedAction],
) -> frozenset[str]:
    """`settled` when it does not hold: while the actions planned so far, or those the job
    replays if it stays in its state, have pods to delete, or a restart of the job in this
    pass left pods of the old attempt (`Facts.withheld`)."""
    planned = (*progress.actions_planned(), *((action, None) for action in replays))
    old_attempt_left = progress.restarted_job and any(not f.going for f in pods.values())
    if old_attempt_left or _deletions_pending(planned, pods, spec):
        return frozenset({"settled"})
    return frozenset()


def _deletions_pending(
    planned_actions: Iterable[tuple[PlannedAction, ReplicaId | None]],
    pods: Mapping[ReplicaId, PodFacts],
    spec: JobSpecView,
) -> bool:
    """Whether a deletion planned in this pass, or replayed for the state the job is in,
    will remove a pod (or spec.child object) that still exists.

    Until it has, the job is not `settled`: Failed or Succeeded must wait for the
    pods its clean-up deletes (the two-phase terminal conditions).
    """
    for action, replica in planned_actions:
        name = action.name
        if name in ("deletePod", "deleteChild") and replica is not None:
            if not pods.get(replica, MISSING).going:
                return True

        elif name == "cleanupPods":
            policy = cleanup_policy(action.args.get("policy"), spec.run_policy)
            if any(not pods[r].going for r in pods_to_clean(policy, pods)):
                return True
    return False


def _restarts(definition: CompiledDefinition, progress: _Progress, *, since: int) -> str:
    """`replicaRestarting` while a replica is in a state of phase Restarting (as the replica
    machines stand now), or entered one in this round's steps (a restart in place seen
    once the container runs again passes through it and out in one step), else
    `noReplicaRestarting`."""
    states = definition.replica.states

    def restarting(state: str) -> bool:
        return state in states and states[state].phase == "Restarting"

    now = any(restarting(s) for s in progress.record.replica_states.values())
    passed = any(f.replica is not None and restarting(f.transition.target)
                 for f in progress.fired[since:])
    return "replicaRestarting" if now or passed else "noReplicaRestarting"


def _apply_job_step(definition: CompiledDefinition, result: StepResult, progress: _Progress,
                    variables: Mapping[str, Any]) -> None:
    """Take in what one step of the job's machine decided: its errors, the transitions that
    fired, their actions, and (where the job stays in its state) the state's replays."""
    progress.errors += result.errors
    for transition in result.fired:
        _record_job_transition(definition, transition, progress, variables)
    progress.apply_all(result.actions, None, result.fired)
    if not result.changed:
        _replay(result, None, progress)


def _replay(result: StepResult, replica: ReplicaId | None, progress: _Progress) -> None:
    """Plan again what a step replays for the state an instance stays in (nothing for one
    that moved), with the errors rendering it.

    Entering a state plans its actions once; if carrying one out failed (the API
    server was away), this makes the next pass do it: level-triggered, like the rest.
    """
    progress.errors += result.replay_errors
    for action in result.replays:
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
    timers = {r: since for r, since in record.replica_timers.items()
              if r.index < desired.get(r.type, 0)}
    ends = {r: e for r, e in record.in_place_ends.items() if r.index < desired.get(r.type, 0)}
    kept = (len(states), len(restarts), len(backoff), len(timers), len(ends))
    if kept == (len(record.replica_states), len(record.replica_restarts),
                len(record.replica_backoff), len(record.replica_timers),
                len(record.in_place_ends)):
        return record
    return record.with_changes(
        replica_states=states, replica_restarts=restarts, replica_backoff=backoff,
        replica_timers=timers, in_place_ends=ends,
    )


def _step_replicas(
    definition: CompiledDefinition,
    job: Mapping[str, Any],
    spec: JobSpecView,
    pods: Mapping[ReplicaId, PodFacts],
    progress: _Progress,
    *,
    shared: Activation,
    surroundings: Surroundings,
    memo: ReplicaMemo | None,
) -> bool:
    """Step every replica once; whether any of them changed state. A replica whose inputs
    are those of a step remembered in `memo` takes that step again as it was, and one whose
    last visit did nothing on what it is now is not visited (`ReplicaMemo.quiet`)."""
    moved = False
    common = _variables_now(definition, job, spec, pods, progress, surroundings=surroundings)
    job_values = memo.job_values(common) if memo is not None else ()
    quiet = memo.quiet_in(job_values, spec.replica_types) if memo is not None else {}
    for replica_type in spec.replica_types:
        visits, spared = _to_visit(definition, replica_type, progress.record, pods, quiet)
        if memo is not None:
            memo.visits_spared += spared
        for replica in visits:
            current = progress.record.replica_states.get(replica)
            seen_ends = progress.record.in_place_ends.get(replica)
            facts = observed = pods.get(replica, MISSING)
            new_ends = _new_ends(progress.record, replica, facts)
            consumed = {}
            if new_ends and facts.observation in _RESTARTED_FIRST:
                consumed = {"podRestarting": facts.observation}
                facts = replace(facts, observation="podRestarting")
            variables = _LazyVariables(common, replica, replica_type, record=progress.record,
                                       facts=facts, new_ends=new_ends)
            inputs = (current, tuple(consumed.items()), job_values, *replica_inputs(
                replica, desired=replica_type.replicas, policy=replica_type.restart_policy,
                record=progress.record, facts=facts, new_restarts=new_ends))
            remembered = (memo.recall(replica, inputs) if memo is not None
                          else RememberedStep(inputs))
            timed_out = current is not None and _timed_out(
                definition, replica, current, variables=variables, remembered=remembered,
                progress=progress)
            result = remembered.results.get(timed_out)
            if result is None:
                observations = {facts.observation, "timedOut"} if timed_out else {
                    facts.observation}
                result = step(definition.replica, current, Facts(
                    frozenset(observations), variables.get(), consumed, shared))
                remembered.results[timed_out] = result
                if memo is not None:
                    memo.steps_taken += 1
            elif memo is not None:
                memo.steps_recalled += 1
            progress.errors += [f"{replica}: {error}" for error in result.errors]
            _note_ends(replica, facts, bool(result.fired), progress)
            for transition in result.fired:
                if not transition.self_loop:
                    _count(progress, "replica", transition, replica)
            progress.apply_all(result.actions, replica, result.fired)
            _replay(result, replica, progress)
            if result.state != current:
                moved = True
                states = {**progress.record.replica_states, replica: result.state}
                progress.record = progress.record.with_changes(replica_states=states)
                _track_backoff(definition, replica, facts, result.state, progress)
                _restart_timer(definition, replica, result.state, variables.get(), progress)
            if (memo is not None and current is not None and result.state == current
                    and not consumed and remembered.timeout == (None, None)
                    and not (result.fired or result.actions or result.errors or result.replays
                             or result.replay_errors)
                    and progress.record.in_place_ends.get(replica) is seen_ends):
                quiet[replica] = (current, observed, progress.record.replica_restarts.get(
                    replica), seen_ends)
            else:
                quiet.pop(replica, None)
    return moved


def _to_visit(definition: CompiledDefinition, replica_type: ReplicaTypeSpec,
              record: MachineRecord, pods: Mapping[ReplicaId, PodFacts],
              quiet: Mapping[ReplicaId, QuietKey]) -> tuple[list[ReplicaId], int]:
    """The replicas of a type a round visits, by index: each started one, and the first
    members not started that have a place (all of a fixed set; a pool's members wait for
    one, lowest index first), less those `quiet` on what they are now: their state, their
    pod's observation (the same object), their restarts and ends seen as recorded. With
    them, how many started ones were left out as quiet."""
    name, size = replica_type.name, replica_type.replicas
    restarts, ends = record.replica_restarts, record.in_place_ends
    visits: list[ReplicaId] = []
    started: set[int] = set()
    spared = 0
    for replica, state in record.replica_states.items():
        if replica.type != name or replica.index >= size:
            continue
        started.add(replica.index)
        known = quiet.get(replica)
        if (known is None or known[1] is not pods.get(replica, MISSING) or known[0] != state
                or known[2] != restarts.get(replica) or known[3] != ends.get(replica)):
            visits.append(replica)
        else:
            spared += 1
    room = _room(definition, replica_type, record)
    for index in range(size):
        if room <= 0:
            break
        if index not in started:
            visits.append(ReplicaId(name, index))
            room -= 1
    visits.sort(key=_index_of)
    return visits, spared


def _index_of(replica: ReplicaId) -> int:
    return replica.index


class _LazyVariables:
    """One replica's variables (`replica_variables`), made the first time they are asked
    for: a step recalled from the memo needs none."""

    __slots__ = ("_built", "_common", "_facts", "_new_ends", "_record", "_replica", "_type")

    def __init__(self, common: Mapping[str, Any], replica: ReplicaId,
                 replica_type: ReplicaTypeSpec, *, record: MachineRecord, facts: PodFacts,
                 new_ends: int) -> None:
        self._common, self._replica, self._type = common, replica, replica_type
        self._record, self._facts, self._new_ends = record, facts, new_ends
        self._built: dict[str, Any] | None = None

    def get(self) -> dict[str, Any]:
        if self._built is None:
            self._built = replica_variables(
                self._common, self._replica, desired=self._type.replicas,
                policy=self._type.restart_policy, record=self._record, facts=self._facts,
                new_restarts=self._new_ends)
        return self._built


def _variables_now(definition: CompiledDefinition, job: Mapping[str, Any], spec: JobSpecView,
                   pods: Mapping[ReplicaId, PodFacts], progress: _Progress, *,
                   surroundings: Surroundings) -> dict[str, Any]:
    """The job-level CEL variables as the record stands now (replica counts included): made
    again only when the record changed since they were last made in this decision (the
    summary counts every replica)."""
    made = progress.common
    if made is not None and made[0] is progress.record and made[1] == progress.restarted_job:
        return made[2]
    if progress.pod_counts is None:
        progress.pod_counts = pod_counts(spec, pods)
    summary = replica_summary(spec, progress.record, pods, definition.replica,
                              of_pods=progress.pod_counts)
    # After restartJob every child seen is of the old attempt, which no guard should judge.
    children = [] if definition.child is None or progress.restarted_job else children_seen(
        spec, pods)
    variables = common_variables(job, spec, progress.record, summary, surroundings,
                                 children=children)
    progress.common = (progress.record, progress.restarted_job, variables)
    return variables


def _replay_held_deletions(
    definition: CompiledDefinition,
    job: Mapping[str, Any],
    spec: JobSpecView,
    pods: Mapping[ReplicaId, PodFacts],
    progress: _Progress,
    *,
    surroundings: Surroundings,
) -> None:
    """Plan again the deletions of held replicas whose state deletes their pod while the
    pod is still there.

    A job that holds its replicas does not step them, yet a replica that entered a state
    deleting its pod (PendingTimedOut) before the watch showed the pod it had just created
    must still delete it once it appears: level-triggered, as every replay. Until then the
    job is not `settled`, so Failed waits for that pod too."""
    states = definition.replica.states
    held = [(replica, state) for replica, state in progress.record.replica_states.items()
            if replica in pods and not pods[replica].going
            and any(action.name == "deletePod" for action in states[state].on_enter)]
    if not held:
        return
    common = _variables_now(definition, job, spec, pods, progress, surroundings=surroundings)
    for replica, state in held:
        replica_type = spec.replica_type(replica.type)
        if replica_type is None:
            continue
        variables = replica_variables(
            common, replica, desired=replica_type.replicas, policy=replica_type.restart_policy,
            record=progress.record, facts=pods[replica])
        actions, errors = replays(definition.replica, state, variables)
        progress.errors += [f"{replica}: {error}" for error in errors]
        for action in actions:
            if action.name not in CREATING_ACTIONS:
                progress.plan(action, replica, replayed=True)


def _room(definition: CompiledDefinition, replica_type: ReplicaTypeSpec,
          record: MachineRecord) -> int:
    """How many more members of a type may start now: a pool's parallelism less the members
    that have started and not ended; unbounded for a fixed set."""
    if not replica_type.pool:
        return replica_type.replicas
    return replica_type.at_once - len(in_flight(definition, replica_type, record))


def in_flight(definition: CompiledDefinition, replica_type: ReplicaTypeSpec,
              record: MachineRecord) -> list[ReplicaId]:
    """The members of a type that have started and not reached a terminal state."""
    states = definition.replica.states
    return [replica for replica, state in record.replica_states.items()
            if replica.type == replica_type.name and states[state].terminal is None]


def _within_parallelism(definition: CompiledDefinition, record: MachineRecord,
                        spec: JobSpecView, pods: Mapping[ReplicaId, PodFacts]) -> MachineRecord:
    """Forget the members a pool has beyond its parallelism (it was lowered), so that they
    wait for a place again; the actions delete their pods (`_delete_stale` there).

    Those that do not run yet go first, then those that run, the highest index first
    (as the Job controller prefers deleting pods that have not started).
    """
    excess: list[ReplicaId] = []
    for replica_type in spec.replica_types:
        started = in_flight(definition, replica_type, record)
        over = len(started) - replica_type.at_once
        if not replica_type.pool or over <= 0:
            continue
        running = {r for r in started
                   if pods.get(r, MISSING).observation == "podRunning" and not pods[r].deleting}
        started.sort(key=lambda r: (r in running, -r.index))
        excess += started[:over]
    if not excess:
        return record
    return record.with_changes(
        replica_states={r: s for r, s in record.replica_states.items() if r not in excess},
        replica_timers={r: t for r, t in record.replica_timers.items() if r not in excess},
        in_place_ends={r: e for r, e in record.in_place_ends.items() if r not in excess},
    )


def _new_ends(record: MachineRecord, replica: ReplicaId, facts: PodFacts) -> int:
    """How many ends of the pod's main container (restarted in place) are not seen yet."""
    seen = record.in_place_ends.get(replica)
    before = seen.seen if seen is not None and seen.of(facts.uid) else 0
    return max(facts.ends - before, 0)


_FAILURES = frozenset({"podFailed", "podRestarting", "podLost", "childFailed"})
_RESTARTED_FIRST = frozenset({"podPending", "podRunning", "podSucceeded", "podFailed"})
"""Observations that, with restarts in place not seen yet, are `podRestarting` first (the
restarts are counted), then themselves: a pod may finish before the engine saw it restart."""


def _note_ends(replica: ReplicaId, facts: PodFacts, moved: bool, progress: _Progress) -> None:
    """Remember the pod's ends as seen (each is observed once), and a failure the replica's
    machine took as the job's last failure (`lastFailure`)."""
    record = progress.record
    seen = record.in_place_ends.get(replica)
    wanted = InPlaceEnds(facts.uid[:POD_UID_KEPT], facts.ends) if facts.ends else None
    if seen != wanted:
        ends = {r: e for r, e in record.in_place_ends.items() if r != replica}
        if wanted is not None:
            ends[replica] = wanted
        record = record.with_changes(in_place_ends=ends)
    if moved and facts.observation in _FAILURES:
        what = "lost with its node" if facts.observation == "podLost" else facts.termination
        record = record.with_changes(last_failure=f"{replica} ({what})",
                                     last_failure_cause=facts.failure_cause)
    progress.record = record


def _timeout_of(
    definition: CompiledDefinition, replica: ReplicaId, state: str,
    variables: Mapping[str, Any], progress: _Progress,
) -> float | None:
    seconds, error = _timeout_length(definition, state, variables)
    _say_timeout_error(replica, state, error, progress)
    return seconds


def _say_timeout_error(replica: ReplicaId, state: str, error: str | None,
                       progress: _Progress) -> None:
    """The error working out the replica's timeout in `state`, once a decision: entering
    the state meets it, and so does checking its timer in the next round."""
    if error is not None and (replica, state) not in progress.timeouts_said:
        progress.timeouts_said.add((replica, state))
        progress.errors.append(error)


def _timeout_length(definition: CompiledDefinition, state: str, variables: Mapping[str, Any]
                    ) -> tuple[float | None, str | None]:
    """The seconds of the state's timeout (None: none), and the error working it out."""
    try:
        return state_timeout(definition.replica, state, variables), None
    except CelEvaluationError as exc:
        return None, f"timeout of replica state {state}: {exc}"


def _timed_out(
    definition: CompiledDefinition,
    replica: ReplicaId,
    state: str,
    *,
    variables: _LazyVariables,
    remembered: RememberedStep,
    progress: _Progress,
) -> bool:
    """Whether the replica has been in `state` past its timeout (`timedOut` holds); the
    timeout's length is worked out once per remembered step.

    A replica in a state with a timeout but no timer (the job just resumed, or the
    timeout was turned on) starts one now.
    """
    if remembered.timeout is None:
        compiled = definition.replica.states[state]
        remembered.timeout = ((compiled.timeout_seconds, None)
                              if compiled.timeout_expression is None
                              else _timeout_length(definition, state, variables.get()))
    seconds, error = remembered.timeout
    _say_timeout_error(replica, state, error, progress)
    if seconds is None:
        return False
    since = progress.record.replica_timers.get(replica)
    if since is None:
        _set_timer(replica, seconds, progress)
        return False
    due = parse_time(since) + timedelta(seconds=seconds)
    if parse_time(progress.now) >= due:
        return True
    progress.timer_runs_out(due)
    return False


def _restart_timer(
    definition: CompiledDefinition,
    replica: ReplicaId,
    state: str,
    variables: Mapping[str, Any],
    progress: _Progress,
) -> None:
    """Entering a state starts its timeout afresh; a state without one has no timer."""
    seconds = _timeout_of(definition, replica, state, variables, progress)
    if seconds is not None:
        _set_timer(replica, seconds, progress)
    elif replica in progress.record.replica_timers:
        timers = {r: s for r, s in progress.record.replica_timers.items() if r != replica}
        progress.record = progress.record.with_changes(replica_timers=timers)


def _set_timer(replica: ReplicaId, seconds: float, progress: _Progress) -> None:
    """Start the replica's timer now; it runs out `seconds` later."""
    timers = {**progress.record.replica_timers, replica: progress.now}
    progress.record = progress.record.with_changes(replica_timers=timers)
    progress.timer_runs_out(parse_time(progress.now) + timedelta(seconds=seconds))


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
    if facts.observation in ("podSucceeded", "childSucceeded"):
        if backoff.pop(replica, None) is None:
            return
    elif facts.observation in ("podFailed", "podLost", "childFailed") and not (
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
    condition_reason = transition.reason
    if entered.condition_message is not None:
        condition_message, errors = entered.condition_message.render(variables)
        progress.errors += errors
    source = entered.condition.source if entered.condition is not None else None
    if source is not None:
        copied = _condition(progress, source)
        if copied is not None:
            condition_reason, condition_message = copied
    if transition.source is None:
        transition = replace(transition, message=condition_message)
    said = transition.reason
    if transition.source is None and entered.condition is not None and entered.condition.reason:
        # A new job is said under its first condition's reason (PyTorchJobCreated); the count
        # keeps the language's creation edge, which pictures draw.
        said = entered.condition.reason
    _count(progress, "job", transition, None, said=said)
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
            entered.condition.reason or condition_reason,
            condition_message,
        ))
        lost = [entered.condition.move_from, *entered.condition.replaces]
        progress.conditions += [ConditionUpdate(lost_type, "", "", "", removed=True)
                                for lost_type in lost if lost_type is not None]


def _condition(progress: _Progress, condition_type: str) -> tuple[str, str] | None:
    """Reason and message of the job's condition of this type: set in this pass, else before."""
    for update in reversed(progress.conditions):
        if update.type == condition_type:
            return None if update.removed else (update.reason, update.message)
    for existing in (progress.job.get("status") or {}).get("conditions") or ():
        if existing.get("type") == condition_type:
            return str(existing.get("reason") or ""), str(existing.get("message") or "")
    return None


def _condition_type(definition: CompiledDefinition, state: str) -> str | None:
    condition = definition.job.states[state].condition
    return condition.type if condition else None


def _count(
    progress: _Progress, level: str, transition: FiredTransition, replica: ReplicaId | None,
    *, said: str | None = None,
) -> None:
    """Record a state change: it fired (`said`: the reason its Event and history give, when
    not the transition's own), it is counted, and it joins the last transitions."""
    key = (level, transition.source or "", transition.target, transition.reason)
    if said is not None and said != transition.reason:
        transition = replace(transition, reason=said)
    progress.fired.append(Fired(transition, replica))
    entry: dict[str, Any] = {"time": progress.now, "level": level}
    if replica is not None:
        entry["replica"] = str(replica)
    entry.update({"from": transition.source, "to": transition.target, "reason": transition.reason})
    counts = dict(progress.record.transition_counts)
    counts[key] = counts.get(key, 0) + 1
    history = progress.record.history
    if shown_in_history(entry):
        history = (*history, entry)
    progress.record = progress.record.with_changes(transition_counts=counts, history=history)


def _apply(action: PlannedAction, replica: ReplicaId | None, progress: _Progress) -> None:
    """Actions on the record happen now; the rest are planned for after the status write."""
    if action.name == "countRestart" and replica is not None:
        count = action.args.get("count", 1)
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            progress.errors.append(f"{replica}: countRestart count gave {count!r}, not an int >= 0")
            return
        if count == 0:
            return
        previous = progress.record.replica_restarts.get(replica)
        restarts = {
            **progress.record.replica_restarts,
            replica: RestartRecord((previous.count if previous else 0) + count, progress.now),
        }
        progress.record = progress.record.with_changes(
            restarts=progress.record.restarts + count, replica_restarts=restarts
        )
    elif action.name == "restartJob":
        record = progress.record
        count = action.args.get("count", 1)
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            progress.errors.append(f"restartJob count gave {count!r}, not an int >= 0")
            return
        progress.record = record.with_changes(
            restart_attempt=record.restart_attempt + 1,
            restarts=record.restarts + count,
            replica_states={},
            replica_backoff={},
            replica_timers={},
        )
        progress.restarted_job = True
    elif action.name == "setCondition":
        args = action.args
        reason = str(args.get("reason") or args["type"])
        if not CONDITION_REASON.fullmatch(reason):
            progress.errors.append(f"setCondition {args['type']}: reason {reason!r} is not a "
                                   "condition reason (a letter, then letters, digits, _ , :)")
            return
        progress.conditions.append(ConditionUpdate(
            str(args["type"]),
            str(args.get("status", "True")),
            reason,
            str(args.get("message") or ""),
        ))
    else:
        progress.plan(action, replica)
