"""Namespace termination: a deleted namespace empties itself, then goes.

The real namespace controller's job: once a namespace has its
deletionTimestamp (phase Terminating, new content refused with 403), every
object in it is deleted; when the last one is gone the `kubernetes` spec
finalizer is dropped and the namespace removed. Objects that wait (finalizers,
pods in their grace period) hold the namespace until they are gone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loguru import logger

from engine.cluster.apiserver.admission.defaults import NAMESPACE_FINALIZER
from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.registry.builtins import NAMESPACES
from engine.cluster.apiserver.registry.deletion import DeleteOptions, delete, remove_if_ready
from engine.cluster.apiserver.storage.objects import Change

if TYPE_CHECKING:
    from engine.cluster.apiserver.registry.store import Store


class NamespaceTerminator:
    """Empties and removes namespaces that are being deleted."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._terminating: set[str] = set()
        self._queued: set[str] = set()
        self._log = logger.bind(component="apiserver.namespaces")
        store.table.listen(self._on_change)

    def resume(self) -> None:
        for (_, name), entry in list(self._store.table.bucket(NAMESPACES.key).entries.items()):
            if entry.obj["metadata"].get("deletionTimestamp"):
                self._terminating.add(name)
                self._queue(name)

    def _on_change(self, change: Change) -> None:
        metadata = change.entry.obj["metadata"]
        if change.key == NAMESPACES.key:
            if change.type == "DELETED":
                self._terminating.discard(metadata["name"])
            elif metadata.get("deletionTimestamp"):
                self._terminating.add(metadata["name"])
                self._queue(metadata["name"])
        elif change.type == "DELETED" and metadata.get("namespace") in self._terminating:
            self._queue(metadata["namespace"])

    def _queue(self, name: str) -> None:
        if name not in self._queued:
            self._queued.add(name)
            self._store.reactor.soon(lambda: self._sweep(name))

    def _sweep(self, name: str) -> None:
        self._queued.discard(name)
        table = self._store.table
        namespace = table.get(NAMESPACES.key, "", name)
        if namespace is None or not namespace.obj["metadata"].get("deletionTimestamp"):
            return
        for key in self._store.registry.namespaced_keys():
            rt = self._store.registry.storage(key)
            bucket = table.bucket(key)
            if rt is None or not bucket.namespaces.get(name):
                continue
            for ns, obj_name in list(bucket.keys_after(name, None)):
                entry = bucket.entries.get((ns, obj_name))
                if entry is None or entry.obj["metadata"].get("deletionTimestamp"):
                    continue
                try:
                    delete(self._store, rt, ns, obj_name, DeleteOptions(propagation="Background"))
                except ApiError as exc:
                    self._log.warning("could not delete {}/{}: {}", ns, obj_name, exc)
        if any(table.bucket(key).namespaces.get(name) for key in table.type_keys()):
            return
        self._finalize(name)

    def _finalize(self, name: str) -> None:
        namespace = self._store.table.get(NAMESPACES.key, "", name)
        if namespace is None:
            return
        spec = dict(namespace.obj.get("spec") or {})
        finalizers = list(spec.get("finalizers") or ())
        if NAMESPACE_FINALIZER not in finalizers:
            # Already drained; only someone else's finalizer holds it. Writing again would
            # queue another sweep, and so on forever.
            remove_if_ready(self._store, NAMESPACES.key, namespace)
            return
        spec["finalizers"] = [f for f in finalizers if f != NAMESPACE_FINALIZER]
        new = {**namespace.obj, "spec": spec, "metadata": dict(namespace.obj["metadata"])}
        remove_if_ready(self._store, NAMESPACES.key, self._store.table.put(NAMESPACES.key, new))
