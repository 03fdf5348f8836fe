"""The one status write per reconcile: the record, phase, conditions and counters, written first.

The write carries the job's resourceVersion, so a reconcile working from a
stale job loses (409) instead of overwriting newer facts; nothing is done and
no event is posted until this write has succeeded (the write-ahead rule).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.api.conditions import get_condition, set_condition
from engine.controller.machines.registry import MACHINE_STATUS_FIELD, Assignment, Unassigned
from engine.controller.reconcile.children import JOB_NAME_LABEL, REPLICA_TYPE_LABEL
from engine.controller.reconcile.decide import Decision
from engine.controller.reconcile.jobspec import JobSpecView
from engine.controller.reconcile.record import LEGACY_FIELDS, record_fields
from engine.definition import CompiledDefinition
from engine.kube.client import KubeClient
from engine.kube.resources import Resource

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
    status["replicaStatuses"] = _replica_statuses(job, spec, decision)
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
    job: Mapping[str, Any], spec: JobSpecView, decision: Decision
) -> dict[str, dict[str, Any]]:
    """Kubeflow's pod counts per type; a count of 0 is left out, as Kubeflow's omitempty does."""
    summary = decision.variables.get("replicas") or {}
    name = job["metadata"]["name"]
    statuses: dict[str, dict[str, Any]] = {}
    for replica_type in spec.replica_types:
        counts = summary.get(replica_type.name, {})
        entry: dict[str, Any] = {
            key: counts[key] for key in ("active", "succeeded", "failed") if counts.get(key)
        }
        entry["selector"] = f"{JOB_NAME_LABEL}={name},{REPLICA_TYPE_LABEL}={replica_type.name}"
        statuses[replica_type.name] = entry
    return statuses


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
