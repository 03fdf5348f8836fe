"""What a pod asks of its node, as kube-scheduler counts it.

A container's requests, with its limits standing in where a resource has no request
(as API defaulting does); the pod's are its containers' and restartable (sidecar) init
containers' summed, or, if larger, what any one init container needs while the sidecars
started before it run, plus the pod's overhead. Every pod also takes one of the node's
`pods`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from engine.cluster.quantities import parse_quantity

Resources = dict[str, Decimal]


def _add(total: Resources, more: Mapping[str, Decimal]) -> Resources:
    result = dict(total)
    for name, amount in more.items():
        result[name] = result.get(name, Decimal(0)) + amount
    return result


def _at_least(total: Resources, more: Mapping[str, Decimal]) -> Resources:
    result = dict(total)
    for name, amount in more.items():
        result[name] = max(result.get(name, Decimal(0)), amount)
    return result


def _parsed(amounts: Any) -> Resources:
    if not isinstance(amounts, dict):
        return {}
    result: Resources = {}
    for name, value in amounts.items():
        try:
            result[str(name)] = parse_quantity(value)
        except ValueError:
            continue  # the API server validates quantities; an odd one asks for nothing
    return result


def container_requests(container: Mapping[str, Any]) -> Resources:
    """One container's requests, its limits where it gives no request."""
    resources = container.get("resources") or {}
    return {**_parsed(resources.get("limits")), **_parsed(resources.get("requests"))}


def _containers(spec: Mapping[str, Any], field: str) -> Iterable[Mapping[str, Any]]:
    return (c for c in spec.get(field) or () if isinstance(c, dict))


def pod_requests(pod: Mapping[str, Any]) -> Resources:
    """The pod's requests, `pods: 1` included."""
    spec = pod.get("spec") or {}
    running: Resources = {}
    for container in _containers(spec, "containers"):
        running = _add(running, container_requests(container))
    sidecars: Resources = {}
    peak: Resources = {}
    for container in _containers(spec, "initContainers"):
        if container.get("restartPolicy") == "Always":
            sidecars = _add(sidecars, container_requests(container))
            peak = _at_least(peak, sidecars)
        else:
            peak = _at_least(peak, _add(sidecars, container_requests(container)))
    total = _at_least(_add(running, sidecars), peak)
    total = _add(total, _parsed(spec.get("overhead")))
    return _add(total, {"pods": Decimal(1)})


def summed(each: Iterable[Mapping[str, Decimal]]) -> Resources:
    """Several pods' requests together."""
    total: Resources = {}
    for resources in each:
        total = _add(total, resources)
    return total
