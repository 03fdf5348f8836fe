"""The CEL variables a step sees: the job, its run policy, and the per-type replica summary.

Built once per round of a reconcile from the record and the observations, so
every guard of every replica reads the same numbers (the language reference
lists each variable; engine.definition.vocabulary declares them).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.jobspec import JobSpecView
from engine.controller.reconcile.observe import PodFacts
from engine.controller.reconcile.record import MachineRecord, format_ranges
from engine.definition import CompiledMachine
from engine.definition.cel import unchanging
from engine.definition.vocabulary import lower_camel

_LIVE = frozenset({"podPending", "podRunning", "podLost", "childPending", "childReady"})
"""Observations of a pod or child that has not ended (one being deleted is not live either)."""


def replica_summary(
    spec: JobSpecView,
    record: MachineRecord,
    pods: Mapping[ReplicaId, PodFacts],
    machine: CompiledMachine,
    *,
    of_pods: Mapping[str, Mapping[str, int]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Per replica type: position, desired, parallelism, active, ready, available,
    fullyLabeled, live, terminating, waiting, succeeded, failed, restarts, per-phase counts,
    states, completedIndexes and failedIndexes.

    `waiting` counts a pool's members not started that have no place now (0 for a fixed
    set); the index lists are in the Job API's interval format (`0-3,7`); `states` lists
    each state by the lowest index in it.

    Made of the replicas the record and the pods name, not of every index a type has: a
    replica without a state, restarts or pod counts nowhere, and a pool of thousands of
    members not started yet costs nothing (issue 33.3). `of_pods`: `pod_counts` of `pods`
    made already (a decision makes them once: its pods do not change).

    Within `remembering_summaries` (the model checker) a summary made before of equal
    inputs is handed out again, the very object: it must not be changed."""
    counts = of_pods if of_pods is not None else pod_counts(spec, pods)
    remembered = _SUMMARIES.get()
    if remembered is None:
        return _summary(spec, record, counts, machine)
    # Everything the summary is made of: the types' sizes, the replicas' states (in the
    # record's order, as they are counted) and restarts, and the pods' counts.
    key = (id(machine), tuple((t.name, t.replicas, t.at_once) for t in spec.replica_types),
           tuple(record.replica_states.items()),
           tuple((r, e.count) for r, e in record.replica_restarts.items()),
           tuple(tuple(c.values()) for c in counts.values()))
    found = remembered.get(key)
    if found is None or found[0] is not machine:  # (an id is only unique while it lives)
        if len(remembered) >= _SUMMARIES_KEPT:
            remembered.clear()
        found = remembered[key] = (machine, _summary(spec, record, counts, machine))
        unchanging(found[1])  # what expressions read of it is worked out once
    return found[1]


Summaries = dict[Hashable, tuple[CompiledMachine, dict[str, dict[str, Any]]]]
"""Replica summaries by what they are made of (`remembering_summaries`)."""
_SUMMARIES: ContextVar[Summaries | None] = ContextVar("summaries", default=None)
_SUMMARIES_KEPT = 100_000
"""Summaries `remembering_summaries` keeps at most; all are forgotten when full."""


@contextmanager
def remembering_summaries(remembered: Summaries | None = None) -> Iterator[None]:
    """Within this block (in this thread or task), `replica_summary` hands out the summary
    it made before of equal inputs (the model checker's thousands of passes over the few
    same counts): `remembered`, to go on with one kept from an earlier block, else a new
    one. The summaries handed out are shared, so their users must not change them."""
    token = _SUMMARIES.set({} if remembered is None else remembered)
    try:
        yield
    finally:
        _SUMMARIES.reset(token)


def _summary(spec: JobSpecView, record: MachineRecord, counts: Mapping[str, Mapping[str, int]],
             machine: CompiledMachine) -> dict[str, dict[str, Any]]:
    """`replica_summary`, made."""
    phases = {name: lower_camel(state.phase) for name, state in machine.states.items()}
    phase_words = set(phases.values())
    entries: dict[str, dict[str, Any]] = {}
    sizes: dict[str, int] = {}
    for position, replica_type in enumerate(spec.replica_types):
        entry: dict[str, Any] = {word: 0 for word in phase_words}
        entry.update(
            position=position, desired=replica_type.replicas,
            parallelism=replica_type.at_once, active=0, ready=0, available=0,
            fullyLabeled=0, live=0, terminating=0, waiting=0, succeeded=0, failed=0,
            restarts=0,
        )
        entry.update(counts[replica_type.name])
        entries[replica_type.name] = entry
        sizes[replica_type.name] = replica_type.replicas
    for replica, restarts in record.replica_restarts.items():
        if replica.index < sizes.get(replica.type, 0):
            entries[replica.type]["restarts"] += restarts.count
    firsts: dict[str, dict[str, int]] = {name: {} for name in entries}
    counted: dict[str, dict[str, int]] = {name: {} for name in entries}
    ended: dict[str, dict[str, list[int]]] = {
        name: {"success": [], "failure": []} for name in entries}
    for replica, state in record.replica_states.items():
        if replica.index >= sizes.get(replica.type, 0):
            continue
        first = firsts[replica.type]
        if replica.index < first.get(state, replica.index + 1):
            first[state] = replica.index
        found = counted[replica.type]
        found[state] = found.get(state, 0) + 1
        terminal = machine.states[state].terminal
        if terminal in ("success", "failure"):
            ended[replica.type][terminal].append(replica.index)
    for replica_type in spec.replica_types:
        entry, found = entries[replica_type.name], counted[replica_type.name]
        first = firsts[replica_type.name]
        for state, count in found.items():
            entry[phases[state]] += count
            terminal = machine.states[state].terminal
            if terminal in ("success", "failure"):
                terminal_key = "succeeded" if terminal == "success" else "failed"
                if phases[state] != terminal_key:
                    entry[terminal_key] += count
        entry["states"] = {state: found[state] for state in sorted(found, key=first.__getitem__)}
        finished = ended[replica_type.name]
        unstarted = replica_type.replicas - sum(found.values())
        # Members not started that have no place now (a fixed set always has room).
        in_flight = replica_type.replicas - unstarted - len(finished["success"]) - len(
            finished["failure"])
        entry["waiting"] = max(0, unstarted - max(0, replica_type.at_once - in_flight))
        entry["completedIndexes"] = format_ranges(finished["success"], job_api=True)
        entry["failedIndexes"] = format_ranges(finished["failure"], job_api=True)
    return entries


