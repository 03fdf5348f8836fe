"""The one status write per reconcile: the record, phase, conditions and counters, written first.

The write carries the job's resourceVersion, so a reconcile working from a
stale job loses (409) instead of overwriting newer facts; nothing is done and
no event is posted until this write has succeeded (the write-ahead rule).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from engine.api.conditions import get_condition, set_condition
from engine.api.replica_words import replica_words
from engine.controller.machines.registry import MACHINE_STATUS_FIELD, Assignment, Unassigned
from engine.controller.reconcile.children import JOB_NAME_LABEL, REPLICA_TYPE_LABEL
from engine.controller.reconcile.decide import Decision
from engine.controller.reconcile.jobspec import JobSpecView
from engine.controller.reconcile.observe import PodFacts
from engine.controller.reconcile.record import LEGACY_FIELDS, format_ranges, record_fields
from engine.definition import CompiledDefinition
from engine.kube.client import KubeClient
from engine.kube.resources import Resource

UNFINISHED_FIELD = "unfinished"
"""The field of a replica type's status naming its replicas that stopped short of an end."""
_CHILD_WORDS = {"childPending": "Pending", "childReady": "Ready", "childSucceeded": "Succeeded",
                "childFailed": "Failed", "childGone": "being deleted"}

GOVERNED = "Governed"
"""The condition saying whether a machine revision runs the job (set only once one did not)."""


def build_status(
    job: Mapping[str, Any],
    assignment: Assignment,
    spec: JobSpecView,
    decision: Decision,
    *,
    now: str,
) -> dict[str, Any]:
    """The job's next status: the old one with the decision applied (the input is not changed).

    It records the machine revision the job runs with, which it keeps until it ends.
    """
    definition = assignment.definition
    status = dict(job.get("status") or {})
    status[MACHINE_STATUS_FIELD] = assignment.revision
    for legacy in LEGACY_FIELDS:
        status.pop(legacy, None)
    status.update(record_fields(decision.record))
    state = decision.record.state
    compiled = definition.job.states[state] if state else None
    status["phase"] = compiled.phase if compiled else None
    if status.get("state") == status["phase"]:
        del status["state"]  # said once: the shipped machines' states are their phases' words
    conditions = list(status.get("conditions") or [])
    if get_condition(conditions, GOVERNED) is not None:
        conditions = set_condition(
            conditions, type=GOVERNED, status="True", reason="StateMachineAssigned",
            message=f"revision {assignment.revision} of machine {assignment.machine} runs the job",
            now=now,
        )
    for update in decision.conditions:
        if update.removed:
            conditions = [c for c in conditions if c.get("type") != update.type]
            continue
        if update.status == "False" and get_condition(conditions, update.type) is None:
            continue  # a condition the job never had stays absent: absent reads as not true
        conditions = set_condition(
            conditions, type=update.type, status=update.status, reason=update.reason,
            message=update.message, now=now,
        )
    status["conditions"] = conditions
    ended = compiled is not None and compiled.terminal is not None
    status["replicaStatuses"] = _replica_statuses(
        job, spec, decision, unfinished_at_end(definition, decision) if ended else {})
    if compiled is None or not compiled.hold_replicas:
        status.setdefault("startTime", now)  # not while created suspended: it never started
    if _resumed(definition, decision):
        status["startTime"] = now
    if compiled is not None and compiled.terminal and not status.get("completionTime"):
        status["completionTime"] = now
    return {key: value for key, value in status.items() if value is not None}


def ungoverned_status(
    job: Mapping[str, Any], unassigned: Unassigned, *, now: str
) -> dict[str, Any]:
    """The status of a job no machine revision can run: the Governed condition says why."""
    status = dict(job.get("status") or {})
    status["conditions"] = set_condition(
        list(status.get("conditions") or []), type=GOVERNED, status="False",
        reason=unassigned.reason, message=unassigned.message, now=now,
    )
    return status


