"""The garbage collector: cascading deletion through ownerReferences.

Dependents whose owners (by uid) are all gone are deleted (Background); an
owner being deleted in the foreground keeps its `foregroundDeletion` finalizer
until no dependent with `blockOwnerDeletion: true` is left; an owner deleted
with `orphan` first has its ownerReferences removed from every dependent. The
owner index lives in the object table, and `scan` redoes everything pending
after a restart, so no duty is lost with the process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loguru import logger

from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.registry.deletion import (
    FOREGROUND,
    ORPHAN,
    DeleteOptions,
    delete,
    drop_finalizer,
)
from engine.cluster.apiserver.storage.objects import Change, Entry, Obj, Ref, owner_uids

if TYPE_CHECKING:
    from engine.cluster.apiserver.registry.store import Store


def _finalizers(obj: Obj) -> list[str]:
    return list(obj["metadata"].get("finalizers") or ())


def _waiting_for_dependents(obj: Obj) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp")) and FOREGROUND in _finalizers(obj)


class GarbageCollector:
    """Watches the table's changes and settles the owners and dependents they concern."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._table = store.table
        self._pending: set[str] = set()
        self._scheduled = False
        self._log = logger.bind(component="apiserver.gc")
        self._table.listen(self._on_change)

    def scan(self) -> None:
        """Settle every owner and dependent (at start-up, after the journal is replayed)."""
        for uid, ref in list(self._table.uids.items()):
            entry = self._table.get(*ref)
            if entry is not None and entry.obj["metadata"].get("deletionTimestamp"):
                self._pending.add(uid)
        self._pending.update(self._table.dependents)
        self._schedule()

    def _on_change(self, change: Change) -> None:
        obj = change.entry.obj
        uid = obj["metadata"].get("uid")
        owners = owner_uids(obj)
        if change.type == "DELETED":
            if uid:
                self._pending.add(uid)
            self._pending.update(owners)
        else:
            before = owner_uids(change.prev.obj) if change.prev else set()
            # Owners a dependent stopped pointing at may be waiting for it.
            self._pending.update(before - owners)
            if owners and owners != before:
                self._pending.update(owners)
            finalizers = _finalizers(obj)
            if obj["metadata"].get("deletionTimestamp") and (
                FOREGROUND in finalizers or ORPHAN in finalizers
            ) and uid:
                self._pending.add(uid)
        if self._pending:
            self._schedule()

    def _schedule(self) -> None:
        if not self._scheduled:
            self._scheduled = True
            self._store.reactor.soon(self._run)

    def _run(self) -> None:
        self._scheduled = False
        pending, self._pending = self._pending, set()
        for uid in pending:
            try:
                self._settle(uid)
            except ApiError as exc:
                self._log.warning("could not settle owner {}: {}", uid, exc)

    def _settle(self, uid: str) -> None:
        owner = self._table.by_uid(uid)
        if owner is None:
            for ref in list(self._table.dependents.get(uid, ())):
                self._collect(ref)
            return
        finalizers = _finalizers(owner.obj)
        if not owner.obj["metadata"].get("deletionTimestamp"):
            return
        if ORPHAN in finalizers:
            self._orphan(uid, owner)
        elif FOREGROUND in finalizers:
            self._delete_dependents(uid, owner)

    def _collect(self, ref: Ref) -> None:
        """Delete a dependent whose owners are all gone; drop its dangling references when
        it still has a live owner."""
        entry = self._table.get(*ref)
        if entry is None:
            return
        owners = owner_uids(entry.obj)
        alive = {uid for uid in owners if self._table.by_uid(uid) is not None}
        if not alive:
            self._delete(ref, entry, foreground=False)
        elif alive != owners:
            self._drop_owner_refs(ref, entry, owners - alive)

    def _orphan(self, uid: str, owner: Entry) -> None:
        for ref in list(self._table.dependents.get(uid, ())):
            entry = self._table.get(*ref)
            if entry is not None:
                self._drop_owner_refs(ref, entry, {uid})
        drop_finalizer(self._store, self._ref_of(owner)[0], owner, ORPHAN)

    def _delete_dependents(self, uid: str, owner: Entry) -> None:
        blocking = False
        for ref in list(self._table.dependents.get(uid, ())):
            entry = self._table.get(*ref)
            if entry is None:
                continue
            solid = {
                other
                for other in owner_uids(entry.obj) - {uid}
                if (found := self._table.by_uid(other)) is not None
                and not _waiting_for_dependents(found.obj)
            }
            if solid:
                self._drop_owner_refs(ref, entry, {uid})
                continue
            if not entry.obj["metadata"].get("deletionTimestamp"):
                self._delete(ref, entry, foreground=bool(self._table.dependents.get(
                    entry.obj["metadata"].get("uid", ""))))
            if self._blocks(ref, uid):
                blocking = True
        if not blocking:
            current = self._table.by_uid(uid)
            if current is not None and FOREGROUND in _finalizers(current.obj):
                drop_finalizer(self._store, self._ref_of(current)[0], current, FOREGROUND)

    def _blocks(self, ref: Ref, owner_uid: str) -> bool:
        entry = self._table.get(*ref)
        if entry is None:
            return False
        refs = entry.obj["metadata"].get("ownerReferences") or ()
        return any(r.get("uid") == owner_uid and r.get("blockOwnerDeletion") for r in refs)

    def _delete(self, ref: Ref, entry: Entry, *, foreground: bool) -> None:
        key, ns, name = ref
        rt = self._store.registry.storage(key)
        if rt is None:
            return
        options = DeleteOptions(
            propagation="Foreground" if foreground else "Background",
            uid=entry.obj["metadata"].get("uid"),
        )
        delete(self._store, rt, ns, name, options)

    def _drop_owner_refs(self, ref: Ref, entry: Entry, uids: set[str]) -> None:
        metadata = entry.obj["metadata"]
        kept = [r for r in metadata.get("ownerReferences") or () if r.get("uid") not in uids]
        new_meta = {**metadata, "ownerReferences": kept}
        if not kept:
            del new_meta["ownerReferences"]
        self._table.put(ref[0], {**entry.obj, "metadata": new_meta})

    def _ref_of(self, entry: Entry) -> Ref:
        return self._table.uids[entry.obj["metadata"]["uid"]]
