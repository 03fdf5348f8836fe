"""What the engine sees: a job's pods (or, with spec.child, its child objects) turned into one
observation per replica, and job facts.

Outcomes come from the main container's `state.terminated.exitCode`, not from
the pod phase alone (field notes, story 3): a pod that says Running while its
container has exited is not running, and a pod on a node that is gone is lost.
An OnFailure or Always pod is the exception: the kubelet restarts its ended
container in place, so an end there is a restart (counted from restartCount and
lastState), not an outcome.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from engine.controller.reconcile.failure_rules import failure_match
from engine.controller.reconcile.jobspec import JobSpecView
from engine.definition import CompiledDefinition, read_child
from engine.definition.cel import CelEvaluationError
from engine.kube.timestamps import parse_time

IN_PLACE_POLICIES = frozenset({"OnFailure", "Always"})
"""Pod restartPolicies under which the kubelet restarts an ended container in the same pod."""

_GIST_CHARACTERS = 200


@dataclass(frozen=True)
class PodFacts:
    """One replica's pod as the machines see it: an observation and the `pod` variables."""

    observation: str
    pod: Mapping[str, Any] = field(default_factory=dict)
    exit_code: int = -1
    reason: str = ""
    failure_action: str = ""
    """For a failed or restarting pod: the action of the first failure rule it matches, else ''."""
    failure_cause: str = ""
    """With `failure_action`: what matched, in the Job API's words, else ''."""
    message: str = ""
    """The main container's termination message (of its last end), else ''."""
    ends: int = 0
    """How often the main container of an OnFailure or Always pod ended so far: its
    restartCount, plus one while the kubelet has yet to restart it after an end."""
    uid: str = ""
    deleting: bool = False
    """Whether the pod is being deleted (it has a deletionTimestamp)."""
    child: Mapping[str, Any] = field(default_factory=dict)
    """With spec.child: the replica's child object as last seen (the `child` variable);
    `reason` and `message` are then its failure's words."""
    error: str = ""
    """Why the observation is only a guess: a child status expression failed, else ''."""
    available_in: float | None = None
    """For a Ready pod: seconds until it has been Ready for governs.minReadySeconds (0: it
    is available); None when it is not Ready."""
    labelled: bool = False
    """Whether the pod carries every label of its replica's template (ReplicaSet's
    fullyLabeledReplicas)."""

    @property
    def ready(self) -> bool:
        """Whether the pod runs and its Ready condition is True (readiness probes passed), or
        the child's `ready` expression holds."""
        return (self.observation == "podRunning" and bool(self.pod.get("ready"))) or (
            self.observation == "childReady")

    @property
    def active(self) -> bool:
        """Whether the pod runs, or the child exists and has not ended (JobSet's `active`),
        and it is not being deleted."""
        return self.observation in _ACTIVE and not self.deleting

    @property
    def terminal(self) -> bool:
        """Whether the pod or child will not run again (its outcome is final or it is
        going away)."""
        return self.observation in _TERMINAL

    @property
    def going(self) -> bool:
        """Whether the pod or child is being deleted or is gone: nothing is left to delete."""
        return self.deleting or self.observation in _GOING

    @property
    def terminating(self) -> bool:
        """Whether the pod or child is being deleted and has not ended (the Job API's
        `terminating`)."""
        return (self.deleting and self.pod.get("phase") not in ("Succeeded", "Failed")
                and self.observation not in _CHILD_ENDS)

    @property
    def termination(self) -> str:
        """The end in words: `exit code 2, Error: <last line of the message>`; a child's is
        its failure's reason and message."""
        if self.exit_code < 0 and self.child:
            gist = message_gist(self.message)
            return f"{self.reason}: {gist}" if self.reason and gist else (
                self.reason or gist or "no reason given")
        if self.exit_code < 0:
            return "no exit code"
        text = f"exit code {self.exit_code}"
        if self.reason:
            text += f", {self.reason}"
        gist = message_gist(self.message)
        return f"{text}: {gist}" if gist else text


