"""What the engine sees: a job's pods turned into one observation per replica, and job facts.

Outcomes come from the main container's `state.terminated.exitCode`, not from
the pod phase alone (field notes, story 3): a pod that says Running while its
container has exited is not running, and a pod on a node that is gone is lost.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from engine.controller.jobspec import JobSpecView
from engine.controller.timestamps import parse_time


@dataclass(frozen=True)
class PodFacts:
    """One replica's pod as the machines see it: an observation and the `pod` variables."""

    observation: str
    pod: Mapping[str, Any] = field(default_factory=dict)
    exit_code: int = -1
    reason: str = ""
    failure_action: str = ""
    """For a failed pod: the action of the first failure rule it matches, else ''."""

    @property
    def ready(self) -> bool:
        """Whether the pod runs and its Ready condition is True (readiness probes passed)."""
        return self.observation == "podRunning" and bool(self.pod.get("ready"))

    @property
    def terminal(self) -> bool:
        """Whether the pod will not run again (its outcome is final or it is going away)."""
        return self.observation in ("podSucceeded", "podFailed", "podGone", "podLost")


MISSING = PodFacts("podMissing")


def main_container_status(pod: Mapping[str, Any], main: str | None) -> Mapping[str, Any]:
    """The status of the definition's main container, else of the first container."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    if main is not None:
        for status in statuses:
            if status.get("name") == main:
                return dict(status)
    names = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
    wanted = main if main in names else (names[0] if names else None)
    return next((s for s in statuses if s.get("name") == wanted), {})


def observe_pod(
    pod: Mapping[str, Any] | None,
    *,
    main_container: str | None,
    node_ready: Callable[[str], bool],
) -> PodFacts:
    """The observation for one replica's pod (None: no pod)."""
    if pod is None:
        return MISSING
    status = pod.get("status") or {}
    container = main_container_status(pod, main_container)
    terminated = (container.get("state") or {}).get("terminated")
    exit_code = int(terminated["exitCode"]) if terminated else -1
    reason = str(terminated.get("reason") or "") if terminated else ""
    facts = {
        "name": pod["metadata"]["name"],
        "phase": status.get("phase", "Pending"),
        "reason": status.get("reason", ""),
        "exitCode": exit_code,
        "terminationReason": reason,
        "restartCount": int(container.get("restartCount") or 0),
        "ready": any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in status.get("conditions") or ()
        ),
    }
    return PodFacts(
        _pod_observation(pod, terminated, container, node_ready), facts, exit_code, reason
    )


def _pod_observation(
    pod: Mapping[str, Any],
    terminated: Mapping[str, Any] | None,
    container: Mapping[str, Any],
    node_ready: Callable[[str], bool],
) -> str:
    phase = (pod.get("status") or {}).get("phase")
    deleting = pod["metadata"].get("deletionTimestamp") is not None
    if (terminated and int(terminated["exitCode"]) == 0) or (phase == "Succeeded"):
        return "podSucceeded"
    if deleting:
        return "podGone"
    if terminated or phase == "Failed":
        return "podFailed"
    node = (pod.get("spec") or {}).get("nodeName")
    if phase == "Unknown" or (node and not node_ready(node)):
        return "podLost"
    if "running" in (container.get("state") or {}):
        return "podRunning"
    return "podPending"


def node_is_ready(node: Mapping[str, Any] | None) -> bool:
    """Whether a node exists and its Ready condition is True."""
    if node is None:
        return False
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def job_observations(
    job: Mapping[str, Any],
    spec: JobSpecView,
    *,
    start_time: str | None,
    now: datetime,
    terminating_pods: int,
) -> frozenset[str]:
    """The job-level observations that hold now.

    `terminating_pods` counts pods being deleted and pods of an older restart attempt
    (they are about to be); decide also withholds `settled` while its own deletions wait.
    """
    found = {"suspended" if spec.run_policy.get("suspend") else "resumed"}
    if job["metadata"].get("deletionTimestamp"):
        found.add("deleting")
    if spec.error:
        found.add("invalid")
    if terminating_pods == 0:
        found.add("settled")
    deadline = deadline_of(spec, start_time)
    if deadline is not None and now >= deadline and not spec.run_policy.get("suspend"):
        found.add("deadlineExceeded")
    return frozenset(found)


def deadline_of(spec: JobSpecView, start_time: str | None) -> datetime | None:
    """When runPolicy.activeDeadlineSeconds runs out, counted from the job's start time."""
    seconds = spec.run_policy.get("activeDeadlineSeconds")
    if seconds is None or start_time is None:
        return None
    return parse_time(start_time) + timedelta(seconds=int(seconds))
