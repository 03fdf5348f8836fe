"""Deletion as the real API server does it: preconditions, finalizers, propagation policy,
graceful pod deletion and namespace termination.

An object whose deletion must wait (finalizers, a bound pod's grace period, a
namespace's content) gets `deletionTimestamp` and stays until the wait is over;
`ready_to_remove` is the one rule that says when that is. Propagation is
recorded as the `foregroundDeletion` / `orphan` finalizers the garbage
collector (gc.py) acts on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from engine.cluster.apiserver.errors import ApiError, bad_request
from engine.cluster.apiserver.registry.builtins import (
    INITIAL_NAMESPACES,
    NAMESPACES,
    PODS,
    PRIORITY_CLASSES,
    strategy_for,
)
from engine.cluster.apiserver.registry.priority_classes import check_deletable
from engine.cluster.apiserver.registry.resources import ResourceType
from engine.cluster.apiserver.registry.storage_keys import precondition_failed
from engine.cluster.apiserver.registry.writes import timestamp
from engine.cluster.apiserver.storage.objects import Entry, Obj, ObjectTable, TypeKey

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
POLICIES = ("Background", "Foreground", "Orphan")
DEFAULT_POD_GRACE = 30


class StoredObjects(Protocol):
    """What deletion needs of the store: its object table, its clock, and a read that
    raises NotFound (the store passes itself; deletion never imports it)."""

    table: ObjectTable
    clock: Callable[[], float]

    def get(self, rt: ResourceType, ns: str, name: str) -> Entry: ...


@dataclass(frozen=True)
class DeleteOptions:
    """What a DELETE asked for (body DeleteOptions and query parameters merged)."""

    propagation: str | None = None
    grace_period: int | None = None
    uid: str | None = None
    resource_version: str | None = None
    dry_run: bool = False


def ready_to_remove(key: TypeKey, obj: Obj) -> bool:
    """Deletion started, nothing holds it (finalizers, a namespace's content, a pod's grace)."""
    metadata = obj["metadata"]
    if not metadata.get("deletionTimestamp") or metadata.get("finalizers"):
        return False
    if key == NAMESPACES.key and (obj.get("spec") or {}).get("finalizers"):
        return False
    return not metadata.get("deletionGracePeriodSeconds")


def delete(
    store: StoredObjects,
    rt: ResourceType,
    ns: str,
    name: str,
    options: DeleteOptions,
    *,
    collection: bool = False,
) -> Entry:
    """Delete now, or start a deletion that waits; returns the object as it now is.

    `collection`: part of a deletecollection, which upstream runs past the system
    PriorityClasses' guard (it sits on their REST.Delete only).
    """
    entry = store.get(rt, ns, name)
    obj = entry.obj
    _check_preconditions(rt, obj, options)
    if rt.key == PRIORITY_CLASSES.key and not collection:
        check_deletable(name)
    if rt.key == NAMESPACES.key and name in INITIAL_NAMESPACES:
        raise ApiError(
            403,
            "Forbidden",
            f'namespaces "{name}" is forbidden: this namespace may not be deleted',
            {"name": name, "group": "", "kind": "namespaces"},
        )
    if options.propagation not in (None, *POLICIES):
        raise bad_request(
            f'propagationPolicy: Unsupported value: "{options.propagation}": supported values: '
            + ", ".join(f'"{p}"' for p in POLICIES)
        )
    grace = _grace_period(rt, obj, options)
    metadata = obj["metadata"]
    policy = options.propagation
    if policy is None and strategy_for(rt.key).orphan_by_default:
        policy = _default_orphan(metadata.get("finalizers") or [])
    finalizers = _finalizers_for(metadata.get("finalizers") or [], policy)
    if metadata.get("deletionTimestamp"):
        return _delete_again(
            store, rt, entry, finalizers=finalizers, grace=grace, options=options
        )
    holds = finalizers or (rt.key == NAMESPACES.key and (obj.get("spec") or {}).get("finalizers"))
    if not holds and not grace:
        return entry if options.dry_run else store.table.remove(rt.key, ns, name)
    new = {
        **obj,
        "metadata": {
            **metadata,
            "deletionTimestamp": timestamp(store.clock() + grace),
            "deletionGracePeriodSeconds": grace,
        },
    }
    if int(metadata.get("generation") or 0) > 0:  # a kind that keeps one: deletion moves it
        new["metadata"]["generation"] = int(metadata["generation"]) + 1
    if finalizers:
        new["metadata"]["finalizers"] = finalizers
    if rt.key == NAMESPACES.key:
        new["status"] = {**(obj.get("status") or {}), "phase": "Terminating"}
    return Entry(new) if options.dry_run else store.table.put(rt.key, new)


def _delete_again(
    store: StoredObjects,
    rt: ResourceType,
    entry: Entry,
    *,
    finalizers: list[str],
    grace: int,
    options: DeleteOptions,
) -> Entry:
    """A DELETE of an object already being deleted may shorten a pod's grace period and
    switch the propagation finalizers; nothing else."""
    obj = entry.obj
    metadata = obj["metadata"]
    changes: dict[str, object] = {}
    if finalizers != list(metadata.get("finalizers") or []):
        changes["finalizers"] = finalizers
    current = metadata.get("deletionGracePeriodSeconds") or 0
    if rt.key == PODS.key and grace < current:
        changes["deletionGracePeriodSeconds"] = grace
        changes["deletionTimestamp"] = timestamp(store.clock() + grace)
    if not changes or options.dry_run:
        return entry
    stored = store.table.put(rt.key, {**obj, "metadata": {**metadata, **changes}})
    return remove_if_ready(store, rt.key, stored)


def remove_if_ready(store: StoredObjects, key: TypeKey, entry: Entry) -> Entry:
    if not ready_to_remove(key, entry.obj):
        return entry
    metadata = entry.obj["metadata"]
    return store.table.remove(key, metadata.get("namespace") or "", metadata["name"])


def drop_finalizer(store: StoredObjects, key: TypeKey, entry: Entry, finalizer: str) -> Entry:
    """Remove one finalizer (the server's own duties do this), deleting the object if that
    was the last thing holding it."""
    metadata = entry.obj["metadata"]
    finalizers = [f for f in metadata.get("finalizers") or () if f != finalizer]
    new = {**entry.obj, "metadata": {**metadata, "finalizers": finalizers}}
    if not finalizers:
        del new["metadata"]["finalizers"]
    return remove_if_ready(store, key, store.table.put(key, new))


def _default_orphan(current: list[str]) -> str | None:
    """The policy of a DELETE without one, for a kind that orphans by default: a propagation
    finalizer already on the object decides (upstream's shouldOrphanDependents), else Orphan."""
    if FOREGROUND in current or ORPHAN in current:
        return None
    return "Orphan"


def _finalizers_for(current: list[str], policy: str | None) -> list[str]:
    finalizers = list(current)
    if policy == "Foreground":
        finalizers = [f for f in finalizers if f != ORPHAN]
        if FOREGROUND not in finalizers:
            finalizers.append(FOREGROUND)
    elif policy == "Orphan":
        finalizers = [f for f in finalizers if f != FOREGROUND]
        if ORPHAN not in finalizers:
            finalizers.append(ORPHAN)
    elif policy == "Background":
        finalizers = [f for f in finalizers if f not in (FOREGROUND, ORPHAN)]
    return finalizers


def _grace_period(rt: ResourceType, obj: Obj, options: DeleteOptions) -> int:
    """Only pods bound to a node and still running wait out a grace period."""
    if rt.key != PODS.key:
        return 0
    spec = obj.get("spec") or {}
    phase = (obj.get("status") or {}).get("phase")
    if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
        return 0
    if options.grace_period is not None:
        return max(0, options.grace_period)
    grace = spec.get("terminationGracePeriodSeconds")
    return DEFAULT_POD_GRACE if grace is None else max(0, int(grace))


def _check_preconditions(rt: ResourceType, obj: Obj, options: DeleteOptions) -> None:
    metadata = obj["metadata"]
    name = metadata["name"]
    namespace = metadata.get("namespace", "")
    if options.uid and options.uid != metadata.get("uid"):
        raise precondition_failed(rt, namespace, name, "UID", wanted=options.uid,
                                  actual=metadata.get("uid"))
    if options.resource_version and options.resource_version != metadata["resourceVersion"]:
        raise precondition_failed(rt, namespace, name, "ResourceVersion",
                                  wanted=options.resource_version,
                                  actual=metadata["resourceVersion"])
