"""The in-memory object table: every stored object, the resourceVersion counter, and indexes.

Objects are stored as plain dicts that are never mutated once stored (a write
stores a new dict), so readers, watch events and the journal share them
without copies, and each object is JSON-encoded at most once. Every change goes
through `put` or `remove`, which bump the server-wide counter and tell the
listeners (watch hub, journal, controllers) in commit order.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

TypeKey = tuple[str, str]  # (group, plural): storage identity of a resource type
ObjKey = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped objects
Obj = dict[str, Any]
Ref = tuple[TypeKey, str, str]  # (type key, namespace, name)


class Entry:
    """A stored object and its JSON encoding, computed once on first use."""

    __slots__ = ("_raw", "obj")

    def __init__(self, obj: Obj, raw: bytes | None = None) -> None:
        self.obj = obj
        self._raw = raw

    def raw(self) -> bytes:
        if self._raw is None:
            # orjson hands back its whole output buffer (4 KiB for an 800-byte event, 8 KiB
            # for a 5 KB pod); a copy of the exact size is what is worth keeping.
            self._raw = bytes(memoryview(orjson.dumps(self.obj)))
        return self._raw


@dataclass(frozen=True, slots=True)
class Change:
    """One committed write, as the watch hub, the journal and the controllers see it."""

    key: TypeKey
    type: str  # ADDED | MODIFIED | DELETED
    entry: Entry
    prev: Entry | None
    rv: int


Listener = Callable[[Change], None]


def object_key(obj: Obj) -> ObjKey:
    metadata = obj["metadata"]
    return (metadata.get("namespace") or "", metadata["name"])


def owner_uids(obj: Obj) -> set[str]:
    refs = obj["metadata"].get("ownerReferences") or ()
    return {ref["uid"] for ref in refs if isinstance(ref, dict) and ref.get("uid")}


class Bucket:
    """The objects of one type, with a sorted key list kept for paging."""

    __slots__ = ("_sorted", "entries", "namespaces")

    def __init__(self) -> None:
        self.entries: dict[ObjKey, Entry] = {}
        self.namespaces: Counter[str] = Counter()
        self._sorted: list[ObjKey] | None = None

    def sorted_keys(self) -> list[ObjKey]:
        if self._sorted is None:
            self._sorted = sorted(self.entries)
        return self._sorted

    def keys_after(self, namespace: str | None, after: ObjKey | None) -> Iterator[ObjKey]:
        """Keys in order, within `namespace` when given, strictly after `after`."""
        keys = self.sorted_keys()
        if after is not None:
            start = bisect_right(keys, after)
        elif namespace is not None:
            start = bisect_left(keys, (namespace, ""))
        else:
            start = 0
        for index in range(start, len(keys)):
            key = keys[index]
            if namespace is not None and key[0] != namespace:
                if key[0] > namespace:
                    return
                continue
            yield key

    def set(self, key: ObjKey, entry: Entry) -> Entry | None:
        prev = self.entries.get(key)
        self.entries[key] = entry
        if prev is None:
            self.namespaces[key[0]] += 1
            self._sorted = None
        return prev

    def pop(self, key: ObjKey) -> Entry | None:
        prev = self.entries.pop(key, None)
        if prev is not None:
            self.namespaces[key[0]] -= 1
            if not self.namespaces[key[0]]:
                del self.namespaces[key[0]]
            self._sorted = None
        return prev


class ObjectTable:
    """All stored objects, the resourceVersion counter and the uid and owner indexes."""

    def __init__(self) -> None:
        self.rv = 0
        self._buckets: dict[TypeKey, Bucket] = {}
        self.uids: dict[str, Ref] = {}
        self.dependents: dict[str, set[Ref]] = {}
        self._listeners: list[Listener] = []

    def listen(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def bucket(self, key: TypeKey) -> Bucket:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = Bucket()
        return bucket

    def type_keys(self) -> list[TypeKey]:
        return list(self._buckets)

    def get(self, key: TypeKey, ns: str, name: str) -> Entry | None:
        bucket = self._buckets.get(key)
        return bucket.entries.get((ns, name)) if bucket else None

    def by_uid(self, uid: str) -> Entry | None:
        ref = self.uids.get(uid)
        return self.get(*ref) if ref else None

    def put(self, key: TypeKey, obj: Obj) -> Entry:
        """Store `obj` (a dict the caller hands over) under a new resourceVersion."""
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        entry = Entry(obj)
        prev = self._store(key, entry)
        self._notify(Change(key, "MODIFIED" if prev else "ADDED", entry, prev, self.rv))
        return entry

    def remove(self, key: TypeKey, ns: str, name: str) -> Entry:
        """Delete an object; its last state carries the deletion's resourceVersion."""
        prev = self.bucket(key).pop((ns, name))
        if prev is None:
            raise KeyError((key, ns, name))
        self.rv += 1
        final = {**prev.obj, "metadata": {**prev.obj["metadata"], "resourceVersion": str(self.rv)}}
        self._unindex(key, prev.obj)
        entry = Entry(final)
        self._notify(Change(key, "DELETED", entry, prev, self.rv))
        return entry

    def load(self, key: TypeKey, obj: Obj) -> None:
        """Restore an object from disk: indexed, but no listener is told."""
        self._store(key, Entry(obj))

    def unload(self, key: TypeKey, ns: str, name: str) -> None:
        prev = self.bucket(key).pop((ns, name))
        if prev is not None:
            self._unindex(key, prev.obj)

    def _store(self, key: TypeKey, entry: Entry) -> Entry | None:
        ns, name = object_key(entry.obj)
        prev = self.bucket(key).set((ns, name), entry)
        if prev is not None:
            self._unindex(key, prev.obj)
        ref: Ref = (key, ns, name)
        uid = entry.obj["metadata"].get("uid")
        if uid:
            self.uids[uid] = ref
        for owner in owner_uids(entry.obj):
            self.dependents.setdefault(owner, set()).add(ref)
        return prev

    def _unindex(self, key: TypeKey, obj: Obj) -> None:
        ns, name = object_key(obj)
        ref: Ref = (key, ns, name)
        uid = obj["metadata"].get("uid")
        if uid and self.uids.get(uid) == ref:
            del self.uids[uid]
        for owner in owner_uids(obj):
            refs = self.dependents.get(owner)
            if refs is not None:
                refs.discard(ref)
                if not refs:
                    del self.dependents[owner]

    def _notify(self, change: Change) -> None:
        for listener in self._listeners:
            listener(change)
