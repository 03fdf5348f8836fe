"""Graceful pod deletion: when a deleted pod's grace period runs out, it is removed.

kube-apiserver leaves that to the kubelet's zero-grace DELETE; the embedded cluster's node
may be gone, so the server ends the grace period itself (once no finalizer holds the pod).
"""

from __future__ import annotations

from engine.cluster.apiserver.registry.builtins import PODS
from engine.cluster.apiserver.registry.deletion import remove_if_ready
from engine.cluster.apiserver.registry.store import Store
from engine.cluster.apiserver.registry.writes import parse_timestamp
from engine.cluster.apiserver.storage.objects import Change, Obj


class GracePeriods:
    """Ends the grace period of pods being deleted: when it runs out the pod is removed
    (once no finalizer holds it), as when its node confirms with a zero-grace DELETE."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._armed: set[tuple[str, str]] = set()
        store.table.listen(self._on_change)

    def resume(self) -> None:
        for entry in list(self._store.table.bucket(PODS.key).entries.values()):
            self._arm(entry.obj)

    def _on_change(self, change: Change) -> None:
        if change.key == PODS.key and change.type != "DELETED":
            self._arm(change.entry.obj)

    def _arm(self, obj: Obj) -> None:
        metadata = obj["metadata"]
        deadline = metadata.get("deletionTimestamp")
        if not deadline or not metadata.get("deletionGracePeriodSeconds"):
            return
        token = (metadata["uid"], deadline)
        if token in self._armed:
            return
        self._armed.add(token)
        delay = parse_timestamp(deadline) - self._store.clock()
        self._store.reactor.later(delay, lambda: self._expire(obj, token))

    def _expire(self, obj: Obj, token: tuple[str, str]) -> None:
        self._armed.discard(token)
        metadata = obj["metadata"]
        entry = self._store.table.get(PODS.key, metadata["namespace"], metadata["name"])
        if entry is None or entry.obj["metadata"].get("uid") != metadata["uid"]:
            return
        current = entry.obj["metadata"]
        if current.get("deletionTimestamp") != token[1] or not current.get(
            "deletionGracePeriodSeconds"
        ):
            return
        new = {**entry.obj, "metadata": {**current, "deletionGracePeriodSeconds": 0}}
        remove_if_ready(self._store, PODS.key, self._store.table.put(PODS.key, new))
