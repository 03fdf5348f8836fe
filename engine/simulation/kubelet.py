"""What a kubelet and the rest of a cluster do to a pod, on a fake clock.

The simulated world keeps pods as the API server would show them; these
functions change one pod's status the way the kubelet reports a start, an
end (a final one under restartPolicy Never, an in-place restart under
OnFailure and Always), and the way a lost node or a deletion shows. The
engine's own observation code then reads them, so a simulation sees exactly
what the engine would see in a cluster.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from engine.controller.reconcile.observe import IN_PLACE_POLICIES
from engine.kube.timestamps import format_time

Pod = dict[str, Any]
"""A pod as the API server returns it."""

NODE = "simulated-node"
LOST_NODE = "simulated-node-lost"

KUBELET_BACKOFF_S = 10.0
KUBELET_BACKOFF_MAX_S = 300.0


def _main(pod: Pod) -> str:
    containers = pod["spec"].get("containers") or [{}]
    return str(containers[0].get("name") or "main")


def _set_container(pod: Pod, state: dict[str, Any], *, last: dict[str, Any] | None = None,
                   restarts: int | None = None) -> None:
    statuses = pod["status"].get("containerStatuses") or [{}]
    before = statuses[0]
    pod["status"]["containerStatuses"] = [{
        "name": _main(pod),
        "state": state,
        "lastState": last if last is not None else before.get("lastState", {}),
        "restartCount": restarts if restarts is not None else before.get("restartCount", 0),
        "ready": "running" in state,
    }]


def _set_ready(pod: Pod, ready: bool, now: datetime) -> None:
    """The pod's Ready condition, as the kubelet reports it for a container without a
    readiness probe: True while it runs, False once it ended (a JobSet's Jobs count their
    ready pods, and InOrder start-up waits for them)."""
    value = "True" if ready else "False"
    conditions = pod["status"].get("conditions") or []
    before = next((c for c in conditions if c.get("type") == "Ready"), None)
    since = (before.get("lastTransitionTime") if before and before.get("status") == value
             else format_time(now))
    pod["status"]["conditions"] = [*(c for c in conditions if c.get("type") != "Ready"),
                                   {"type": "Ready", "status": value, "lastTransitionTime": since}]


def scheduled(pod: Pod, now: datetime) -> None:
    """A pod the API server just stored: bound to the node, its container being created."""
    pod.setdefault("spec", {})["nodeName"] = NODE
    pod["metadata"]["creationTimestamp"] = format_time(now)
    pod["status"] = {"phase": "Pending"}
    _set_container(pod, {"waiting": {"reason": "ContainerCreating"}})


def start(pod: Pod, now: datetime) -> None:
    """The main container runs (again, after an in-place restart)."""
    pod["status"]["phase"] = "Running"
    pod["status"].setdefault("startTime", format_time(now))
    _set_container(pod, {"running": {"startedAt": format_time(now)}})
    _set_ready(pod, True, now)


def end(pod: Pod, code: int, now: datetime, reason: str = "") -> bool:
    """The main container ended with `code`. Returns whether the kubelet will restart it in
    place (restartPolicy OnFailure with a non-zero code, or Always): then the pod stays
    Running; otherwise its phase becomes Succeeded or Failed."""
    terminated = {"exitCode": code, "reason": reason or ("Completed" if code == 0 else "Error"),
                  "finishedAt": format_time(now)}
    policy = pod["spec"].get("restartPolicy") or "Always"
    in_place = policy in IN_PLACE_POLICIES and (policy == "Always" or code != 0)
    _set_container(pod, {"terminated": terminated})
    _set_ready(pod, False, now)
    if not in_place:
        pod["status"]["phase"] = "Succeeded" if code == 0 else "Failed"
    return in_place


def restart_in_place(pod: Pod, now: datetime) -> None:
    """The kubelet started the ended container again in the same pod."""
    statuses = pod["status"]["containerStatuses"][0]
    last = {"terminated": statuses["state"]["terminated"]}
    _set_container(pod, {"running": {"startedAt": format_time(now)}}, last=last,
                   restarts=int(statuses.get("restartCount", 0)) + 1)
    _set_ready(pod, True, now)


def restart_delay(pod: Pod) -> float:
    """How long the kubelet waits before restarting an ended container in place:
    10 s doubling per restart, at most five minutes (its CrashLoopBackOff)."""
    restarts = int(pod["status"]["containerStatuses"][0].get("restartCount", 0))
    return float(min(KUBELET_BACKOFF_S * 2 ** restarts, KUBELET_BACKOFF_MAX_S))


def ended_in_place(pod: Pod) -> bool:
    """Whether the pod's container ended and waits for the kubelet to start it again."""
    if pod["status"].get("phase") != "Running":
        return False
    state = (pod["status"].get("containerStatuses") or [{}])[0].get("state") or {}
    return "terminated" in state


def lose(pod: Pod) -> None:
    """The pod's node went away: the pod still says Running, on a node that is not Ready."""
    pod["spec"]["nodeName"] = LOST_NODE


def mark_deleted(pod: Pod, now: datetime) -> None:
    """Someone (the engine, a user, the garbage collector) started to delete the pod."""
    pod["metadata"].setdefault("deletionTimestamp", format_time(now))


SIGTERM_EXIT = 143
"""How a container stopped by its deletion's SIGTERM ends."""


def has_ended(pod: Pod) -> bool:
    """Whether the pod is in a terminal phase."""
    return pod["status"].get("phase") in ("Succeeded", "Failed")


def stop(pod: Pod, now: datetime) -> None:
    """The kubelet stopped a pod being deleted: a running container ends with SIGTERM's
    143, one that never started as the kubelet reports it (137, ContainerStatusUnknown),
    and the pod's phase is Failed (the kubelet moves a deleted pod to a terminal phase)."""
    state = (pod["status"].get("containerStatuses") or [{}])[0].get("state") or {}
    if "running" in state:
        terminated = {"exitCode": SIGTERM_EXIT, "reason": "Error"}
    else:
        terminated = {"exitCode": 137, "reason": "ContainerStatusUnknown"}
    _set_container(pod, {"terminated": {**terminated, "finishedAt": format_time(now)}})
    _set_ready(pod, False, now)
    pod["status"]["phase"] = "Failed"


def mark_evicted(pod: Pod, now: datetime) -> None:
    """The Eviction API deletes the pod: the API server adds the DisruptionTarget
    condition first, as it does for an eviction."""
    conditions = [c for c in pod["status"].get("conditions") or ()
                  if c.get("type") != "DisruptionTarget"]
    conditions.append({"type": "DisruptionTarget", "status": "True",
                       "reason": "EvictionByEvictionAPI",
                       "message": "Eviction API: evicting",
                       "lastTransitionTime": format_time(now)})
    pod["status"]["conditions"] = conditions
    mark_deleted(pod, now)


def node_ready(name: str) -> bool:
    """Whether a node of the simulated world is Ready (only the lost one is not)."""
    return name != LOST_NODE


def is_running(pod: Pod) -> bool:
    """Whether the pod's main container runs (it will end some time)."""
    state = (pod["status"].get("containerStatuses") or [{}])[0].get("state") or {}
    return "running" in state and not pod["metadata"].get("deletionTimestamp")


def is_waiting(pod: Pod) -> bool:
    """Whether the pod has not started its main container yet."""
    return pod["status"].get("phase") == "Pending" and not pod["metadata"].get(
        "deletionTimestamp")


def is_live(pod: Pod) -> bool:
    """Whether the pod has not ended and is not being deleted (the Job API's `active`)."""
    return ((pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            and not pod["metadata"].get("deletionTimestamp"))
