"""A pod's QoS class (status.qosClass), computed as kube-apiserver's registry computes it on create.

Only cpu and memory count, summed over containers and init containers, and
zero quantities count as unset. Guaranteed: every container limits both cpu
and memory, and the summed requests equal the summed limits (requests default
to limits before this runs, see `defaults.py`). BestEffort: nothing requested
or limited at all. Burstable: everything else.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from engine.cluster.quantities import parse_quantity

_QOS_RESOURCES = ("cpu", "memory")


def qos_class(spec: Mapping[str, Any]) -> str:
    """Guaranteed, Burstable or BestEffort for a pod spec whose defaults are applied."""
    containers = [
        c for key in ("containers", "initContainers") for c in spec.get(key) or ()
        if isinstance(c, dict)
    ]
    requests: dict[str, Decimal] = {}
    limits: dict[str, Decimal] = {}
    guaranteed = True
    for container in containers:
        resources = container.get("resources") or {}
        _add(requests, _positive(resources.get("requests")))
        limited = _positive(resources.get("limits"))
        _add(limits, limited)
        if not set(_QOS_RESOURCES) <= set(limited):
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and requests.keys() == limits.keys() and all(
        limits[name] == amount for name, amount in requests.items()
    ):
        return "Guaranteed"
    return "Burstable"


def quantity(value: Any) -> Decimal | None:
    """A resource quantity ("500m", "2Gi", "1e3", 4) as a number; None when it is not one."""
    try:
        return parse_quantity(value)
    except ValueError:
        return None


def _positive(resources: Any) -> dict[str, Decimal]:
    """The cpu and memory amounts of a requests/limits map that are above zero."""
    if not isinstance(resources, dict):
        return {}
    amounts = {name: quantity(resources.get(name)) for name in _QOS_RESOURCES}
    return {name: amount for name, amount in amounts.items() if amount is not None and amount > 0}


def _add(totals: dict[str, Decimal], amounts: Mapping[str, Decimal]) -> None:
    for name, amount in amounts.items():
        totals[name] = totals.get(name, Decimal(0)) + amount
