"""An informer's cache: the objects of one resource as last seen, indexed by owner and label.

Thread-safe; readers get the stored views and must not mutate them. A cache may keep a
projection of each object instead of all of it (as client-go's informer transforms do):
whoever builds the cache says what to keep, and which label (if any) to index. What to
keep of an object may change without the object changing (the local node keeps less of a
pod once it has stopped running it): `reproject` applies the projection again to the view
held, and no projection decided before that overrides it.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

Obj = dict[str, Any]
Change = tuple[str, Obj | None, Obj | None]
Views = list[Obj]
Key = tuple[str, str]
_I = TypeVar("_I")


def identity(obj: Obj) -> Obj:
    """The object as it is (the default projection)."""
    return obj


def _key(obj: Mapping[str, Any]) -> Key:
    metadata = obj.get("metadata") or {}
    return metadata.get("namespace") or "", metadata["name"]


def _owner_uids(obj: Mapping[str, Any]) -> list[str]:
    references = (obj.get("metadata") or {}).get("ownerReferences") or []
    return [ref["uid"] for ref in references if ref.get("uid")]


def _label(obj: Mapping[str, Any], key: str | None) -> str | None:
    if key is None:
        return None
    labels = (obj.get("metadata") or {}).get("labels") or {}
    value = labels.get(key)
    return value if isinstance(value, str) else None


def _same_version(old: Obj, new: Obj) -> bool:
    old_rv = (old.get("metadata") or {}).get("resourceVersion")
    new_rv = (new.get("metadata") or {}).get("resourceVersion")
    if old_rv is not None and new_rv is not None:
        return bool(old_rv == new_rv)
    return old == new


class Cache:
    """Thread-safe store of projected views by (namespace, name), indexed by owner uid and,
    when `indexed_label` is given, by that label's value."""

    def __init__(
        self, project: Callable[[Obj], Obj] = identity, *, indexed_label: str | None = None
    ) -> None:
        """`project` makes the view kept of an object; it may also be given a view it made (by
        `reproject`), and runs under the cache's lock at times, so it must not call the
        cache."""
        self._project = project
        self._indexed_label = indexed_label
        self._lock = threading.Lock()
        self._objects: dict[Key, Obj] = {}
        self._by_owner: defaultdict[str, set[Key]] = defaultdict(set)
        self._by_label: defaultdict[tuple[str, str], set[Key]] = defaultdict(set)
        self._reprojections = 0
        """Counts `reproject` calls: a projection made outside the lock while one happened
        may rest on what the projection decided before, so it is made again under the lock."""

    @property
    def epoch(self) -> int:
        """Counts `reproject` calls: views made before it changed may rest on what the
        projection decided before (give it to `replace` with views made since)."""
        return self._reprojections

    def view(self, obj: Obj) -> Obj:
        """The view this cache keeps of `obj`."""
        return self._project(obj)

    def replace(self, objects: Iterable[Obj], *, views_since: int | None = None) -> list[Change]:
        """Make the cache hold exactly `objects` (a fresh list) and say what differed.

        With `views_since` (the `epoch` read before they were made), `objects` are views
        made by `view` already: an informer projects each page of a list as it arrives, so a
        list of 100,000 pods is never held whole. The changes are what the watch would have
        delivered had it not missed them, so a relist wakes the owners of everything that
        changed meanwhile.
        """
        objects = list(objects)
        if views_since is None:
            reprojections = self._reprojections
            views = list(map(self._project, objects))
        else:
            reprojections, views = views_since, objects
        fresh = {_key(view): view for view in views}
        changes: list[Change] = []
        with self._lock:
            if self._reprojections != reprojections:
                # Only a cache that reprojects gets here, and its projection takes its views.
                fresh = {_key(view): view for view in map(self._project, objects)}
            for key, gone in list(self._objects.items()):
                if key not in fresh:
                    self._remove(key, gone)
                    changes.append(("DELETED", gone, None))
            for key, new in fresh.items():
                old = self._objects.get(key)
                if old is not None and _same_version(old, new):
                    continue
                self._store(key, old, new)
                changes.append(("MODIFIED" if old is not None else "ADDED", old, new))
        return changes

    def apply(self, event_type: str, obj: Obj) -> tuple[Obj | None, Obj | None]:
        """Apply one watch event; (old, new) projected views, new None after a delete."""
        reprojections = self._reprojections
        view = self._project(obj)
        key = _key(view)
        with self._lock:
            if self._reprojections != reprojections:
                view = self._project(obj)
            old = self._objects.get(key)
            if event_type in ("ADDED", "MODIFIED"):
                self._store(key, old, view)
                return old, view
            if event_type == "DELETED":
                if old is not None:
                    self._remove(key, old)
                return view, None
        raise ValueError(f"a cache applies ADDED, MODIFIED and DELETED events, not {event_type}")

    def reproject(self, namespace: str | None, name: str) -> Obj | None:
        """Apply the projection again to the view held of one object (what to keep of it has
        changed); the new view, or None when the cache holds no such object. No event or
        relist whose projection was made before this call overrides it."""
        key = (namespace or "", name)
        with self._lock:
            self._reprojections += 1
            old = self._objects.get(key)
            if old is None:
                return None
            view = self._project(old)
            self._store(key, old, view)
            return view

    def get(self, namespace: str | None, name: str) -> Obj | None:
        """The view of one object, or None."""
        with self._lock:
            return self._objects.get((namespace or "", name))

    def list(self, namespace: str | None = None) -> Views:
        """Every view, or those of one namespace."""
        with self._lock:
            if namespace is None:
                return list(self._objects.values())
            return [view for (ns, _), view in self._objects.items() if ns == namespace]

    def by_owner(self, uid: str) -> Views:
        """Views whose ownerReferences name `uid` (controller or not)."""
        with self._lock:
            return [self._objects[key] for key in self._by_owner.get(uid, ())]

    def by_label(self, namespace: str, key: str, value: str) -> Views:
        """Views in `namespace` labelled key=value (from the index for `indexed_label`)."""
        with self._lock:
            if key == self._indexed_label:
                return [self._objects[k] for k in self._by_label.get((namespace, value), ())]
            return [
                view for (ns, _), view in self._objects.items()
                if ns == namespace and ((view.get("metadata") or {}).get("labels") or {}).get(key)
                == value
            ]

    def __len__(self) -> int:
        with self._lock:
            return len(self._objects)

    def _store(self, key: Key, old: Obj | None, new: Obj) -> None:
        if old is not None:
            self._unindex(key, old)
        self._objects[key] = new
        for uid in _owner_uids(new):
            self._by_owner[uid].add(key)
        value = _label(new, self._indexed_label)
        if value is not None:
            self._by_label[(key[0], value)].add(key)

    def _remove(self, key: Key, old: Obj) -> None:
        self._unindex(key, old)
        del self._objects[key]

    def _unindex(self, key: Key, old: Obj) -> None:
        for uid in _owner_uids(old):
            _discard(self._by_owner, uid, key)
        value = _label(old, self._indexed_label)
        if value is not None:
            _discard(self._by_label, (key[0], value), key)


def _discard(index: defaultdict[_I, set[Key]], entry: _I, key: Key) -> None:
    keys = index.get(entry)
    if keys is not None:
        keys.discard(key)
        if not keys:
            del index[entry]
