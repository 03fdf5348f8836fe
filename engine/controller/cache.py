"""The watch-fed cache: small projected views of objects, indexed by owner uid and job label.

Reconciles read here instead of the API server. Pods, services and nodes are kept as
projections with only the fields the engine reads (a whole pod is tens of kilobytes);
jobs are kept whole, because CEL guards may read any field. Stored views are never
mutated, so readers may keep them without copying.
"""

from __future__ import annotations

import sys
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from engine.controller.children import JOB_NAME_LABEL
from engine.definition.vocabulary import job_value

Obj = dict[str, Any]
Change = tuple[str, Obj | None, Obj | None]
Views = list[Obj]
Key = tuple[str, str]
_I = TypeVar("_I")

_META_FIELDS = (
    "name", "namespace", "uid", "resourceVersion", "labels", "annotations", "ownerReferences",
    "deletionTimestamp", "finalizers", "creationTimestamp",
)
_POD_META_FIELDS = (
    "name", "namespace", "uid", "resourceVersion", "labels", "ownerReferences",
    "deletionTimestamp", "finalizers",
)
"""A pod's annotations and creation time are written by the engine and never read back."""
_OUR_LABELS = "jobmachine.dev/"
"""The only labels of a pod the engine reads back (Kubeflow's are for others to select by)."""
_CONTAINER_STATUS_FIELDS = ("name", "restartCount", "ready")
_POD_STATUS_FIELDS = ("phase", "reason", "message")
_STATE_FIELDS = {
    "running": (),
    "waiting": ("reason", "message"),
    "terminated": ("exitCode", "signal", "reason", "message"),
}
"""Of a container state, what observing it reads: which state it is, and how it ended."""


def _pick(source: Mapping[str, Any], fields: Iterable[str]) -> Obj:
    return {field: source[field] for field in fields if field in source}


def _type_and_meta(obj: Mapping[str, Any], meta_fields: Iterable[str]) -> Obj:
    view = _pick(obj, ("apiVersion", "kind"))
    view["metadata"] = _pick(obj.get("metadata") or {}, meta_fields)
    return view


def identity(obj: Obj) -> Obj:
    """The object as it is (the default projection)."""
    return obj


def project_job(obj: Obj) -> Obj:
    """The job as guards see it (`job_value`): whole but for `metadata.managedFields`."""
    return dict(job_value(obj))


def project_pod(obj: Obj) -> Obj:
    """What observing a replica needs: identity, ownership, node, phase, container states,
    and each condition's type and status (failure rules match them).

    Thousands of pods are cached, so a view keeps nothing else (no annotations, no
    timestamps, no container IDs, only jobmachine's labels), the strings pods share are
    interned, and equal parts (a spec, conditions, a container's state) are shared by all
    pods that have them.
    """
    view = _type_and_meta(obj, _POD_META_FIELDS)
    metadata = view["metadata"]
    if "namespace" in metadata:
        metadata["namespace"] = _intern(metadata["namespace"])
    if "labels" in metadata:
        metadata["labels"] = _interned({
            key: value for key, value in (metadata["labels"] or {}).items()
            if key.startswith(_OUR_LABELS)})
    if "ownerReferences" in metadata:
        metadata["ownerReferences"] = tuple(  # one job's own: not worth a shared entry
            _interned(ref) for ref in metadata["ownerReferences"] or ())
    if "finalizers" in metadata:
        metadata["finalizers"] = _shared_tuple(metadata["finalizers"] or ())
    spec = obj.get("spec") or {}
    view["spec"] = _shared({
        **_pick(spec, ("nodeName", "restartPolicy")),
        "containers": _shared_tuple(
            _shared({"name": c.get("name")}) for c in spec.get("containers") or ()),
    })
    status = obj.get("status") or {}
    view["status"] = _interned(_pick(status, _POD_STATUS_FIELDS))
    if "conditions" in status:
        view["status"]["conditions"] = _shared_tuple(
            _shared(_pick(c, ("type", "status"))) for c in status["conditions"] or ())
    for field in ("containerStatuses", "initContainerStatuses"):
        if field in status:
            view["status"][field] = _shared_tuple(_container_status(s) for s in status[field] or ())
    return view


def _container_status(status: Mapping[str, Any]) -> Obj:
    view = _pick(status, _CONTAINER_STATUS_FIELDS)
    for field in ("state", "lastState"):
        if status.get(field):
            view[field] = _shared({
                name: _shared(_pick(detail or {}, _STATE_FIELDS[name]))
                for name, detail in (status[field] or {}).items() if name in _STATE_FIELDS
            })
    return _shared(view)


_SHARED_LIMIT = 4096
_SHARED_TEXT = 64
"""Longer strings (a termination message) are one pod's own: the table is not kept for them."""
_shared_views: dict[tuple[tuple[str, Any], ...], Obj] = {}
_canonical: set[int] = set()
"""Ids of the dicts in `_shared_views`: kept for the life of the process, so a mapping that
holds one may be keyed by its id."""
_shared_lock = threading.Lock()


