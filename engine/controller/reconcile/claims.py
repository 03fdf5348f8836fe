"""Which pods, services and child objects belong to a job: by ownerReference first, by labels
second.

Field notes, stories 1 and 2: a child our controller reference names is ours
even when its labels drifted (we relabel it, never release it); an orphan whose
labels match is adopted with a uid precondition, and only after one uncached
read of the job proves it is the same job and not being deleted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loguru import logger

from engine.controller.reconcile.children import (
    JOB_NAME_LABEL,
    JOB_UID_LABEL,
    TRACKING_FINALIZER,
    ReplicaId,
    child_labels,
    child_name,
    controller_uid,
    owner_reference,
    replica_of,
)
from engine.controller.reconcile.objects import OBJECT_LABEL
from engine.controller.reconcile.selectors import selector_matches
from engine.kube.cache import Cache
from engine.kube.client import KubeClient
from engine.kube.errors import Conflict, NotFound, Replaced
from engine.kube.resources import PODS, Resource

Obj = Mapping[str, Any]
_OUR_LABEL_PREFIX = "jobmachine.dev/"


@dataclass(frozen=True)
class Claimed:
    """A job's children of one resource, by replica."""

    by_replica: Mapping[ReplicaId, Obj]
    unplaced: tuple[Obj, ...] = ()
    """Ours, but naming no replica the job has (a removed type): to be deleted."""
    resource: Resource = PODS
    """What they are: pods, services, or spec.child's kind."""
    spare: tuple[Obj, ...] = ()
    """With interchangeable pods (pod.naming Generated): ours, not yet given an index (an
    adopted orphan, a second pod labelled with a taken index); `placement` places them."""
    surplus: tuple[tuple[str, Obj], ...] = ()
    """With interchangeable pods: (replica type, pod) of the active pods beyond their
    type's replicas, in the order they are deleted (`placement`)."""


class AdoptionGuard:
    """The fresh-read guard: one uncached GET of the job per reconcile, and only if needed."""

    def __init__(self, client: KubeClient, resource: Resource, job: Obj) -> None:
        self._client = client
        self._resource = resource
        self._job = job
        self._verdict: bool | None = None

    def may_adopt(self) -> bool:
        """Whether the job, read fresh, is the same job and is not being deleted."""
        if self._verdict is None:
            self._verdict = self._read()
        return self._verdict

    def _read(self) -> bool:
        metadata = self._job["metadata"]
        try:
            fresh = self._client.get(self._resource, metadata["name"], metadata["namespace"])
        except NotFound:
            return False
        same = fresh["metadata"].get("uid") == metadata["uid"]
        deleting = fresh["metadata"].get("deletionTimestamp") is not None
        if same and deleting:
            logger.bind(job=f"{metadata['namespace']}/{metadata['name']}").info(
                "not adopting orphans: the job is being deleted"
            )
        return same and not deleting


class ClaimedBefore:
    """One job's children as its last claim found them: each that was ours already, named
    a replica and needed no patch, by uid, with the very object the cache held then. While
    the cache holds that object (it replaces it on every change) and the job's name, uid
    and replica types are those of then, the child is the same replica's, unpatched, and
    a claim need not work it out again (issue 33.3: a pass over a wide job)."""

    def __init__(self) -> None:
        self._of: tuple[Any, ...] = ()
        self.children: dict[str, tuple[Obj, ReplicaId]] = {}

    def for_job(self, job: Obj, replica_types: Sequence[str]) -> dict[str, tuple[Obj, ReplicaId]]:
        """The children kept for this job and these replica types (none after a change)."""
        metadata = job["metadata"]
        of = (metadata["name"], metadata["uid"], tuple(replica_types))
        if of != self._of:
            self._of, self.children = of, {}
        return self.children


