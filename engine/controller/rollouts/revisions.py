"""A rollout's children as it judges them, and the operations a sync plans on them.

A revision is one child made from one version of the job's template (a Deployment's
ReplicaSet): it carries the template's hash in the label `pod-template-hash` (on itself,
its selector and its template, so on its pods) and its revision number in the annotation
`deployment.kubernetes.io/revision`, as upstream's ReplicaSets do.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

HASH_LABEL = "pod-template-hash"
"""On a revision, its selector and its template (so on its pods): the template's hash."""
REVISION_ANNOTATION = "deployment.kubernetes.io/revision"
REVISION_HISTORY_ANNOTATION = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS_ANNOTATION = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS_ANNOTATION = "deployment.kubernetes.io/max-replicas"
NOT_COPIED = frozenset({
    "kubectl.kubernetes.io/last-applied-configuration", REVISION_ANNOTATION,
    REVISION_HISTORY_ANNOTATION, DESIRED_REPLICAS_ANNOTATION, MAX_REPLICAS_ANNOTATION,
    "deprecated.deployment.rollback.to", "jobmachine.dev/status",
})
"""The job's annotations a revision does not get (upstream's annotationsToSkip, and the
engine's record)."""
ROLLOUT_STATUS_FIELDS = (
    "observedGeneration", "replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
    "unavailableReplicas", "conditions", "collisionCount",
)
"""The status fields a rollout owns (the Deployment API's)."""
MAX_HISTORY_CHARS = 2000
"""Upstream's --deployment-controller revision history length cap (MaxRevHistoryLengthInChars)."""

Obj = Mapping[str, Any]


@dataclass
class Revision:
    """A child the job owns (its controller reference), as the rollout judges it; `replicas`
    and `annotations` change as the plan scales it."""

    obj: Obj
    replicas: int
    annotations: dict[str, str]
    min_ready_seconds: int
    running_pods: int = 0
    """Its pods that have not ended, being deleted or not (Recreate waits for none)."""

    @classmethod
    def of(cls, obj: Obj, running_pods: int = 0) -> Revision:
        spec = obj.get("spec") or {}
        return cls(obj, int(spec.get("replicas", 1)),
                   dict(obj["metadata"].get("annotations") or {}),
                   int(spec.get("minReadySeconds") or 0), running_pods)

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def uid(self) -> str:
        return str(self.obj["metadata"].get("uid") or "")

    @property
    def created(self) -> tuple[str, str]:
        """Upstream's ReplicaSetsByCreationTimestamp: time, then name."""
        return (str(self.obj["metadata"].get("creationTimestamp") or ""), self.name)

    def count(self, key: str) -> int:
        """A status count (replicas, readyReplicas, availableReplicas); 0 when left out."""
        return int((self.obj.get("status") or {}).get(key) or 0)

    @property
    def revision(self) -> int:
        value = self.annotations.get(REVISION_ANNOTATION, "")
        return int(value) if value.isdigit() else 0

    @property
    def template(self) -> Obj:
        """The template without the hash label (upstream's EqualIgnoreHash compares so)."""
        return comparable_template((self.obj.get("spec") or {}).get("template") or {})

    @property
    def deleting(self) -> bool:
        return bool(self.obj["metadata"].get("deletionTimestamp"))


def comparable_template(template: Obj) -> Obj:
    """A template as two revisions are compared: the hash label and empty maps left out."""
    found = copy.deepcopy(dict(template))
    metadata = dict(found.get("metadata") or {})
    labels = {k: v for k, v in (metadata.get("labels") or {}).items() if k != HASH_LABEL}
    metadata.pop("labels", None)
    if labels:
        metadata["labels"] = labels
    metadata.pop("creationTimestamp", None)
    if metadata:
        found["metadata"] = metadata
    else:
        found.pop("metadata", None)
    return found


@dataclass(frozen=True)
class Create:
    """Make a revision: the whole object, and its replicas for the ScalingReplicaSet Event."""

    body: Obj
    replicas: int


@dataclass(frozen=True)
class Update:
    """Set a revision's replicas, annotations and minReadySeconds (a merge patch on the
    version read); `scaled_from` is its replicas before, for the Event."""

    name: str
    uid: str
    resource_version: str
    replicas: int
    annotations: Mapping[str, str]
    min_ready_seconds: int
    scaled_from: int


@dataclass(frozen=True)
class Delete:
    """Delete an old revision beyond the history limit."""

    name: str
    uid: str


Operation = Create | Update | Delete
