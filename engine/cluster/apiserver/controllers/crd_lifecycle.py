"""The lifecycle of stored CRDs: their types served at once, and withdrawn with their objects.

apiextensions-apiserver's establishing and finalizing controllers in one: a stored CRD's
types are served (the registry) as soon as it is accepted; a deleted CRD is marked
Terminating, every object of its types is deleted, and only then is its clean-up
finalizer dropped and the CRD removed.
"""

from __future__ import annotations

from loguru import logger

from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.registry.builtins import CRDS
from engine.cluster.apiserver.registry.crds import CLEANUP_FINALIZER, crd_types, type_key
from engine.cluster.apiserver.registry.deletion import DeleteOptions, delete, drop_finalizer
from engine.cluster.apiserver.registry.store import Store
from engine.cluster.apiserver.storage.objects import Change, Entry, Obj, TypeKey


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