def claim(
    client: KubeClient,
    resource: Resource,
    cache: Cache,
    job: Obj,
    *,
    replica_types: Sequence[str],
    guard: AdoptionGuard,
    selector: Mapping[str, Any] | None = None,
    before: ClaimedBefore | None = None,
) -> Claimed:
    """The job's children of `resource`, adopting matching orphans and relabelling drifted ones.

    With a `selector` (governs.selector; its one replica type's pods are interchangeable)
    the claim is upstream's PodControllerRefManager's: an orphan in the namespace that the
    selector matches is adopted, one of ours that it no longer matches is released, and
    ours without an index of their own are `spare`. `before`: the job's children as its
    last claim found them (without a selector), kept up to date here."""
    metadata = job["metadata"]
    uid = metadata["uid"]
    candidates = _candidates(cache, job, selector)
    kept = ({} if before is None or selector is not None
            else before.for_job(job, replica_types))
    found: dict[str, tuple[Obj, ReplicaId]] = {}
    by_replica: dict[ReplicaId, Obj] = {}
    unplaced: list[Obj] = []
    spare: list[Obj] = []
    for candidate in candidates.values():
        known = kept.get(candidate["metadata"]["uid"])
        if known is not None and known[0] is candidate:
            found[candidate["metadata"]["uid"]] = known
            _place(by_replica, known[1], candidate, metadata["name"])
            continue
        owner = controller_uid(candidate)
        if owner is not None and owner != uid:
            continue
        if OBJECT_LABEL in (candidate["metadata"].get("labels") or {}):
            continue  # a declared object (spec.objects: JobSet's Service), not a replica's

        obj = candidate
        if selector is not None:
            if owner is not None and not _selected(obj, selector):
                _release(client, resource, obj, job)
                continue
            adoptable = _selected(obj, selector) and not obj["metadata"].get("deletionTimestamp")
        else:
            adoptable = _matches(obj, job)
        if owner is None and (not adoptable or not guard.may_adopt()):
            continue
        replica = _replica(obj, job, replica_types)
        if owner is None:
            obj = _adopt(client, resource, obj, job, replica)
        if replica is None and selector is not None:
            spare.append(obj)
            continue
        if replica is None:
            unplaced.append(obj)
            continue
        relabelled = relabel_if_drifted(client, resource, obj, job, replica)
        if owner is not None and relabelled is obj:
            found[obj["metadata"]["uid"]] = (obj, replica)
        obj = relabelled
        if by_replica.get(replica) is not None and selector is not None:
            spare.append(obj)  # two pods labelled with one index: placement sorts them out
        else:
            _place(by_replica, replica, obj, metadata["name"])
    if before is not None and selector is None:
        before.children = found
    return Claimed(by_replica, tuple(unplaced), resource, spare=tuple(spare))


def _place(by_replica: dict[ReplicaId, Obj], replica: ReplicaId, obj: Obj, job_name: str
           ) -> None:
    """The replica's child is the first found, unless another has the replica's own name."""
    if replica not in by_replica or obj["metadata"]["name"] == child_name(job_name, replica):
        by_replica[replica] = obj


def _candidates(cache: Cache, job: Obj, selector: Mapping[str, Any] | None) -> dict[str, Obj]:
    """By uid, the children the job's controller reference names, those labelled with its
    name, and with a selector the orphans of its namespace it matches."""
    metadata = job["metadata"]
    found: dict[str, Obj] = {o["metadata"]["uid"]: o for o in cache.by_owner(metadata["uid"])}
    for labelled in cache.by_label(metadata["namespace"], JOB_NAME_LABEL, metadata["name"]):
        found.setdefault(labelled["metadata"]["uid"], labelled)
    if selector is not None:
        for orphan in cache.list(metadata["namespace"]):
            if controller_uid(orphan) is None and _selected(orphan, selector):
                found.setdefault(orphan["metadata"]["uid"], orphan)
    return found


def _selected(obj: Obj, selector: Mapping[str, Any]) -> bool:
    return selector_matches(selector, obj["metadata"].get("labels") or {})


