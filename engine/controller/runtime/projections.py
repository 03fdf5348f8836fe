"""What the engine keeps of each watched object: small projected views, shared where equal.

Reconciles read the informers' caches instead of the API server. Pods, services and nodes
are kept as projections with only the fields the engine reads (a whole pod is tens of
kilobytes); jobs are kept whole but for managedFields, because CEL guards may read any
field. A projection never mutates its input, and the views it returns are never mutated.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from engine.controller.runtime.sharing import intern_value, interned, shared, shared_tuple
from engine.definition.vocabulary import job_value

Obj = dict[str, Any]

_META_FIELDS = (
    "name", "namespace", "uid", "resourceVersion", "labels", "annotations", "ownerReferences",
    "deletionTimestamp", "finalizers", "creationTimestamp",
)
_POD_META_FIELDS = (
    "name", "namespace", "uid", "resourceVersion", "labels", "ownerReferences",
    "deletionTimestamp", "finalizers", "creationTimestamp", "generateName",
)
"""Labels are matched against a kind's selector (governs.selector), and the creation time and
the deletion cost rank interchangeable pods for deletion (pod.naming Generated)."""
_POD_ANNOTATIONS = ("controller.kubernetes.io/pod-deletion-cost",)
"""The only annotations of a pod the engine reads back."""
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
        metadata["labels"] = interned(dict(metadata["labels"] or {}))
    annotations = _pick((obj.get("metadata") or {}).get("annotations") or {}, _POD_ANNOTATIONS)
    if annotations:
        metadata["annotations"] = annotations
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
        # The Ready condition's time says how long a pod has been ready (minReadySeconds).
        status_view["conditions"] = shared_tuple(
            shared(_pick(c, ("type", "status", "lastTransitionTime") if c.get("type") == "Ready"
                         else ("type", "status"))) for c in status["conditions"] or ())
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
    """Identity, ownership, the spec fields a job's services are checked against, and the
    status: a Service a machine declares (spec.objects) is read from this cache too, and
    machines read a declared object's status."""
    view = _type_and_meta(obj, _META_FIELDS)
    view["spec"] = _pick(obj.get("spec") or {}, ("clusterIP", "selector", "ports"))
    if isinstance(obj.get("status"), dict):
        view["status"] = obj["status"]
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


