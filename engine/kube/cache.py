"""The watch-fed cache: small projected views of objects, indexed by owner uid and job label.

Reconciles read here instead of the API server. Pods, services and nodes are kept as
projections with only the fields the engine reads (a whole pod is tens of kilobytes);
jobs are kept whole, because CEL guards may read any field. Stored views are never
mutated, so readers may keep them without copying.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from engine.controller.reconcile.children import JOB_NAME_LABEL
from engine.definition.vocabulary import job_value
from engine.kube.sharing import intern_value, interned, shared, shared_tuple

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
        metadata["namespace"] = intern_value(metadata["namespace"])
    if "labels" in metadata:
        metadata["labels"] = interned({
            key: value for key, value in (metadata["labels"] or {}).items()
            if key.startswith(_OUR_LABELS)})
    if "ownerReferences" in metadata:
        metadata["ownerReferences"] = tuple(  # one job's own: not worth a shared entry
            interned(ref) for ref in metadata["ownerReferences"] or ())
    if "finalizers" in metadata:
        metadata["finalizers"] = shared_tuple(metadata["finalizers"] or ())
    spec = obj.get("spec") or {}
    view["spec"] = shared({
        **_pick(spec, ("nodeName", "restartPolicy")),
        "containers": shared_tuple(
            shared({"name": c.get("name")}) for c in spec.get("containers") or ()),
    })
    status = obj.get("status") or {}
    status_view = _pick(status, _POD_STATUS_FIELDS)
    if "conditions" in status:
        status_view["conditions"] = shared_tuple(
            shared(_pick(c, ("type", "status"))) for c in status["conditions"] or ())
    for field in ("containerStatuses", "initContainerStatuses"):
        if field in status:
            status_view[field] = shared_tuple(_container_status(s) for s in status[field] or ())
    view["status"] = shared(status_view)
    return view


def _container_status(status: Mapping[str, Any]) -> Obj:
    view = _pick(status, _CONTAINER_STATUS_FIELDS)
    for field in ("state", "lastState"):
        if status.get(field):
            view[field] = shared({
                name: shared(_pick(detail or {}, _STATE_FIELDS[name]))
                for name, detail in (status[field] or {}).items() if name in _STATE_FIELDS
            })
    return shared(view)


def project_service(obj: Obj) -> Obj:
    """Identity, ownership, and the spec fields a job's services are checked against."""
    view = _type_and_meta(obj, _META_FIELDS)
    view["spec"] = _pick(obj.get("spec") or {}, ("clusterIP", "selector", "ports"))
    return view


def project_child_object(obj: Obj) -> Obj:
    """Identity, ownership and status: a child object is compared by the hash in its
    annotations, and machines read its status (a PodGroup's phase)."""
    view = _type_and_meta(obj, _META_FIELDS)
    if isinstance(obj.get("status"), dict):
        view["status"] = obj["status"]
    return view


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