def _resumed(definition: CompiledDefinition, decision: Decision) -> bool:
    """Whether the job resumed this time: a transition on `resumed` out of a state that
    held its replicas (a restart of the whole job is not a resume).

    The start time restarts then, as the Job API does on resume, so time spent
    suspended does not count against runPolicy.activeDeadlineSeconds.
    """
    transitions = definition.job.transitions
    return any(
        fired.replica is None
        and fired.transition.source is not None
        and fired.transition.index is not None
        and transitions[fired.transition.index].on == "resumed"
        and definition.job.states[fired.transition.source].hold_replicas
        for fired in decision.fired
    )


def _replica_statuses(
    job: Mapping[str, Any], spec: JobSpecView, decision: Decision,
    unfinished: Mapping[str, Mapping[str, str]],
) -> dict[str, dict[str, Any]]:
    """Kubeflow's pod counts per type; a count of 0 is left out, as Kubeflow's omitempty does.
    A type with replicas whose machines stopped short at the job's end says so in
    `unfinished` (left out otherwise, so a job that ended cleanly shows no more)."""
    summary = decision.variables.get("replicas") or {}
    name = job["metadata"]["name"]
    statuses: dict[str, dict[str, Any]] = {}
    for replica_type in spec.replica_types:
        counts = summary.get(replica_type.name, {})
        entry: dict[str, Any] = {
            key: counts[key] for key in ("active", "succeeded", "failed") if counts.get(key)
        }
        entry["selector"] = f"{JOB_NAME_LABEL}={name},{REPLICA_TYPE_LABEL}={replica_type.name}"
        if replica_type.name in unfinished:
            entry[UNFINISHED_FIELD] = dict(unfinished[replica_type.name])
        statuses[replica_type.name] = entry
    return statuses


def unfinished_at_end(
    definition: CompiledDefinition, decision: Decision
) -> dict[str, dict[str, str]]:
    """Per replica type, the indexes (as ranges, `0-3,7`) whose machines were not at an end
    when the job's was, and what they are in words (engine.api.replica_words, as the web
    view and the SDK say it): `{"Master": {"0": "Running, stopped at job end (pod
    deleted)"}}`. The words follow the pods after the end: a kept pod that ends later
    changes them at the next reconcile."""
    noun = definition.child.kind if definition.child is not None else "pod"
    grouped: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for replica, state in sorted(decision.record.replica_states.items()):
        if definition.replica.states[state].terminal is not None:
            continue
        facts = decision.pods.get(replica)
        words = replica_words(state, _phase(facts), job_ended=True, ended=False, noun=noun)
        grouped[replica.type][words.text].append(replica.index)
    return {
        replica_type: {format_ranges(indexes): text for text, indexes in by_words.items()}
        for replica_type, by_words in grouped.items()
    }


def _phase(facts: PodFacts | None) -> str | None:
    """The replica's pod phase (a child's observed condition), None when it has none."""
    if facts is None or facts.observation in ("podMissing", "childMissing"):
        return None
    if facts.child:
        return _CHILD_WORDS.get(facts.observation, facts.observation)
    return str(facts.pod.get("phase") or "Pending")


def write_status(
    client: KubeClient, resource: Resource, job: Mapping[str, Any], status: Mapping[str, Any]
) -> dict[str, Any]:
    """Replace the job's status, conditional on the resourceVersion it was computed from."""
    metadata = job["metadata"]
    body = {
        "apiVersion": job["apiVersion"],
        "kind": job["kind"],
        "metadata": {
            "name": metadata["name"],
            "namespace": metadata["namespace"],
            "resourceVersion": metadata["resourceVersion"],
            "uid": metadata["uid"],
        },
        "spec": job.get("spec") or {},
        "status": dict(status),
    }
    return client.replace(
        resource, metadata["name"], body, namespace=metadata["namespace"], subresource="status"
    )
