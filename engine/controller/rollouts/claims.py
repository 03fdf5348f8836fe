"""Which revisions belong to a job: its controller reference, and its selector.

As upstream's getReplicaSetsForDeployment (ReplicaSetControllerRefManager.ClaimReplicaSets):
an orphan of the kind in the job's namespace whose labels the job's selector matches (and
that is not being deleted) is adopted, after one uncached read of the job proves it is the
same job and not being deleted; a revision of the job's whose labels stop matching is
released (its controller reference goes), unless the job is being deleted; revisions
another controller owns are left alone. Each patch carries the revision's uid as a
precondition.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loguru import logger

from engine.controller.reconcile.children import controller_uid, owner_reference
from engine.controller.reconcile.claims import AdoptionGuard
from engine.controller.reconcile.selectors import selector_matches
from engine.kube.cache import Cache
from engine.kube.client import KubeClient
from engine.kube.errors import NotFound, Replaced
from engine.kube.resources import Resource

Obj = Mapping[str, Any]


def claim_revisions(client: KubeClient, resource: Resource, cache: Cache, job: Obj, *,
                    selector: Mapping[str, Any], guard: AdoptionGuard) -> list[Obj]:
    """The job's revisions, orphans the selector matches adopted, and those that stopped
    matching released."""
    metadata = job["metadata"]
    uid, namespace = metadata["uid"], metadata["namespace"]
    deleting = bool(metadata.get("deletionTimestamp"))
    found: list[Obj] = []
    for obj in cache.list():
        if obj["metadata"].get("namespace") != namespace:
            continue
        owner = controller_uid(obj)
        matches = bool(selector) and selector_matches(
            selector, obj["metadata"].get("labels") or {})
        if owner == uid:
            if matches or deleting:
                found.append(obj)
            else:
                _release(client, resource, obj, job)
        elif (owner is None and matches and not deleting
              and not obj["metadata"].get("deletionTimestamp") and guard.may_adopt()):
            adopted = _patch(client, resource, obj, [
                *(obj["metadata"].get("ownerReferences") or []), owner_reference(job)])
            if adopted is not None:
                _log(job).info(f"adopted {resource.kind} {obj['metadata']['name']}")
                found.append(adopted)
    return found


def _release(client: KubeClient, resource: Resource, obj: Obj, job: Obj) -> None:
    kept = [r for r in obj["metadata"].get("ownerReferences") or ()
            if r.get("uid") != job["metadata"]["uid"]]
    if _patch(client, resource, obj, kept) is not None:
        _log(job).info(f"released {resource.kind} {obj['metadata']['name']}: the selector "
                       "no longer matches it")


def _patch(client: KubeClient, resource: Resource, obj: Obj, references: list[Any]
           ) -> Obj | None:
    """The revision with these owner references (its uid as precondition); None when it is
    gone, or its name holds another revision now."""
    metadata = obj["metadata"]
    patch = {"metadata": {"uid": metadata["uid"], "ownerReferences": references}}
    try:
        return client.patch(resource, metadata["name"], patch, namespace=metadata["namespace"])
    except (NotFound, Replaced):
        return None


def _log(job: Obj) -> Any:
    return logger.bind(job=f"{job['metadata']['namespace']}/{job['metadata']['name']}")
