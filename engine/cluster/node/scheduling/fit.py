"""Whether requests fit what a node has left, and kube-scheduler's words when they do not."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal


def short_of(capacity: Mapping[str, Decimal], used: Mapping[str, Decimal],
             wanted: Mapping[str, Decimal]) -> list[str]:
    """The resources (sorted) of which `wanted` asks more than `capacity` has left after
    `used`; a zero request never counts, so a resource the node lacks is short only when
    asked for."""
    return sorted(
        name for name, amount in wanted.items()
        if amount > 0 and used.get(name, Decimal(0)) + amount > capacity.get(name, Decimal(0))
    )


def node_message(short: Iterable[str]) -> str:
    """kube-scheduler's message for a pod that the only node cannot take (its reasons sorted
    as text, as kube-scheduler sorts them)."""
    reasons = ", ".join(sorted("1 Too many pods" if name == "pods" else f"1 Insufficient {name}"
                               for name in short))
    return (f"0/1 nodes are available: {reasons}. preemption: 0/1 nodes are available: "
            f"1 No preemption victims found for incoming pod.")
