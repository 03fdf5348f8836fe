"""Which fields a write gives its manager, per kind and subresource.

Three rules of kube-apiserver, as data. *Empty objects*: a create (and an
apply that creates) is compared with the kind's Go zero value, whose structs
(`spec`, `status`...) and fields without `omitempty` (a pod's `containers`)
exist already, so `f:spec` of a created pod has no `.` of its own while a
custom resource's has. *Reset fields* (each strategy's
GetResetFields): a write to the main resource of a kind with a status
subresource owns nothing under `status`, and a write to `/status` nothing
under `spec` (pods: nor `metadata.deletionTimestamp`, `metadata.ownerReferences`).
*Registry fields*: what the registry or admission fills in after the field
manager has run (a Service's cluster IPs and IP families, a Namespace's
`kubernetes` finalizer, a CRD's cleanup finalizer, a pod's priority,
preemption policy and default priority class name, a Job's generated selector
and the labels added with it) belongs to nobody unless the client sent it.
"""

from __future__ import annotations

from typing import Any

from engine.cluster.apiserver.patch.field_paths import FieldSet, Path, field
from engine.cluster.apiserver.registry.builtins import (
    CONFIGMAPS,
    CONTROLLER_REVISIONS,
    CRDS,
    CRONJOBS,
    DEPLOYMENTS,
    EVENTS,
    JOBS,
    LEASES,
    NAMESPACES,
    NODES,
    PODS,
    PRIORITY_CLASSES,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    SECRETS,
    SERVICES,
)
from engine.cluster.apiserver.registry.resources import ResourceType
from engine.cluster.apiserver.storage.objects import Obj, TypeKey

_STATUS_RESETS: dict[TypeKey, tuple[Path, ...]] = {
    PODS.key: (
        (field("spec"),),
        (field("metadata"), field("deletionTimestamp")),
        (field("metadata"), field("ownerReferences")),
    ),
}
_REGISTRY_FIELDS: dict[TypeKey, tuple[tuple[str, ...], ...]] = {
    PODS.key: (  # the Priority admission plugin's
        ("spec", "priority"),
        ("spec", "preemptionPolicy"),
        ("spec", "priorityClassName"),
    ),
    SERVICES.key: (
        ("spec", "clusterIP"),
        ("spec", "clusterIPs"),
        ("spec", "ipFamilies"),
        ("spec", "ipFamilyPolicy"),
    ),
    NAMESPACES.key: (("spec", "finalizers"),),
    CRDS.key: (("metadata", "finalizers"),),
    JOBS.key: (  # the registry's PrepareForCreate, after the field manager
        ("spec", "selector"),
        ("spec", "template", "metadata", "labels"),
        ("metadata", "labels"),
    ),
}


_NODE_INFO = (
    "machineID", "systemUUID", "bootID", "kernelVersion", "osImage", "containerRuntimeVersion",
    "kubeletVersion", "kubeProxyVersion", "operatingSystem", "architecture",
)
_EMPTY_TEMPLATE = {"metadata": {"creationTimestamp": None}, "spec": {"containers": None}}
_EMPTY: dict[TypeKey, dict[str, Any]] = {
    PODS.key: {"spec": {"containers": None}, "status": {}},
    SERVICES.key: {"spec": {}, "status": {"loadBalancer": {}}},
    NAMESPACES.key: {"spec": {}, "status": {}},
    NODES.key: {
        "spec": {},
        "status": {
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
            "nodeInfo": dict.fromkeys(_NODE_INFO, ""),
        },
    },
    EVENTS.key: {
        "involvedObject": {},
        "source": {},
        "firstTimestamp": None,
        "lastTimestamp": None,
        "eventTime": None,
        "reportingComponent": "",
        "reportingInstance": "",
    },
    CONFIGMAPS.key: {},
    SECRETS.key: {},
    CONTROLLER_REVISIONS.key: {"data": None, "revision": 0},
    JOBS.key: {"spec": {"template": _EMPTY_TEMPLATE}, "status": {}},
    CRONJOBS.key: {
        "spec": {
            "schedule": "",
            "jobTemplate": {"metadata": {"creationTimestamp": None},
                            "spec": {"template": _EMPTY_TEMPLATE}},
        },
        "status": {},
    },
    LEASES.key: {"spec": {}},
    DEPLOYMENTS.key: {"spec": {"template": _EMPTY_TEMPLATE, "strategy": {}}, "status": {}},
    REPLICA_SETS.key: {"spec": {"template": _EMPTY_TEMPLATE}, "status": {"replicas": 0}},
    REPLICATION_CONTROLLERS.key: {"spec": {}, "status": {"replicas": 0}},
    PRIORITY_CLASSES.key: {"value": 0},
    CRDS.key: {
        "spec": {"group": "", "names": {"plural": "", "kind": ""}, "scope": "", "versions": None},
        "status": {"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": None},
    },
}


def empty_object(rt: ResourceType) -> Obj:
    """What a create is compared with: the Go zero value of a built-in kind as JSON, or a
    custom resource with just its apiVersion and kind."""
    fields = _EMPTY.get(rt.key)
    if fields is None:
        return {"apiVersion": rt.api_version, "kind": rt.kind}
    return {"metadata": {"creationTimestamp": None}, **fields}


def reset_fields(rt: ResourceType, subresource: str | None) -> FieldSet:
    """The fields a write to `subresource` (None: the main resource) never owns."""
    if subresource == "status":
        return FieldSet.of(*_STATUS_RESETS.get(rt.key, ((field("spec"),),)))
    if subresource is None and rt.has_status:
        return FieldSet.of((field("status"),))
    return FieldSet()


def as_sent(rt: ResourceType, stored: Obj, sent: Obj) -> Obj:
    """`stored` with the registry's own fields as the client sent them (absent if it did not),
    which is what upstream's field manager sees."""
    paths = _REGISTRY_FIELDS.get(rt.key, ())
    if not paths:
        return stored
    result = _copy_path_parents(stored, paths)
    for path in paths:
        value = _lookup(sent, path)
        parent = _lookup(result, path[:-1])
        if not isinstance(parent, dict):
            continue
        if value is _ABSENT:
            parent.pop(path[-1], None)
        else:
            parent[path[-1]] = value
    return result


_ABSENT = object()


def _lookup(obj: Any, path: tuple[str, ...]) -> Any:
    for name in path:
        if not isinstance(obj, dict) or name not in obj:
            return _ABSENT
        obj = obj[name]
    return obj


def _copy_path_parents(obj: Obj, paths: tuple[tuple[str, ...], ...]) -> Obj:
    """A copy of `obj` whose dicts along `paths` are new (the rest is shared)."""
    result = dict(obj)
    for path in paths:
        node = result
        for name in path[:-1]:
            child = node.get(name)
            if not isinstance(child, dict):
                break
            node[name] = dict(child)
            node = node[name]
    return result
