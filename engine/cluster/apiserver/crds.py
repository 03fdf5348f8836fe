"""CustomResourceDefinitions: acceptance, the types they serve, and their deletion.

A valid CRD is accepted at once: its status says `NamesAccepted` and
`Established`, and the registry serves its versions before the create answers,
so a client can use the new kind right away. Deleting a CRD deletes all its
objects (each honouring its own finalizers) and then the CRD, which withdraws
its types, as the real apiextensions server's cleanup finalizer does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from loguru import logger

from engine.cluster.apiserver.builtins import CRDS
from engine.cluster.apiserver.deletion import DeleteOptions, delete, drop_finalizer
from engine.cluster.apiserver.errors import ApiError, Cause, invalid
from engine.cluster.apiserver.objects import Change, Entry, Obj, TypeKey
from engine.cluster.apiserver.registry import Registry
from engine.cluster.apiserver.resources import ResourceType, ScalePaths

if TYPE_CHECKING:
    from engine.cluster.apiserver.store import Store

CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"


def type_key(crd: Obj) -> TypeKey:
    spec = crd.get("spec") or {}
    return (spec.get("group", ""), (spec.get("names") or {}).get("plural", ""))


def crd_types(crd: Obj) -> tuple[list[ResourceType], ResourceType]:
    """The served versions of a CRD and its storage version, as ResourceTypes."""
    spec = crd["spec"]
    names = spec["names"]
    storage: ResourceType | None = None
    served: list[ResourceType] = []
    for version in spec["versions"]:
        subresources = version.get("subresources") or {}
        scale = scale_paths(subresources.get("scale"))
        served_subresources = {"status"} if subresources.get("status") is not None else set()
        if scale is not None:
            served_subresources.add("scale")
        rt = ResourceType(
            group=spec["group"],
            version=version["name"],
            kind=names["kind"],
            plural=names["plural"],
            singular=names.get("singular") or names["kind"].lower(),
            namespaced=spec.get("scope", "Namespaced") == "Namespaced",
            short_names=tuple(names.get("shortNames") or ()),
            categories=tuple(names.get("categories") or ()),
            subresources=frozenset(served_subresources),
            schema=(version.get("schema") or {}).get("openAPIV3Schema"),
            printer_columns=tuple(version.get("additionalPrinterColumns") or ()),
            strategic_merge=False,
            scale=scale,
        )
        if version.get("served", True):
            served.append(rt)
        if version.get("storage"):
            storage = rt
    if storage is None:
        name = crd["metadata"]["name"]
        raise ValueError(f"CustomResourceDefinition {name} has no storage version")
    return served, storage


def scale_paths(scale: Any) -> ScalePaths | None:
    """A CRD version's `subresources.scale` (validated when the CRD was written), or None."""
    if not isinstance(scale, dict):
        return None
    return ScalePaths(
        spec_replicas=scale["specReplicasPath"],
        status_replicas=scale["statusReplicasPath"],
        label_selector=scale.get("labelSelectorPath") or "",
    )


def prepare_crd(obj: Obj, old: Obj | None, registry: Registry, *, now: str) -> Obj:
    """Give a validated CRD the status (names, conditions, stored versions) and the cleanup
    finalizer the real server gives it; a CRD may not redefine a built-in type."""
    plural = obj["spec"]["names"]["plural"]
    if registry.is_builtin(type_key(obj)):
        cause = Cause("spec.names.plural", f'Invalid value: "{plural}": a built-in resource')
        raise invalid(CRDS.group, CRDS.kind, obj["metadata"].get("name", ""), [cause])
    spec = obj["spec"]
    names = spec["names"]
    accepted = {
        "plural": names["plural"],
        "singular": names.get("singular") or names["kind"].lower(),
        "kind": names["kind"],
        "listKind": names.get("listKind") or f"{names['kind']}List",
        **({"shortNames": names["shortNames"]} if names.get("shortNames") else {}),
        **({"categories": names["categories"]} if names.get("categories") else {}),
    }
    previous = (old or obj).get("status") or {}
    stored = list(previous.get("storedVersions") or [])
    storage_version = next(v["name"] for v in spec["versions"] if v.get("storage"))
    if storage_version not in stored:
        stored.append(storage_version)
    status = {
        **previous,
        "acceptedNames": accepted,
        "storedVersions": stored,
        "conditions": _conditions(previous.get("conditions") or [], now),
    }
    metadata = dict(obj["metadata"])
    finalizers = metadata.get("finalizers") or []
    if old is None and CLEANUP_FINALIZER not in finalizers:
        metadata["finalizers"] = [*finalizers, CLEANUP_FINALIZER]
    return {**obj, "metadata": metadata, "status": status}