def _release(client: KubeClient, resource: Resource, obj: Obj, job: Obj) -> None:
    """Upstream's release of a pod that stopped matching the selector: our controller
    reference goes, and with it our labels and tracking finalizer (nobody would remove it
    later), in one patch with the pod's uid as precondition. A pod gone already (or
    replaced by another of its name) is done."""
    metadata = obj["metadata"]
    uid = job["metadata"]["uid"]
    patch: dict[str, Any] = {"metadata": {
        "uid": metadata["uid"],
        "ownerReferences": [r for r in metadata.get("ownerReferences") or ()
                            if r.get("uid") != uid],
        "labels": {key: None for key in metadata.get("labels") or {}
                   if key.startswith(_OUR_LABEL_PREFIX)},
    }}
    if TRACKING_FINALIZER in (metadata.get("finalizers") or ()):
        patch["metadata"]["finalizers"] = [f for f in metadata["finalizers"]
                                           if f != TRACKING_FINALIZER]
    try:
        client.patch(resource, metadata["name"], patch, namespace=metadata["namespace"])
    except (NotFound, Replaced):
        return
    logger.bind(job=f"{job['metadata']['namespace']}/{job['metadata']['name']}").info(
        f"released {resource.kind} {metadata['name']}: the selector no longer matches it")


def _matches(obj: Obj, job: Obj) -> bool:
    """An orphan is a candidate when its job labels name this job (and not another uid)."""
    if obj["metadata"].get("deletionTimestamp"):
        return False
    labels = obj["metadata"].get("labels") or {}
    uid_label = labels.get(JOB_UID_LABEL)
    return labels.get(JOB_NAME_LABEL) == job["metadata"]["name"] and uid_label in (
        None,
        job["metadata"]["uid"],
    )


def _replica(obj: Obj, job: Obj, replica_types: Iterable[str]) -> ReplicaId | None:
    """The replica from the labels, else from the deterministic name."""
    types = {t.lower(): t for t in replica_types}
    replica = replica_of(obj)
    if replica is not None and replica.type in types.values():
        return replica
    prefix = job["metadata"]["name"] + "-"
    name = obj["metadata"]["name"]
    if not name.startswith(prefix):
        return None
    lowered, _, index = name[len(prefix):].rpartition("-")
    if lowered in types and index.isdigit():
        return ReplicaId(types[lowered], int(index))
    return None


def _adopt(
    client: KubeClient, resource: Resource, obj: Obj, job: Obj, replica: ReplicaId | None
) -> Obj:
    """Owner reference and replica labels in one patch, so no reader sees one without the other."""
    references = [*(obj["metadata"].get("ownerReferences") or []), owner_reference(job)]
    metadata: dict[str, Any] = {"uid": obj["metadata"]["uid"], "ownerReferences": references}
    if replica is not None:
        metadata["labels"] = child_labels(job, replica)
    patch = {"metadata": metadata}
    adopted = _patch(client, resource, obj, patch)
    logger.bind(job=f"{job['metadata']['namespace']}/{job['metadata']['name']}").info(
        f"adopted {resource.kind} {obj['metadata']['name']}"
    )
    return adopted


def relabel_if_drifted(
    client: KubeClient, resource: Resource, obj: Obj, job: Obj, replica: ReplicaId
) -> Obj:
    """The child with the replica's labels: patched (uid precondition) when they differ."""
    wanted = child_labels(job, replica)
    labels = obj["metadata"].get("labels") or {}
    if all(labels.get(k) == v for k, v in wanted.items()):
        return obj
    patch = {"metadata": {"uid": obj["metadata"]["uid"], "labels": wanted}}
    relabelled = _patch(client, resource, obj, patch)
    logger.bind(job=f"{job['metadata']['namespace']}/{job['metadata']['name']}").info(
        f"relabelled {resource.kind} {obj['metadata']['name']} (its labels had drifted)"
    )
    return relabelled


def _patch(client: KubeClient, resource: Resource, obj: Obj, patch: Obj) -> Obj:
    """A merge patch with the object's uid as precondition; a vanished object (gone, or its
    name holding another now) raises Conflict."""
    metadata = obj["metadata"]
    try:
        return client.patch(resource, metadata["name"], patch, namespace=metadata["namespace"])
    except (NotFound, Replaced) as exc:
        raise Conflict(409, "Conflict", f"{metadata['name']} vanished while claiming", {}) from exc