def _shared(mapping: Mapping[str, Any]) -> Obj:
    """One dict for all equal mappings (a condition, a container's state): views
    are never mutated, so pods may share them. A mapping holding anything but short
    strings, numbers and shared dicts, and new mappings once `_SHARED_LIMIT` are kept, get a
    dict of their own."""
    view = _interned(mapping)
    key: list[tuple[str, Any]] = []
    for name, value in view.items():
        if isinstance(value, dict):
            if id(value) not in _canonical:
                return view
            key.append((name, ("shared", id(value))))
        elif isinstance(value, tuple):
            if not all(isinstance(v, dict) and id(v) in _canonical for v in value):
                return view
            key.append((name, ("shared", *map(id, value))))
        elif isinstance(value, str) and len(value) > _SHARED_TEXT:
            return view
        elif isinstance(value, str | int | float | bool | None):
            key.append((name, value))
        else:
            return view
    with _shared_lock:
        found = _shared_views.get(tuple(key))
        if found is None and len(_shared_views) < _SHARED_LIMIT:
            _shared_views[tuple(key)] = found = view
            _canonical.add(id(view))
    return found if found is not None else view


_shared_tuples: dict[tuple[Any, ...], tuple[Any, ...]] = {}


def _shared_tuple(values: Iterable[Any]) -> tuple[Any, ...]:
    """One tuple for all equal lists of strings and shared dicts (conditions, finalizers)."""
    items = tuple(_intern(value) for value in values)
    key: list[Any] = []
    for item in items:
        if isinstance(item, dict) and id(item) in _canonical:
            key.append(("shared", id(item)))
        elif isinstance(item, str | int | bool | None):
            key.append(item)
        else:
            return items
    with _shared_lock:
        found = _shared_tuples.get(tuple(key))
        if found is None and len(_shared_tuples) < _SHARED_LIMIT:
            _shared_tuples[tuple(key)] = found = items
    return found if found is not None else items


def _intern(value: Any) -> Any:
    return sys.intern(value) if isinstance(value, str) else value


def _interned(mapping: Mapping[str, Any]) -> Obj:
    """The mapping with its keys and string values interned: one copy for all pods."""
    return {sys.intern(key): _intern(value) for key, value in mapping.items()}


def project_service(obj: Obj) -> Obj:
    """Identity, ownership, and the spec fields a job's services are checked against."""
    view = _type_and_meta(obj, _META_FIELDS)
    view["spec"] = _pick(obj.get("spec") or {}, ("clusterIP", "selector", "ports"))
    return view


def project_metadata(obj: Obj) -> Obj:
    """Identity and ownership only: a child object is compared by the hash in its annotations."""
    return _type_and_meta(obj, _META_FIELDS)


def project_node(obj: Obj) -> Obj:
    """A node's identity and its conditions (is it Ready)."""
    view = _type_and_meta(obj, ("name", "uid", "resourceVersion"))
    view["status"] = _pick(obj.get("status") or {}, ("conditions",))
    return view


def _key(obj: Mapping[str, Any]) -> Key:
    metadata = obj.get("metadata") or {}
    return metadata.get("namespace") or "", metadata["name"]


def _owner_uids(obj: Mapping[str, Any]) -> list[str]:
    references = (obj.get("metadata") or {}).get("ownerReferences") or []
    return [ref["uid"] for ref in references if ref.get("uid")]


def _job_name(obj: Mapping[str, Any]) -> str | None:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    value = labels.get(JOB_NAME_LABEL)
    return value if isinstance(value, str) else None


def _same_version(old: Obj, new: Obj) -> bool:
    old_rv = (old.get("metadata") or {}).get("resourceVersion")
    new_rv = (new.get("metadata") or {}).get("resourceVersion")
    if old_rv is not None and new_rv is not None:
        return bool(old_rv == new_rv)
    return old == new


class Cache:
    """Thread-safe store of projected views by (namespace, name), with two indexes."""

    def __init__(self, project: Callable[[Obj], Obj] = identity) -> None:
        self._project = project
        self._lock = threading.Lock()
        self._objects: dict[Key, Obj] = {}
        self._by_owner: defaultdict[str, set[Key]] = defaultdict(set)
        self._by_job: defaultdict[tuple[str, str], set[Key]] = defaultdict(set)

    def replace(self, objects: Iterable[Obj]) -> list[Change]:
        """Make the cache hold exactly `objects` (a fresh list) and say what differed.

        The changes are what the watch would have delivered had it not missed them, so a
        relist wakes the owners of everything that changed meanwhile.
        """
        fresh = {_key(view): view for view in map(self._project, objects)}
        changes: list[Change] = []
        with self._lock:
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
        view = self._project(obj)
        key = _key(view)
        with self._lock:
            old = self._objects.get(key)
            if event_type in ("ADDED", "MODIFIED"):
                self._store(key, old, view)
                return old, view
            if event_type == "DELETED":
                if old is not None:
                    self._remove(key, old)
                return view, None
        raise ValueError(f"a cache applies ADDED, MODIFIED and DELETED events, not {event_type}")

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
        """Views in `namespace` labelled key=value (indexed for the job-name label)."""
        with self._lock:
            if key == JOB_NAME_LABEL:
                return [self._objects[k] for k in self._by_job.get((namespace, value), ())]
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
        job = _job_name(new)
        if job is not None:
            self._by_job[(key[0], job)].add(key)

    def _remove(self, key: Key, old: Obj) -> None:
        self._unindex(key, old)
        del self._objects[key]

    def _unindex(self, key: Key, old: Obj) -> None:
        for uid in _owner_uids(old):
            _discard(self._by_owner, uid, key)
        job = _job_name(old)
        if job is not None:
            _discard(self._by_job, (key[0], job), key)


def _discard(index: defaultdict[_I, set[Key]], entry: _I, key: Key) -> None:
    keys = index.get(entry)
    if keys is not None:
        keys.discard(key)
        if not keys:
            del index[entry]