MISSING = PodFacts("podMissing")
CHILD_MISSING = PodFacts("childMissing")

_ACTIVE = frozenset({"podRunning", "childPending", "childReady"})
_CHILD_ENDS = frozenset({"childSucceeded", "childFailed"})
_TERMINAL = frozenset({"podSucceeded", "podFailed", "podGone", "podLost", *_CHILD_ENDS,
                       "childGone"})
_GOING = frozenset({"podMissing", "podGone", "childMissing", "childGone"})


def message_gist(message: str) -> str:
    """The last non-empty line of a termination message, at most 200 characters (an error
    ends a traceback); '' for none."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    if not lines:
        return ""
    last = lines[-1]
    return last if len(last) <= _GIST_CHARACTERS else "..." + last[-(_GIST_CHARACTERS - 3):]


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


def kubelet_restarts(restart_policy: str | None, exit_code: int) -> bool:
    """Whether the kubelet restarts a container that ended with `exit_code` in place."""
    return restart_policy == "Always" or (restart_policy == "OnFailure" and exit_code != 0)


def observe_pod(
    pod: Mapping[str, Any] | None,
    *,
    main_container: str | None,
    node_ready: Callable[[str], bool],
    judge_deleted_when_ended: bool = False,
) -> PodFacts:
    """The observation for one replica's pod (None: no pod).

    A pod being deleted is `podGone` at once, or, `judge_deleted_when_ended`
    (podReplacementPolicy Failed), observed as any other until it has ended, with
    `deleting` set: its end decides then, through the failure rules.

    A container the kubelet restarts in place (an OnFailure or Always pod that has
    not finished) reads as pending while it waits to run again, with `ends`
    counting its ends; decide turns a new end into `podRestarting`. A finished pod's
    `ends` are its restarts in place, so those the engine never saw (it was down, or
    its watch missed the pod in between) are still counted.
    """
    if pod is None:
        return MISSING
    status = pod.get("status") or {}
    container = main_container_status(pod, main_container)
    state = container.get("state") or {}
    terminated = state.get("terminated")
    restart_count = int(container.get("restartCount") or 0)
    policy = (pod.get("spec") or {}).get("restartPolicy")
    finished = status.get("phase") in ("Succeeded", "Failed")
    last_end = terminated or (container.get("lastState") or {}).get("terminated")
    ends = 0
    if policy in IN_PLACE_POLICIES and finished:
        # Restarted in place before it finished: counted even if never seen in between.
        ends = restart_count
    elif policy in IN_PLACE_POLICIES:
        waits_after_end = "waiting" in state and last_end is not None
        if terminated and kubelet_restarts(policy, int(terminated["exitCode"])):
            ends, terminated = restart_count + 1, None
        else:
            ends = restart_count + (1 if waits_after_end else 0)
    shown = last_end if (terminated or ends) else None
    exit_code = int(shown["exitCode"]) if shown else -1
    reason = str(shown.get("reason") or "") if shown else ""
    facts = {
        "name": pod["metadata"]["name"],
        "phase": status.get("phase", "Pending"),
        "reason": status.get("reason", ""),
        "exitCode": exit_code,
        "terminationReason": reason,
        "restartCount": restart_count,
        "ready": any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in status.get("conditions") or ()
        ),
    }
    deleting = pod["metadata"].get("deletionTimestamp") is not None
    observation = _pod_observation(pod, terminated, state, node_ready,
                                   gone_when_deleted=not judge_deleted_when_ended)
    return PodFacts(
        observation, facts, exit_code, reason,
        message=str(shown.get("message") or "") if shown else "",
        ends=ends,
        uid=str(pod["metadata"].get("uid") or ""),
        deleting=deleting,
    )


def availability(pod: Mapping[str, Any], min_ready_seconds: int, now: datetime
                 ) -> float | None:
    """Seconds until a Ready pod is available (0: it is), as upstream's IsPodAvailable: Ready
    for more than `min_ready_seconds` by its Ready condition's lastTransitionTime (0 makes
    every Ready pod available); None when it is not Ready."""
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") != "Ready" or condition.get("status") != "True":
            continue
        if min_ready_seconds <= 0:
            return 0.0
        since = condition.get("lastTransitionTime")
        if not since:
            return None
        due = parse_time(since) + timedelta(seconds=min_ready_seconds)
        # Upstream's "Before(now)" is strict: at the very second it is not available yet.
        return 0.0 if due < now else max((due - now).total_seconds(), 0.001)
    return None


def carries_labels(pod: Mapping[str, Any], template: Mapping[str, Any]) -> bool:
    """Whether the pod has every label of the pod template (`{metadata, spec}`)."""
    wanted = (template.get("metadata") or {}).get("labels") or {}
    labels = pod["metadata"].get("labels") or {}
    return all(labels.get(key) == value for key, value in wanted.items())


def observe_replica_pod(
    pod: Mapping[str, Any],
    *,
    replica_type: str,
    failure_rules: Sequence[Mapping[str, Any]],
    main_container: str | None,
    node_ready: Callable[[str], bool],
    judge_deleted_when_ended: bool = False,
) -> PodFacts:
    """`observe_pod`, and for a pod that failed or ended to be restarted in place, the
    action of the first failure rule of the job it matches (`failureAction`)."""
    observed = observe_pod(pod, main_container=main_container, node_ready=node_ready,
                           judge_deleted_when_ended=judge_deleted_when_ended)
    if failure_rules and (observed.observation == "podFailed" or observed.ends):
        found = failure_match(failure_rules, replica_type, pod)
        if found is not None:
            observed = replace(observed, failure_action=found.action,
                               failure_cause=found.cause)
    return observed


def observe_child(
    child: Mapping[str, Any] | None, *, job: Mapping[str, Any], definition: CompiledDefinition
) -> PodFacts:
    """The observation for one replica's child object (None: none), from spec.child's status
    expressions: an ended child is judged though it is being deleted, as a pod is; one
    being deleted that has not ended is `childGone`.

    A status expression that fails leaves the child `childPending`, with `error` saying
    why: nothing is decided on a guess (the machine's author sees it in the log).
    """
    if child is None:
        return CHILD_MISSING
    metadata = child.get("metadata") or {}
    deleting = metadata.get("deletionTimestamp") is not None
    pending = PodFacts("childPending", child=child, uid=str(metadata.get("uid") or ""),
                       deleting=deleting)
    try:
        reading = read_child(definition, job, child)
    except CelEvaluationError as exc:
        return replace(pending, error=f"child {metadata.get('name')}: {exc}")
    if reading.succeeded:
        return replace(pending, observation="childSucceeded")
    if reading.failed:
        return replace(pending, observation="childFailed", reason=reading.failure_reason,
                       message=reading.failure_message)
    if deleting:
        return replace(pending, observation="childGone")
    return replace(pending, observation="childReady") if reading.ready else pending


def _pod_observation(
    pod: Mapping[str, Any],
    terminated: Mapping[str, Any] | None,
    state: Mapping[str, Any],
    node_ready: Callable[[str], bool],
    *,
    gone_when_deleted: bool,
) -> str:
    """`terminated` is the main container's final end (None while it runs, waits, or
    waits to be restarted in place)."""
    phase = (pod.get("status") or {}).get("phase")
    deleting = pod["metadata"].get("deletionTimestamp") is not None
    if (terminated and int(terminated["exitCode"]) == 0) or (phase == "Succeeded"):
        return "podSucceeded"
    if deleting and gone_when_deleted:
        return "podGone"
    if terminated or phase == "Failed":
        return "podFailed"
    node = (pod.get("spec") or {}).get("nodeName")
    if phase == "Unknown" or (node and not node_ready(node)):
        return "podLost"
    if "running" in state:
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

    `terminating_pods` counts pods being deleted, pods of an older restart attempt (they
    are about to be) and pods created but not yet seen in the watch (they may have to be);
    decide also withholds `settled` while its own deletions wait.
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