def pod_counts(spec: JobSpecView, pods: Mapping[ReplicaId, PodFacts]
               ) -> dict[str, dict[str, int]]:
    """Per replica type, what `replica_summary` counts of the pods alone: active, ready,
    available, fullyLabeled, live and terminating."""
    counts = {t.name: dict.fromkeys(
        ("active", "ready", "available", "fullyLabeled", "live", "terminating"), 0)
        for t in spec.replica_types}
    sizes = {t.name: t.replicas for t in spec.replica_types}
    for replica, facts in pods.items():
        if replica.index >= sizes.get(replica.type, 0):
            continue
        entry = counts[replica.type]
        if facts.active:
            entry["active"] += 1
            entry["ready"] += facts.ready
            entry["available"] += facts.ready and facts.available_in == 0
        if facts.observation in _LIVE and not facts.deleting:
            entry["fullyLabeled"] += facts.labelled
            entry["live"] += 1
        entry["terminating"] += facts.terminating
    return counts


@dataclass(frozen=True)
class Surroundings:
    """What a job's guards see beyond the job and its pods."""

    gang_scheduler: str = ""
    """The PodGroup API the job is gang scheduled with, '' when it is not."""
    objects: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Each child object the machine declares, by its name there, as last seen ({} when
    absent)."""
    references: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Each object the machine's governs.references names, by its name there, as last seen
    ({} when absent)."""


def gang_scheduler_of(run_policy: Mapping[str, Any], *, scheduler_name: str,
                      for_every_job: bool) -> str:
    """The PodGroup API a job is gang scheduled with: the engine's, when the engine gang
    schedules every job or the job's run policy asks with a schedulingPolicy; else ''."""
    asked = run_policy.get("schedulingPolicy") is not None
    return scheduler_name if for_every_job or asked else ""


def children_seen(spec: JobSpecView, facts: Mapping[ReplicaId, PodFacts]
                  ) -> list[dict[str, Any]]:
    """The `children` variable: each spec.child object of the current attempt that exists,
    in the job's type order then by index, with what its status expressions say of it."""
    seen: list[dict[str, Any]] = []
    for replica_type in spec.replica_types:
        for index in range(replica_type.replicas):
            found = facts.get(ReplicaId(replica_type.name, index))
            if found is None or not found.child:
                continue
            failed = found.observation == "childFailed"
            seen.append({
                "type": replica_type.name, "index": index, "observation": found.observation,
                "reason": found.reason if failed else "",
                "message": found.message if failed else "",
                "object": found.child,
            })
    return seen


def common_variables(
    job: Mapping[str, Any],
    spec: JobSpecView,
    record: MachineRecord,
    summary: Mapping[str, Any],
    surroundings: Surroundings | None = None,
    *,
    children: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The variables every guard sees, at either level; `job` as `job_value` gives it (made
    once per decision, so every step can share its converted value). `children`: as
    `children_seen` gives them (none by default)."""
    around = surroundings or Surroundings()
    return {
        "job": job,
        "runPolicy": spec.run_policy,
        "replicas": summary,
        "restarts": record.restarts,
        "error": spec.error,
        "lastFailure": record.last_failure,
        "lastFailureCause": record.last_failure_cause,
        "gangScheduler": around.gang_scheduler,
        "objects": around.objects,
        "children": children or [],
        "references": around.references,
    }


def replica_variables(
    common: Mapping[str, Any],
    replica: ReplicaId,
    *,
    desired: int,
    policy: str,
    record: MachineRecord,
    facts: PodFacts,
    new_restarts: int = 0,
) -> dict[str, Any]:
    """The variables one replica's guards see: the common ones plus this replica and its pod.

    `new_restarts`: the ends of its container restarted in place not seen before.
    """
    restarts = record.replica_restarts.get(replica)
    return {
        **common,
        "replica": {
            "type": replica.type,
            "index": replica.index,
            "restarts": restarts.count if restarts else 0,
            "desired": desired,
        },
        "policy": policy,
        "pod": facts.pod,
        "child": facts.child,
        "exitCode": facts.exit_code,
        "reason": facts.reason,
        "terminationMessage": facts.message,
        "termination": facts.termination,
        "newRestarts": new_restarts,
        "failureAction": facts.failure_action,
        "failureCause": facts.failure_cause,
    }


def replica_inputs(
    replica: ReplicaId,
    *,
    desired: int,
    policy: str,
    record: MachineRecord,
    facts: PodFacts,
    new_restarts: int = 0,
) -> tuple[Any, ...]:
    """Everything `replica_variables` makes one replica's variables of besides the common
    ones (the replica itself aside): equal inputs give equal variables, so a step taken on
    them can be taken again as it was (`replica_memo`)."""
    restarts = record.replica_restarts.get(replica)
    return (desired, policy, restarts.count if restarts else 0, facts, new_restarts)

