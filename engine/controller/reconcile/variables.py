"""The CEL variables a step sees: the job, its run policy, and the per-type replica summary.

Built once per round of a reconcile from the record and the observations, so
every guard of every replica reads the same numbers (the language reference
lists each variable; engine.definition.vocabulary declares them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.jobspec import JobSpecView
from engine.controller.reconcile.observe import MISSING, PodFacts
from engine.controller.reconcile.record import MachineRecord, format_ranges
from engine.definition import CompiledMachine
from engine.definition.vocabulary import lower_camel

_LIVE = frozenset({"podPending", "podRunning", "podLost", "childPending", "childReady"})
"""Observations of a pod or child that has not ended (one being deleted is not live either)."""


def replica_summary(
    spec: JobSpecView,
    record: MachineRecord,
    pods: Mapping[ReplicaId, PodFacts],
    machine: CompiledMachine,
) -> dict[str, dict[str, Any]]:
    """Per replica type: position, desired, parallelism, active, ready, available,
    fullyLabeled, live, terminating, waiting, succeeded, failed, restarts, per-phase counts,
    states, completedIndexes and failedIndexes.

    `waiting` counts a pool's members not started that have no place now (0 for a fixed
    set); the index lists are in the Job API's interval format (`0-3,7`)."""
    summary: dict[str, dict[str, Any]] = {}
    phase_words = {lower_camel(s.phase) for s in machine.states.values()}
    for position, replica_type in enumerate(spec.replica_types):
        entry: dict[str, Any] = {word: 0 for word in phase_words}
        entry.update(
            position=position, desired=replica_type.replicas,
            parallelism=replica_type.at_once, active=0, ready=0, available=0,
            fullyLabeled=0, live=0, terminating=0, waiting=0, succeeded=0, failed=0,
            restarts=0,
        )
        states: dict[str, int] = {}
        ended: dict[str, list[int]] = {"success": [], "failure": []}
        unstarted = 0
        for index in range(replica_type.replicas):
            replica = ReplicaId(replica_type.name, index)
            state = record.replica_states.get(replica)
            restarts = record.replica_restarts.get(replica)
            entry["restarts"] += restarts.count if restarts else 0
            facts = pods.get(replica, MISSING)
            if facts.active:
                entry["active"] += 1
                entry["ready"] += facts.ready
                entry["available"] += facts.ready and facts.available_in == 0
            if facts.observation in _LIVE and not facts.deleting:
                entry["fullyLabeled"] += facts.labelled
            entry["terminating"] += facts.terminating
            if facts.observation in _LIVE and not facts.deleting:
                entry["live"] += 1
            if state is None:
                unstarted += 1
                continue
            compiled = machine.states[state]
            states[state] = states.get(state, 0) + 1
            entry[lower_camel(compiled.phase)] += 1
            if compiled.terminal in ("success", "failure"):
                ended[compiled.terminal].append(index)
                terminal_key = "succeeded" if compiled.terminal == "success" else "failed"
                if lower_camel(compiled.phase) != terminal_key:
                    entry[terminal_key] += 1
        entry["states"] = states
        # Members not started that have no place now (a fixed set always has room).
        in_flight = replica_type.replicas - unstarted - len(ended["success"]) - len(
            ended["failure"])
        entry["waiting"] = max(0, unstarted - max(0, replica_type.at_once - in_flight))
        entry["completedIndexes"] = format_ranges(ended["success"], job_api=True)
        entry["failedIndexes"] = format_ranges(ended["failure"], job_api=True)
        summary[replica_type.name] = entry
    return summary


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

