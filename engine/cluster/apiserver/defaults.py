"""Defaulting of built-in kinds: the fields a real API server fills in on every write.

Clients (kubectl, controllers, the node) read these back (a pod's phase and
restart policy, a container's requests taken from its limits, a service's
cluster IP and port protocol, a namespace's finalizer and phase, a secret's
type, a PriorityClass's preemption policy), so they are set here the way the
real defaulters and registries set them. A pod's priority is not a default:
the Priority admission plugin sets it (`priority_admission.py`). Objects are
copied where changed, never mutated in place.
"""

from __future__ import annotations

import ipaddress
import secrets
from collections.abc import Callable, Iterable
from typing import Any

from engine.cluster.apiserver.builtins import (
    CLUSTER_ROLE_BINDINGS,
    NAMESPACES,
    PODS,
    PRIORITY_CLASSES,
    ROLE_BINDINGS,
    SECRETS,
    SERVICES,
)
from engine.cluster.apiserver.objects import Obj, TypeKey
from engine.cluster.apiserver.priority_classes import with_defaults as priority_class_defaults
from engine.cluster.apiserver.qos import qos_class
from engine.cluster.apiserver.rbac_validation import binding_defaults

# The real server's default service CIDR (10.96.0.0/12), minus network and the
# first address (10.96.0.1 is the `kubernetes` service's).
_SERVICE_NETWORK = ipaddress.ip_network("10.96.0.0/12")
NAMESPACE_FINALIZER = "kubernetes"
NAME_LABEL = "kubernetes.io/metadata.name"

UsedIps = Callable[[], Iterable[str]]


def apply_defaults(key: TypeKey, obj: Obj, old: Obj | None, used_ips: UsedIps) -> Obj:
    """`obj` with the defaults of its kind filled in (create when `old` is None)."""
    if key == PODS.key:
        return _pod(obj, creating=old is None)
    if key == SERVICES.key:
        return _service(obj, old, used_ips)
    if key == NAMESPACES.key:
        return _namespace(obj, creating=old is None)
    if key == SECRETS.key:
        return _secret(obj)
    if key == PRIORITY_CLASSES.key:
        return priority_class_defaults(obj)
    if key in (ROLE_BINDINGS.key, CLUSTER_ROLE_BINDINGS.key):
        return binding_defaults(obj)
    return obj


def _container(container: Any) -> Any:
    if not isinstance(container, dict):
        return container
    image = str(container.get("image") or "")
    tag = image.rsplit("/", 1)[-1]
    pull = "Always" if ":" not in tag or tag.endswith(":latest") else "IfNotPresent"
    if "@" in image:
        pull = "IfNotPresent"
    defaults = {
        "imagePullPolicy": pull,
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "resources": {},
    }
    result = {**defaults, **container}
    if isinstance(container.get("ports"), list):
        result["ports"] = [
            {"protocol": "TCP", **port} if isinstance(port, dict) else port
            for port in container["ports"]
        ]
    return result


def _pod(obj: Obj, *, creating: bool) -> Obj:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return obj
    defaults = {
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "enableServiceLinks": True,
    }
    spec = {**defaults, **spec}
    for field in ("containers", "initContainers"):
        if isinstance(spec.get(field), list):
            spec[field] = [_requests_from_limits(_container(c)) for c in spec[field]]
    obj = {**obj, "spec": spec}
    if creating:
        status = obj.get("status")
        given = status if isinstance(status, dict) else {}
        obj["status"] = {"phase": "Pending", "qosClass": qos_class(spec), **given}
    return obj


def _requests_from_limits(container: Any) -> Any:
    """SetDefaults_Pod: a resource limited but not requested is requested at its limit.

    Pods only (not templates), containers and init containers (not ephemeral).
    """
    if not isinstance(container, dict):
        return container
    resources = container.get("resources")
    if not isinstance(resources, dict):
        return container
    limits = resources.get("limits")
    if not isinstance(limits, dict) or not limits:
        return container
    requests = resources.get("requests")
    if requests is not None and not isinstance(requests, dict):
        return container  # not a map: left as sent
    given = requests or {}
    missing = {name: value for name, value in limits.items() if name not in given}
    if not missing:
        return container
    return {**container, "resources": {**resources, "requests": {**given, **missing}}}


def _service(obj: Obj, old: Obj | None, used_ips: UsedIps) -> Obj:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return obj
    spec = {"type": "ClusterIP", "sessionAffinity": "None", **spec}
    if isinstance(spec.get("ports"), list):
        spec["ports"] = [_service_port(port) for port in spec["ports"]]
    old_spec = (old or {}).get("spec") or {}
    if not spec.get("clusterIP") and old_spec.get("clusterIP"):
        spec["clusterIP"] = old_spec["clusterIP"]
        spec.setdefault("clusterIPs", old_spec.get("clusterIPs"))
    if spec.get("type") != "ExternalName" and not spec.get("clusterIP"):
        spec["clusterIP"] = _free_ip(set(used_ips()))
    if spec.get("clusterIP"):
        spec.setdefault("clusterIPs", [spec["clusterIP"]])
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("internalTrafficPolicy", "Cluster")
    result = {**obj, "spec": spec}
    if old is None:
        result["status"] = {"loadBalancer": {}}
    return result


def _service_port(port: Any) -> Any:
    if not isinstance(port, dict):
        return port
    result = {"protocol": "TCP", **port}
    result.setdefault("targetPort", port.get("port"))
    return result


def _free_ip(used: set[str]) -> str:
    size = _SERVICE_NETWORK.num_addresses
    for _ in range(64):
        candidate = str(_SERVICE_NETWORK[2 + secrets.randbelow(size - 3)])
        if candidate not in used:
            return candidate
    for index in range(2, size - 1):
        candidate = str(_SERVICE_NETWORK[index])
        if candidate not in used:
            return candidate
    raise RuntimeError("the service IP range 10.96.0.0/12 is exhausted")


def _namespace(obj: Obj, *, creating: bool) -> Obj:
    metadata = obj["metadata"]
    labels = {**(metadata.get("labels") or {}), NAME_LABEL: metadata.get("name", "")}
    obj = {**obj, "metadata": {**metadata, "labels": labels}}
    if creating:
        spec = obj.get("spec")
        given = spec if isinstance(spec, dict) else {}
        finalizers = list(given.get("finalizers") or [])
        if NAMESPACE_FINALIZER not in finalizers:
            finalizers.append(NAMESPACE_FINALIZER)
        obj["spec"] = {**given, "finalizers": finalizers}
        obj["status"] = {"phase": "Active"}
    return obj


def _secret(obj: Obj) -> Obj:
    """SetDefaults_Secret: an unset or empty type (Go clients send "") is Opaque."""
    return obj if obj.get("type") else {**obj, "type": "Opaque"}