def _conditions(current: list[dict[str, Any]], now: str) -> list[dict[str, Any]]:
    wanted = {
        "NamesAccepted": ("NoConflicts", "no conflicts found"),
        "Established": ("InitialNamesAccepted", "the initial names have been accepted"),
    }
    conditions = [c for c in current if c.get("type") not in wanted or c.get("status") == "True"]
    present = {c.get("type") for c in conditions}
    for kind, (reason, message) in wanted.items():
        if kind not in present:
            conditions.append(
                {"type": kind, "status": "True", "lastTransitionTime": now, "reason": reason,
                 "message": message}
            )
    return conditions


class CrdLifecycle:
    """Serves each stored CRD's types, and runs the cleanup of deleted CRDs."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._cleaning: dict[TypeKey, str] = {}
        self._log = logger.bind(component="apiserver.crds")
        store.table.listen(self._on_change)

    def resume(self) -> None:
        for entry in list(self._store.table.bucket(CRDS.key).entries.values()):
            self._serve(entry.obj)

    def _on_change(self, change: Change) -> None:
        obj = change.entry.obj
        if change.key == CRDS.key:
            if change.type == "DELETED":
                self._withdraw(type_key(obj))
            else:
                self._serve(obj)
        elif change.type == "DELETED" and change.key in self._cleaning:
            self._queue(self._cleaning[change.key])

    def _serve(self, crd: Obj) -> None:
        try:
            served, storage = crd_types(crd)
        except (KeyError, TypeError, ValueError) as exc:
            self._log.error("cannot serve {}: {}", crd["metadata"].get("name"), exc)
            return
        self._store.registry.serve(served, storage)
        if crd["metadata"].get("deletionTimestamp"):
            self._cleaning[storage.key] = crd["metadata"]["name"]
            self._queue(crd["metadata"]["name"])

    def _withdraw(self, key: TypeKey) -> None:
        self._cleaning.pop(key, None)
        table = self._store.table
        for ns, name in list(table.bucket(key).entries):
            table.remove(key, ns, name)
        self._store.hub.close_type(key)
        self._store.registry.withdraw(key)

    def _queue(self, name: str) -> None:
        self._store.reactor.soon(lambda: self._cleanup(name))

    def _mark_terminating(self, entry: Entry) -> Entry:
        status = entry.obj.get("status") or {}
        conditions = status.get("conditions") or []
        if any(c.get("type") == "Terminating" for c in conditions):
            return entry
        terminating = {
            "type": "Terminating",
            "status": "True",
            "lastTransitionTime": self._store.now(),
            "reason": "InstanceDeletionInProgress",
            "message": (
                "CustomResourceDefinition marked for deletion; instance deletion in progress"
            ),
        }
        status = {**status, "conditions": [*conditions, terminating]}
        new = {**entry.obj, "status": status, "metadata": dict(entry.obj["metadata"])}
        return self._store.table.put(CRDS.key, new)

    def _cleanup(self, name: str) -> None:
        entry = self._store.table.get(CRDS.key, "", name)
        if entry is None or not entry.obj["metadata"].get("deletionTimestamp"):
            return
        entry = self._mark_terminating(entry)
        key = type_key(entry.obj)
        rt = self._store.registry.storage(key)
        bucket = self._store.table.bucket(key)
        for ns, obj_name in list(bucket.entries):
            current = bucket.entries.get((ns, obj_name))
            if rt is None or current is None or current.obj["metadata"].get("deletionTimestamp"):
                continue
            try:
                delete(self._store, rt, ns, obj_name, DeleteOptions(propagation="Background"))
            except ApiError as exc:
                self._log.warning("could not delete {}/{}: {}", ns, obj_name, exc)
        finalizers = entry.obj["metadata"].get("finalizers") or ()
        if not bucket.entries and CLEANUP_FINALIZER in finalizers:
            drop_finalizer(self._store, CRDS.key, entry, CLEANUP_FINALIZER)
