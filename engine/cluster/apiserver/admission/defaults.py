"""Defaulting of built-in kinds: the fields a real API server fills in on every write.

Clients (kubectl, controllers, the node) read these back (a pod's phase and
restart policy, a container's requests taken from its limits, a service's
cluster IP, node ports and port protocol, a namespace's finalizer and phase, a secret's
type, a PriorityClass's preemption policy, a Job's completions and generated
selector), so they are set here the way the real defaulters (`SetDefaults_*` of
each API group) and registries set them.
As there, an explicit zero value of a Go value field (`targetPort: 0`, `""`,
null: what Go clients send) is unset and defaulted (`zero_values.py`); pod
defaulting is in `pod_defaults.py`, Job and CronJob defaulting in
`batch_defaults.py`, the replicated workloads' in `apps_defaults.py`.
Validation runs on the result. A pod's priority is not a default: the Priority
admission plugin sets it (`priority_admission.py`).
Objects are copied where changed, never mutated in place.
"""

from __future__ import annotations

import ipaddress
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from engine.cluster.apiserver.admission.apps_defaults import (
    deployment_defaults,
    replica_set_defaults,
    replication_controller_defaults,
)
from engine.cluster.apiserver.admission.batch_defaults import cronjob_defaults, job_defaults
from engine.cluster.apiserver.admission.pod_defaults import pod_defaults, rounded
from engine.cluster.apiserver.admission.zero_values import (
    in_field,
    in_items,
    in_path,
    is_zero,
    with_pointers,
    with_values,
)
from engine.cluster.apiserver.registry.builtins import (
    CLUSTER_ROLE_BINDINGS,
    CRDS,
    CRONJOBS,
    DEPLOYMENTS,
    JOBS,
    NAMESPACES,
    NODES,
    PODS,
    PRIORITY_CLASSES,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    ROLE_BINDINGS,
    SECRETS,
    SERVICES,
)
from engine.cluster.apiserver.registry.node_ports import with_node_ports
from engine.cluster.apiserver.registry.priority_classes import (
    with_defaults as priority_class_defaults,
)
from engine.cluster.apiserver.storage.objects import Obj, TypeKey
from engine.cluster.apiserver.validation.rbac_validation import binding_defaults

# The real server's default service CIDR (10.96.0.0/12), minus network and the
# first address (10.96.0.1 is the `kubernetes` service's).
_SERVICE_NETWORK = ipaddress.ip_network("10.96.0.0/12")
NAMESPACE_FINALIZER = "kubernetes"
NAME_LABEL = "kubernetes.io/metadata.name"
_CLIENT_IP_TIMEOUT = 10800  # v1.DefaultClientIPServiceAffinitySeconds
_WEBHOOK_PORT = 443



@dataclass(frozen=True)
class Held:
    """What the stored services hold, read only when a service needs an allocation: their
    cluster IPs and node ports. An update's own stored ports are among them, as they are
    still allocated during the write; a create that asks for the ports of a stored service
    of the same name is refused as kube-apiserver's allocator refuses it, before the name's
    conflict."""

    cluster_ips: Callable[[], Iterable[str]]
    node_ports: Callable[[], Iterable[int]]


def apply_defaults(key: TypeKey, obj: Obj, old: Obj | None, held: Held) -> Obj:
    """`obj` with the defaults of its kind filled in (create when `old` is None)."""
    if key == PODS.key:
        return pod_defaults(obj, creating=old is None)
    if key == JOBS.key:
        return job_defaults(obj, creating=old is None)
    if key == SERVICES.key:
        return _service(obj, old, held)
    if key == NAMESPACES.key:
        return _namespace(obj, old)
    defaulter = _DEFAULTERS.get(key)
    return obj if defaulter is None else defaulter(obj)


