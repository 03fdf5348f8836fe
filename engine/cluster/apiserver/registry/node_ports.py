"""Node ports of NodePort and LoadBalancer services, allocated as the service registry does.

kube-apiserver's service storage (pkg/registry/core/service/storage/alloc.go)
gives each port of a service that needs node ports (NodePort, LoadBalancer
unless `allocateLoadBalancerNodePorts: false`) a free port of 30000-32767 when
it asks for none (`nodePort: 0` or absent), reserves the one it asks for (a
422 `provided port is already allocated` when another service holds it), and
a LoadBalancer with `externalTrafficPolicy: Local` a health check node port.
An update keeps the stored ports a client leaves out, and one that changes the
type so that no node port is needed drops them. Here, as for cluster IPs, what
is allocated is read from the stored services, so a port is released when its
service is deleted or no longer needs it.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable
from typing import Any

from engine.cluster.apiserver.admission.zero_values import is_zero
from engine.cluster.apiserver.errors import internal, invalid
from engine.cluster.apiserver.validation.field_errors import duplicate
from engine.cluster.apiserver.validation.field_errors import invalid as invalid_value

NODE_PORTS = range(30000, 32768)  # kube-apiserver's default --service-node-port-range
ALLOCATED = "provided port is already allocated"
_NOT_IN_RANGE = ("provided port is not in the valid range. The range of valid ports is "
                 f"{NODE_PORTS.start}-{NODE_PORTS.stop - 1}")

Spec = dict[str, Any]
HeldPorts = Callable[[], Iterable[int]]


def held(spec: Any) -> set[int]:
    """The node ports a stored service's spec holds."""
    if not isinstance(spec, dict):
        return set()
    ports = ({_number(port.get("nodePort")) for port in _ports(spec)}
             if _needs_ports(spec) else set())
    if _needs_health_check(spec):
        ports.add(_number(spec.get("healthCheckNodePort")))
    return ports - {0}


def with_node_ports(spec: Spec, old_spec: Spec | None, stored: HeldPorts, name: str) -> Spec:
    """`spec` with its node ports kept from `old_spec` (an update), dropped or allocated;
    `stored` gives the ports the stored services hold (an update's own among them)."""
    if old_spec is not None:
        spec = _kept(spec, old_spec)
    new_ports, new_check = _needs_ports(spec), _needs_health_check(spec)
    if not new_ports and not new_check:
        return spec
    allocation = _Allocation(set(stored()), name)
    if new_ports:
        ports = (_created_ports(spec, allocation) if old_spec is None
                 else _updated_ports(spec, old_spec, allocation))
        spec = {**spec, "ports": ports}
    if new_check and (old_spec is None or not _needs_health_check(old_spec)):
        spec = _health_check(spec, allocation)
    return spec


class _Allocation:
    """One write's allocations (PortAllocationOperation): the ports the stored services hold
    (an update's own among them, still allocated during the write) and those reserved so
    far."""

    def __init__(self, stored: set[int], name: str) -> None:
        self.stored, self.name = stored, name
        self.reserved: set[int] = set()

    def reserve(self, port: int) -> str | None:
        """Reserve `port`; the reason when it cannot be."""
        if port not in NODE_PORTS:
            return _NOT_IN_RANGE
        if port in self.stored or port in self.reserved:
            return ALLOCATED
        self.reserved.add(port)
        return None

    def claim(self, port: int, path: str) -> None:
        reason = self.reserve(port)
        if reason is not None:
            raise invalid("", "Service", self.name, [invalid_value(path, port, reason)])

    def next_free(self) -> int:
        taken = self.stored | self.reserved
        free = [port for port in NODE_PORTS if port not in taken]
        if not free:
            raise internal("Internal error occurred: failed to allocate a nodePort: "
                           "range is full")
        port = free[secrets.randbelow(len(free))]
        self.reserved.add(port)
        return port


def _created_ports(spec: Spec, allocation: _Allocation) -> list[Any]:
    """initNodePorts: ports sharing a port number share a node port (TCP and UDP 53)."""
    ports = list(spec.get("ports") or [])
    by_port: dict[Any, int] = {}
    for index, port in enumerate(ports):
        if not isinstance(port, dict) or not _requested(port, spec):
            continue
        path = f"spec.ports[{index}].nodePort"
        given, shared = _number(port.get("nodePort")), by_port.get(port.get("port"))
        if shared is None:
            number = next((_number(other.get("nodePort")) for other in ports[index:]
                           if isinstance(other, dict) and other.get("port") == port.get("port")
                           and _number(other.get("nodePort"))), 0)
            if number:
                allocation.claim(number, path)
            else:
                number = allocation.next_free()
            by_port[port.get("port")] = number
            ports[index] = {**port, "nodePort": number}
        elif given != shared:
            if given:
                allocation.claim(given, path)
            else:
                ports[index] = {**port, "nodePort": shared}
    return ports


