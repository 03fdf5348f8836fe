"""The kubelet's rules for container states, restarts, pod phase and pod conditions, pure.

Ported from the kubelet (`getPhase`, `GeneratePodInitializedCondition`,
`GenerateContainersReadyCondition`) so a pod run by the local node reads as one
run by a real node: a container waiting to restart keeps the phase Running and makes
ContainersReady and Ready False. When a restart happens is backoff.py's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Status = Mapping[str, Any]

TERMINAL_PHASES = ("Succeeded", "Failed")


def exit_reason(exit_code: int) -> str:
    """The runtime's reason for an exit: Completed for 0, Error otherwise."""
    return "Completed" if exit_code == 0 else "Error"


def waiting(reason: str, message: str | None = None) -> dict[str, Any]:
    body = {"reason": reason, **({"message": message} if message else {})}
    return {"waiting": body}


def running(started_at: str) -> dict[str, Any]:
    return {"running": {"startedAt": started_at}}


def terminated(
    exit_code: int,
    *,
    started_at: str | None = None,
    finished_at: str | None = None,
    reason: str | None = None,
    message: str | None = None,
    container_id: str | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"exitCode": exit_code, "reason": reason or exit_reason(exit_code)}
    if started_at:
        body["startedAt"] = started_at
    if finished_at:
        body["finishedAt"] = finished_at
    if message:
        body["message"] = message
    if container_id:
        body["containerID"] = container_id
    return {"terminated": body}


def should_restart(restart_policy: str, exit_code: int) -> bool:
    """Whether an exited container is started again in place (Always, or OnFailure on failure)."""
    if restart_policy == "Always":
        return True
    return restart_policy == "OnFailure" and exit_code != 0


def _by_name(statuses: Sequence[Status]) -> dict[str, Status]:
    return {str(s.get("name")): s for s in statuses}


def _last_terminated(status: Status) -> Mapping[str, Any] | None:
    found: Mapping[str, Any] | None = (status.get("lastState") or {}).get("terminated")
    return found


def _init_counts(spec: Status, init_statuses: Sequence[Status]) -> tuple[int, int]:
    """(pending, failed) init containers, as the kubelet counts them."""
    known = _by_name(init_statuses)
    pending = failed = 0
    for container in spec.get("initContainers") or ():
        status = known.get(str(container.get("name")))
        state = (status or {}).get("state") or {}
        if status is None or "running" in state:
            pending += 1
        elif "terminated" in state:
            failed += int(state["terminated"].get("exitCode", 0) != 0)
        elif "waiting" in state and _last_terminated(status) is not None:
            failed += int((_last_terminated(status) or {}).get("exitCode", 0) != 0)
        else:
            pending += 1
    return pending, failed


def pod_phase(
    spec: Status,
    init_statuses: Sequence[Status],
    statuses: Sequence[Status],
    *,
    terminal: bool = False,
) -> str:
    """The pod phase from container statuses (the kubelet's getPhase).

    `terminal` is the kubelet's "pod is terminal": the pod is being deleted and
    its containers will not be restarted whatever the restart policy says.
    """
    pending_init, failed_init = _init_counts(spec, init_statuses)
    known = _by_name(statuses)
    unknown = running_ = waiting_ = stopped = succeeded = 0
    for container in spec.get("containers") or ():
        status = known.get(str(container.get("name")))
        state = (status or {}).get("state") or {}
        if status is None:
            unknown += 1
        elif "running" in state:
            running_ += 1
        elif "terminated" in state:
            stopped += 1
            succeeded += int(state["terminated"].get("exitCode", 0) == 0)
        elif "waiting" in state and _last_terminated(status) is not None:
            stopped += 1
        elif "waiting" in state:
            waiting_ += 1
        else:
            unknown += 1
    policy = spec.get("restartPolicy") or "Always"
    if failed_init and policy == "Never":
        return "Failed"
    if pending_init or waiting_:
        return "Pending"
    if running_ and not unknown:
        return "Running"
    if not running_ and stopped and not unknown:
        if terminal:
            return "Succeeded" if stopped == succeeded else "Failed"
        if policy == "Always":
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        return "Failed" if policy == "Never" else "Running"
    return "Pending"


