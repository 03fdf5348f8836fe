"""The pod status the node writes: phase, conditions, addresses, start time and container
statuses, from its container records; pure.

Written with a JSON merge patch of `status` (lists are replaced whole), so the
conditions other writers set (PodScheduled from binding) are carried over here.
Termination messages are cut to the pod's budget on the way, as the kubelet writes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.cluster.node.config.env import POD_IP
from engine.cluster.node.status import phases, termination
from engine.cluster.node.status.slots import Slot


def _previous_conditions(pod: dict[str, Any], written: dict[str, Any] | None
                         ) -> list[dict[str, Any]]:
    """The conditions as the server has them, ours as we last wrote them."""
    merged = {str(c.get("type")): c for c in (pod.get("status") or {}).get("conditions") or ()}
    merged.update({str(c.get("type")): c for c in (written or {}).get("conditions") or ()})
    return list(merged.values())


def pod_status(
    pod: dict[str, Any],
    slots: Sequence[Slot],
    *,
    start_time: str,
    terminal: bool,
    written: dict[str, Any] | None,
    now: str,
) -> dict[str, Any]:
    """The full status to write; `written` is the one last written (for transition times)."""
    spec = pod.get("spec") or {}
    budget = len(slots)
    init_statuses = termination.fit_pod_budget([s.status() for s in slots if s.init], budget)
    statuses = termination.fit_pod_budget([s.status() for s in slots if not s.init], budget)
    phase = phases.pod_phase(spec, init_statuses, statuses, terminal=terminal)
    computed = phases.pod_conditions(spec, init_statuses, statuses, phase)
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": phases.merge_conditions(_previous_conditions(pod, written), computed, now),
        "hostIP": POD_IP,
        "hostIPs": [{"ip": POD_IP}],
        "podIP": POD_IP,
        "podIPs": [{"ip": POD_IP}],
        "startTime": start_time,
        # The API server classes the pod when it is created; the kubelet only reports it.
        "qosClass": (pod.get("status") or {}).get("qosClass") or "BestEffort",
        "containerStatuses": statuses,
    }
    if init_statuses:
        status["initContainerStatuses"] = init_statuses
    return status
