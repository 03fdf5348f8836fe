"""Defaulting of built-in kinds: the fields a real API server fills in on every write.

Clients (kubectl, controllers, the node) read these back (a pod's phase and
restart policy, a service's cluster IP and port protocol, a namespace's
finalizer and phase, a secret's type), so they are set here the way the real
defaulters and registries set them. Objects are copied where changed, never
mutated in place.
"""

from __future__ import annotations

import ipaddress
import secrets
from collections.abc import Callable, Iterable
from typing import Any

from engine.cluster.apiserver.builtins import NAMESPACES, PODS, SECRETS, SERVICES
from engine.cluster.apiserver.objects import Obj, TypeKey

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
        "priority": 0,
    }
    spec = {**defaults, **spec}
    for field in ("containers", "initContainers"):
        if isinstance(spec.get(field), list):
            spec[field] = [_container(c) for c in spec[field]]
    obj = {**obj, "spec": spec}
    if creating:
        status = obj.get("status")
        given = status if isinstance(status, dict) else {}
        obj["status"] = {"phase": "Pending", "qosClass": _qos_class(spec), **given}
    return obj


def _qos_class(spec: dict[str, Any]) -> str:
    resources = [
        c.get("resources") or {} for c in spec.get("containers") or () if isinstance(c, dict)
    ]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    guaranteed = all(_guaranteed(r) for r in resources)
    return "Guaranteed" if guaranteed else "Burstable"


def _guaranteed(resources: dict[str, Any]) -> bool:
    limits = resources.get("limits") or {}
    requests = resources.get("requests") or limits
    return all(k in limits and requests.get(k) == limits[k] for k in ("cpu", "memory"))


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