def _condition(kind: str, ok: bool, reason: str | None = None, message: str | None = None
               ) -> dict[str, Any]:
    body: dict[str, Any] = {"type": kind, "status": "True" if ok else "False"}
    if reason:
        body["reason"] = reason
    if message:
        body["message"] = message
    return body


def _has_started(status: Status) -> bool:
    state = status.get("state") or {}
    return "running" in state or "terminated" in state or _last_terminated(status) is not None


def _initialized(spec: Status, init_statuses: Sequence[Status], statuses: Sequence[Status],
                 phase: str) -> dict[str, Any]:
    known = _by_name(init_statuses)
    unknown, incomplete = [], []
    for container in spec.get("initContainers") or ():
        name = str(container.get("name"))
        status = known.get(name)
        if status is None:
            unknown.append(name)
            continue
        done = ((status.get("state") or {}).get("terminated") or {}).get("exitCode")
        if done != 0:
            incomplete.append(name)
    if phase == "Succeeded" and not unknown:
        return _condition("Initialized", True, "PodCompleted")
    if any(_has_started(s) for s in statuses):
        return _condition("Initialized", True)
    messages = []
    if unknown:
        messages.append(f"containers with unknown status: [{' '.join(unknown)}]")
    if incomplete:
        messages.append(f"containers with incomplete status: [{' '.join(incomplete)}]")
    if messages:
        return _condition("Initialized", False, "ContainersNotInitialized", ", ".join(messages))
    return _condition("Initialized", True)


def _containers_ready(spec: Status, statuses: Sequence[Status], phase: str, kind: str
                      ) -> dict[str, Any]:
    known = _by_name(statuses)
    unknown, unready = [], []
    for container in spec.get("containers") or ():
        name = str(container.get("name"))
        status = known.get(name)
        if status is None:
            unknown.append(name)
        elif not status.get("ready"):
            unready.append(name)
    if phase == "Succeeded" and not unknown:
        return _condition(kind, False, "PodCompleted")
    if phase == "Failed":
        return _condition(kind, False, "PodFailed")
    messages = []
    if unknown:
        messages.append(f"containers with unknown status: [{' '.join(unknown)}]")
    if unready:
        messages.append(f"containers with unready status: [{' '.join(unready)}]")
    if messages:
        return _condition(kind, False, "ContainersNotReady", ", ".join(messages))
    return _condition(kind, True)


def pod_conditions(
    spec: Status, init_statuses: Sequence[Status], statuses: Sequence[Status], phase: str
) -> list[dict[str, Any]]:
    """Initialized, ContainersReady and Ready, from each container's `ready` (running, and
    past its readiness probe when it has one; readiness gates are not read)."""
    return [
        _initialized(spec, init_statuses, statuses, phase),
        _containers_ready(spec, statuses, phase, "ContainersReady"),
        _containers_ready(spec, statuses, phase, "Ready"),
    ]


def merge_conditions(
    previous: Sequence[Status], computed: Sequence[Mapping[str, Any]], now: str
) -> list[dict[str, Any]]:
    """`computed` merged into `previous`: other writers' conditions (PodScheduled) are kept,
    and lastTransitionTime moves only when a condition's status flips."""
    old = {str(c.get("type")): c for c in previous}
    merged = [dict(c) for c in previous if str(c.get("type")) not in {x["type"] for x in computed}]
    for condition in computed:
        before = old.get(condition["type"])
        same = before is not None and before.get("status") == condition["status"]
        since = (before or {}).get("lastTransitionTime") if same else now
        merged.append({**condition, "lastTransitionTime": since or now})
    return merged