def _updated_ports(spec: Spec, old_spec: Spec, allocation: _Allocation) -> list[Any]:
    """updateNodePorts: the stored service's ports stay its own, new ones are reserved."""
    stored = {_number(port.get("nodePort")) for port in _ports(old_spec)}
    ports = list(spec.get("ports") or [])
    seen: set[tuple[Any, int]] = set()
    for index, port in enumerate(ports):
        if not isinstance(port, dict) or not _requested(port, spec):
            continue
        path = f"spec.ports[{index}].nodePort"
        number = _number(port.get("nodePort"))
        if not number:
            number = allocation.next_free()
            ports[index] = {**port, "nodePort": number}
        elif number not in stored and number not in allocation.reserved:
            allocation.claim(number, path)
        key = (port.get("protocol"), number)
        if key in seen:
            raise invalid("", "Service", allocation.name, [duplicate(path, number)])
        seen.add(key)
    return ports


def _health_check(spec: Spec, allocation: _Allocation) -> Spec:
    """allocHealthCheckNodePort: the one asked for, else a free one."""
    given = _number(spec.get("healthCheckNodePort"))
    if not given:
        return {**spec, "healthCheckNodePort": allocation.next_free()}
    reason = allocation.reserve(given)
    if reason is not None:
        raise internal("Internal error occurred: failed to allocate requested HealthCheck "
                       f"NodePort {given}: {reason}")
    return spec


def _kept(spec: Spec, old_spec: Spec) -> Spec:
    """patchAllocatedValues (what the client left out of an update is the stored value)
    and dropTypeDependentFields (node ports no longer needed and unchanged are dropped)."""
    old_ports = _ports(old_spec)
    if _needs_ports(old_spec) and _needs_ports(spec):
        used = ({_number(p.get("nodePort")) for p in old_ports}
                & {_number(p.get("nodePort")) for p in _ports(spec)})
        by_name = {p.get("name"): _number(p.get("nodePort")) for p in old_ports}
        spec = {**spec, "ports": [
            {**port, "nodePort": by_name[port.get("name")]}
            if isinstance(port, dict) and is_zero(port.get("nodePort"))
            and by_name.get(port.get("name")) and by_name[port.get("name")] not in used
            else port
            for port in spec.get("ports") or []]}
    if _needs_health_check(old_spec) and _needs_health_check(spec) and is_zero(
            spec.get("healthCheckNodePort")):
        spec = {**spec, "healthCheckNodePort": old_spec.get("healthCheckNodePort")}
    if _needs_ports(old_spec) and not _needs_ports(spec) and _same_ports(spec, old_spec):
        spec = {**spec, "ports": [
            {key: value for key, value in port.items() if key != "nodePort"}
            if isinstance(port, dict) else port for port in spec.get("ports") or []]}
    if (_needs_health_check(old_spec) and not _needs_health_check(spec)
            and _number(spec.get("healthCheckNodePort"))
            == _number(old_spec.get("healthCheckNodePort"))):
        spec = {key: value for key, value in spec.items() if key != "healthCheckNodePort"}
    return spec


def _same_ports(spec: Spec, old_spec: Spec) -> bool:
    new, old = _ports(spec), _ports(old_spec)
    return len(new) == len(old) and all(_number(a.get("nodePort")) == _number(b.get("nodePort"))
                                        for a, b in zip(new, old, strict=True))


def _requested(port: dict[str, Any], spec: Spec) -> bool:
    """Whether the port gets a node port: asked for one, or its service allocates them."""
    return bool(_number(port.get("nodePort"))) or spec.get("type") == "NodePort" or (
        spec.get("allocateLoadBalancerNodePorts") is not False)


def _needs_ports(spec: Spec) -> bool:
    return spec.get("type") in ("NodePort", "LoadBalancer")


def _needs_health_check(spec: Spec) -> bool:
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def _ports(spec: Spec) -> list[dict[str, Any]]:
    ports = spec.get("ports")
    return [port for port in ports if isinstance(port, dict)] if isinstance(ports, list) else []


def _number(value: Any) -> int:
    """A node port as sent: an integer, else 0 (not one; validation answers for it)."""
    return value if type(value) is int else 0
