"""The pods printer: READY, STATUS and RESTARTS derived exactly as kube-apiserver does.

The STATUS column is the one users read first, so its rules are ported one to
one: init containers, waiting and terminated reasons (CrashLoopBackOff, Error,
OOMKilled, Completed), and Terminating once deletion has started.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from engine.cluster.apiserver.printing.printing import (
    AGE_COLUMN,
    NAME_COLUMN,
    Column,
    Object,
    Printer,
    age,
    created,
    meta,
    parse_time,
    section,
)


@dataclass
class _PodTally:
    restarts: int = 0
    ready: int = 0
    last_restart: datetime.datetime | None = None

    def count_restarts(self, status: dict[str, Any]) -> None:
        self.restarts += int(status.get("restartCount") or 0)
        terminated = section(section(status, "lastState"), "terminated")
        finished = parse_time(terminated.get("finishedAt"))
        if finished and (self.last_restart is None or finished > self.last_restart):
            self.last_restart = finished


def _restartable(container: dict[str, Any] | None) -> bool:
    return bool(container) and (container or {}).get("restartPolicy") == "Always"


def _has_condition(status: dict[str, Any], kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True" for c in status.get("conditions") or []
    )


def _terminated_reason(terminated: dict[str, Any], prefix: str = "") -> str:
    if terminated.get("reason"):
        return f"{prefix}{terminated['reason']}"
    if terminated.get("signal"):
        return f"{prefix}Signal:{terminated['signal']}"
    return f"{prefix}ExitCode:{terminated.get('exitCode', 0)}"


def _init_reason(pod: Object, tally: _PodTally, restartable: _PodTally) -> str | None:
    """The Init:... status while init containers run, or None once they are done."""
    spec, status = section(pod, "spec"), section(pod, "status")
    inits = {c.get("name"): c for c in spec.get("initContainers") or []}
    for index, container in enumerate(status.get("initContainerStatuses") or []):
        tally.count_restarts(container)
        is_restartable = _restartable(inits.get(container.get("name")))
        if is_restartable:
            restartable.count_restarts(container)
        state = section(container, "state")
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if isinstance(terminated, dict) and int(terminated.get("exitCode") or 0) == 0:
            continue
        if is_restartable and container.get("started"):
            if container.get("ready"):
                tally.ready += 1
            continue
        if isinstance(terminated, dict):
            return _terminated_reason(terminated, "Init:")
        if isinstance(waiting, dict) and waiting.get("reason") not in (None, "", "PodInitializing"):
            return f"Init:{waiting['reason']}"
        return f"Init:{index}/{len(inits)}"
    return None


def _pod_status(pod: Object, tally: _PodTally) -> str:
    status = section(pod, "status")
    phase = status.get("phase") or ""
    reason = status.get("reason") or phase
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    restartable = _PodTally()
    init_reason = _init_reason(pod, tally, restartable)
    if init_reason is not None:
        reason = init_reason
    if init_reason is None or _has_condition(status, "Initialized"):
        tally.restarts, tally.last_restart = restartable.restarts, restartable.last_restart
        reason = _containers_reason(status, tally, reason)
    deleting = bool(meta(pod).get("deletionTimestamp"))
    if deleting and status.get("reason") == "NodeLost":
        return "Unknown"
    if deleting and phase not in ("Succeeded", "Failed"):
        return "Terminating"
    return reason


def _containers_reason(status: dict[str, Any], tally: _PodTally, reason: str) -> str:
    has_running = False
    for container in reversed(status.get("containerStatuses") or []):
        tally.count_restarts(container)
        state = section(container, "state")
        waiting, terminated = state.get("waiting"), state.get("terminated")
        if isinstance(waiting, dict) and waiting.get("reason"):
            reason = waiting["reason"]
        elif isinstance(terminated, dict):
            reason = _terminated_reason(terminated)
        elif container.get("ready") and isinstance(state.get("running"), dict):
            has_running = True
            tally.ready += 1
    if reason == "Completed" and has_running:
        return "Running" if _has_condition(status, "Ready") else "NotReady"
    return reason


def _pod_cells(pod: Object, now: datetime.datetime) -> list[Any]:
    spec, status = section(pod, "spec"), section(pod, "status")
    inits = spec.get("initContainers") or []
    total = len(spec.get("containers") or []) + sum(1 for c in inits if _restartable(c))
    tally = _PodTally()
    reason = _pod_status(pod, tally)
    restarts = str(tally.restarts)
    if tally.restarts and tally.last_restart:
        restarts = f"{tally.restarts} ({age(tally.last_restart, now)} ago)"
    ips = [entry.get("ip") for entry in status.get("podIPs") or [] if entry.get("ip")]
    pod_ip = ips[0] if ips else status.get("podIP") or "<none>"
    return [
        meta(pod).get("name", ""),
        f"{tally.ready}/{total}",
        reason,
        restarts,
        created(pod, now),
        pod_ip,
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        _readiness_gates(spec, status),
    ]


def _readiness_gates(spec: dict[str, Any], status: dict[str, Any]) -> str:
    gates = spec.get("readinessGates") or []
    if not gates:
        return "<none>"
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    passed = sum(1 for gate in gates if conditions.get(gate.get("conditionType")) == "True")
    return f"{passed}/{len(gates)}"


def _pod_conditions(pod: Object) -> list[dict[str, Any]]:
    phase = section(pod, "status").get("phase")
    messages = {"Succeeded": "The pod has completed successfully.", "Failed": "The pod failed."}
    if phase not in messages:
        return []
    return [{"type": "Completed", "status": "True", "reason": phase, "message": messages[phase]}]


POD_PRINTER = Printer(
    (
        NAME_COLUMN,
        Column(
            "Ready", "string", "The aggregate readiness state of this pod for accepting traffic."
        ),
        Column("Status", "string", "The aggregate status of the containers in this pod."),
        Column(
            "Restarts",
            "string",
            "The number of times the containers in this pod have been restarted and when the last "
            "container in this pod has restarted.",
        ),
        AGE_COLUMN,
        Column("IP", "string", "podIP address allocated to the pod.", priority=1),
        Column("Node", "string", "NodeName is the node the pod is scheduled onto.", priority=1),
        Column(
            "Nominated Node",
            "string",
            "nominatedNodeName is set only when this pod preempts other pods on the node.",
            priority=1,
        ),
        Column(
            "Readiness Gates",
            "string",
            "If specified, all readiness gates will be evaluated for pod readiness.",
            priority=1,
        ),
    ),
    _pod_cells,
    _pod_conditions,
)