def _service(obj: Obj, old: Obj | None, held: Held) -> Obj:
    """SetDefaults_Service, then what the registry allocates (cluster IPs, IP families,
    node ports)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return obj
    spec = _session_affinity(with_values(spec, {"type": "ClusterIP", "sessionAffinity": "None"}))
    spec = _traffic_defaults(in_items(spec, "ports", _service_port))
    old_spec = (old or {}).get("spec") or {}
    if not spec.get("clusterIP") and old_spec.get("clusterIP"):
        spec = {**spec, "clusterIP": old_spec["clusterIP"]}
        spec = with_pointers(spec, {"clusterIPs": old_spec.get("clusterIPs")})
    if spec.get("type") != "ExternalName" and not spec.get("clusterIP"):
        spec = {**spec, "clusterIP": _free_ip(set(held.cluster_ips()))}
    if spec.get("clusterIP"):
        spec = _ip_families(spec)
    spec = with_node_ports(spec, None if old is None else old_spec, held.node_ports,
                           str(obj["metadata"].get("name") or ""))
    result = {**obj, "spec": spec}
    if old is None:
        result["status"] = {"loadBalancer": {}}
    return result


def _traffic_defaults(spec: dict[str, Any]) -> dict[str, Any]:
    """Traffic policies by service type, and node ports for load balancers."""
    service_type = spec.get("type")
    if service_type in ("NodePort", "LoadBalancer") or (
            service_type == "ClusterIP" and spec.get("externalIPs")):
        spec = with_values(spec, {"externalTrafficPolicy": "Cluster"})
    if service_type in ("NodePort", "LoadBalancer", "ClusterIP"):
        spec = with_pointers(spec, {"internalTrafficPolicy": "Cluster"})
    if service_type == "LoadBalancer":
        spec = with_pointers(spec, {"allocateLoadBalancerNodePorts": True})
    return spec


def _ip_families(spec: dict[str, Any]) -> dict[str, Any]:
    """The registry's part for a service with a cluster IP (or "None"): its list of cluster
    IPs and a single IPv4 family, where none (or an empty list) was given."""
    registry = {"clusterIPs": [spec["clusterIP"]], "ipFamilies": ["IPv4"],
                "ipFamilyPolicy": "SingleStack"}
    return {**spec, **{key: value for key, value in registry.items() if not spec.get(key)}}


def _session_affinity(spec: dict[str, Any]) -> dict[str, Any]:
    """No affinity has no config; ClientIP without a timeout keeps clients three hours."""
    if spec["sessionAffinity"] == "None":
        return {key: value for key, value in spec.items() if key != "sessionAffinityConfig"}
    if spec["sessionAffinity"] != "ClientIP":
        return spec
    config = spec.get("sessionAffinityConfig")
    client_ip = config.get("clientIP") if isinstance(config, dict) else None
    if isinstance(client_ip, dict) and client_ip.get("timeoutSeconds") is not None:
        return spec
    return {**spec, "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": _CLIENT_IP_TIMEOUT}}}


def _service_port(port: dict[str, Any]) -> dict[str, Any]:
    """Protocol TCP; a target port of 0 or "" (Go's zero IntOrString) is the port itself."""
    port = with_values(port, {"protocol": "TCP"})
    if is_zero(port.get("targetPort")) and "port" in port:
        port = {**port, "targetPort": port["port"]}
    return port


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


def _namespace(obj: Obj, old: Obj | None) -> Obj:
    """The name label; the registry's finalizer and phase on create. Only `/finalize`
    changes the finalizers: an update keeps the stored ones (PrepareForUpdate)."""
    metadata = obj["metadata"]
    labels = {**(metadata.get("labels") or {}), NAME_LABEL: metadata.get("name", "")}
    obj = {**obj, "metadata": {**metadata, "labels": labels}}
    spec = obj.get("spec")
    given = spec if isinstance(spec, dict) else {}
    if old is not None:
        stored = (old.get("spec") or {}).get("finalizers")
        kept = {key: value for key, value in given.items() if key != "finalizers"}
        obj["spec"] = kept if stored is None else {**kept, "finalizers": stored}
        return obj
    finalizers = list(given.get("finalizers") or [])
    if NAMESPACE_FINALIZER not in finalizers:
        finalizers.append(NAMESPACE_FINALIZER)
    obj["spec"] = {**given, "finalizers": finalizers}
    obj["status"] = {"phase": "Active"}
    return obj


def _secret(obj: Obj) -> Obj:
    """SetDefaults_Secret: an unset or empty type (Go clients send "") is Opaque."""
    return with_values(obj, {"type": "Opaque"})


def _node(obj: Obj) -> Obj:
    """SetDefaults_NodeStatus (a node that reports no allocatable can allocate its capacity),
    then SetDefaults_ResourceList on both."""
    return in_field(obj, "status", _node_status)


def _node_status(status: dict[str, Any]) -> dict[str, Any]:
    if status.get("capacity") is not None:
        status = with_pointers(status, {"allocatable": status["capacity"]})
    return rounded(rounded(status, "capacity"), "allocatable")


def _crd(obj: Obj) -> Obj:
    """SetDefaults_CustomResourceDefinitionSpec: names.singular and listKind from the kind,
    conversion None, and a conversion webhook's service on port 443."""
    return in_field(obj, "spec", _crd_spec)


def _crd_spec(spec: dict[str, Any]) -> dict[str, Any]:
    names = spec.get("names")
    if isinstance(names, dict) and isinstance(names.get("kind"), str) and names["kind"]:
        kind = names["kind"]
        names = with_values(names, {"singular": kind.lower(), "listKind": f"{kind}List"})
        spec = {**spec, "names": names}
    spec = with_pointers(spec, {"conversion": {"strategy": "None"}})
    return in_path(spec, ("conversion", "webhook", "clientConfig", "service"),
                   lambda service: with_pointers(service, {"port": _WEBHOOK_PORT}))


_DEFAULTERS: dict[TypeKey, Callable[[Obj], Obj]] = {
    SECRETS.key: _secret,
    NODES.key: _node,
    CRDS.key: _crd,
    PRIORITY_CLASSES.key: priority_class_defaults,
    CRONJOBS.key: cronjob_defaults,
    DEPLOYMENTS.key: deployment_defaults,
    REPLICA_SETS.key: replica_set_defaults,
    REPLICATION_CONTROLLERS.key: replication_controller_defaults,
    ROLE_BINDINGS.key: binding_defaults,
    CLUSTER_ROLE_BINDINGS.key: binding_defaults,
}
