"""Names, labels and owner references of a job's pods and services, in one place.

The pod labels, the service selector and the claim selector all come from these
functions, so they can never drift apart (field notes, stories 1 and 9): the
names here are API and change only with a migration.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

JOB_NAME_LABEL = "jobmachine.dev/job-name"
JOB_UID_LABEL = "jobmachine.dev/job-uid"
REPLICA_TYPE_LABEL = "jobmachine.dev/replica-type"
REPLICA_INDEX_LABEL = "jobmachine.dev/replica-index"
RESTART_ATTEMPT_LABEL = "jobmachine.dev/restart-attempt"
TRACKING_FINALIZER = "jobmachine.dev/tracking"
CLEANUP_FINALIZER = "jobmachine.dev/cleanup"


class JobKey(NamedTuple):
    """What the work queue carries: which job, never an event."""

    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def id(self) -> str:
        """Unique across kinds: expectations and scheduler entries are keyed by it."""
        return f"{self.kind}/{self.namespace}/{self.name}"


class ReplicaId(NamedTuple):
    """One replica of a job: its type as the job spells it, and its index. A tuple, so
    that hashing and comparing one, which a pass over a wide job does for every replica
    in every map of its record, runs in C (issue 33.3)."""

    type: str
    index: int  # type: ignore[assignment]  # a field, where tuple has a method of its name

    def __str__(self) -> str:
        return f"{self.type}-{self.index}"


def child_name(job_name: str, replica: ReplicaId) -> str:
    """The pod's and the service's name: `<job>-<type in lower case>-<index>` (Kubeflow's)."""
    return f"{job_name}-{replica.type.lower()}-{replica.index}"


def replica_selector(job_name: str, replica: ReplicaId) -> dict[str, str]:
    """Labels that select exactly this replica's pod: the headless service's selector."""
    return {
        JOB_NAME_LABEL: job_name,
        REPLICA_TYPE_LABEL: replica.type,
        REPLICA_INDEX_LABEL: str(replica.index),
    }


def child_labels(job: Mapping[str, Any], replica: ReplicaId) -> dict[str, str]:
    """Every label the engine puts on a replica's pod and service."""
    metadata = job["metadata"]
    return {**replica_selector(metadata["name"], replica), JOB_UID_LABEL: metadata["uid"]}


def owner_reference(job: Mapping[str, Any]) -> dict[str, Any]:
    """The controller reference a child carries; it blocks foreground deletion of the job."""
    metadata = job["metadata"]
    return {
        "apiVersion": job["apiVersion"],
        "kind": job["kind"],
        "name": metadata["name"],
        "uid": metadata["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controller_uid(obj: Mapping[str, Any]) -> str | None:
    """The uid of the object's controller (the owner reference with controller: true)."""
    for reference in obj["metadata"].get("ownerReferences") or ():
        if reference.get("controller"):
            uid = reference.get("uid")
            return str(uid) if uid else None
    return None


def attempt_of(pod: Mapping[str, Any]) -> int:
    """The restart attempt a pod belongs to; a pod without the label is of attempt 0."""
    value = str((pod["metadata"].get("labels") or {}).get(RESTART_ATTEMPT_LABEL, "0"))
    return int(value) if value.isdigit() else -1


def replica_of(obj: Mapping[str, Any]) -> ReplicaId | None:
    """Which replica a child belongs to, from its labels; None when they do not say."""
    labels = obj["metadata"].get("labels") or {}
    replica_type = labels.get(REPLICA_TYPE_LABEL)
    index = labels.get(REPLICA_INDEX_LABEL)
    if not replica_type or index is None or not str(index).isdigit():
        return None
    return ReplicaId(str(replica_type), int(index))
