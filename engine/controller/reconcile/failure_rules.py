"""Which failure rule a failed (or restarting) pod matches: the job's rules in order, the first
match wins.

Like the Job API's podFailurePolicy, but per replica type: a rule matches a
container's exit code (a named container or any, init containers included, 0
never), a pod condition such as DisruptionTarget, or a reason (the pod's
status.reason, or a container's termination reason such as OOMKilled).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class FailureMatch:
    """The first rule a failed pod matches: its action, its position, and the cause in the
    words of the Job API's pod failure policy (`Container main for pod team/p failed with
    exit code 2 matching FailJob rule at index 0`)."""

    action: str
    index: int
    cause: str


def failure_match(rules: Sequence[Obj], replica_type: str, pod: Obj) -> FailureMatch | None:
    """The first rule that matches `pod` of `replica_type`, else None."""
    for index, rule in enumerate(rules):
        types = rule.get("replicaTypes") or ()
        if types and replica_type not in types:
            continue
        what = _matched(rule, pod)
        if what is not None:
            action = str(rule["action"])
            return FailureMatch(action, index,
                                f"{what} matching {action} rule at index {index}")
    return None


def failure_action(rules: Sequence[Obj], replica_type: str, pod: Obj) -> str:
    """The action of the first rule that matches `pod` of `replica_type`, else ''."""
    found = failure_match(rules, replica_type, pod)
    return found.action if found is not None else ""


def _matched(rule: Obj, pod: Obj) -> str | None:
    """What of the pod the rule matches, as the Job API's message begins; None: no match."""
    metadata = pod.get("metadata") or {}
    who = f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"
    if rule.get("onExitCodes") is not None:
        container = _exit_codes_match(rule["onExitCodes"], pod)
        return None if container is None else (
            f"Container {container['name']} for pod {who} failed with exit code "
            f"{container['exitCode']}")
    if rule.get("onPodConditions") is not None:
        condition = _conditions_match(rule["onPodConditions"], pod)
        return None if condition is None else f"Pod {who} has condition {condition}"
    if rule.get("onReasons") is not None:
        reasons = [r for r in _reasons(pod) if r in set(rule["onReasons"])]
        return f"Pod {who} has reason {reasons[0]}" if reasons else None
    return None


def _exit_codes_match(match: Obj, pod: Obj) -> dict[str, Any] | None:
    """The first container whose non-zero exit code the match takes, else None."""
    wanted = set(match.get("values") or ())
    name = match.get("containerName")
    for status in _terminated(pod):
        if name is not None and status["name"] != name:
            continue
        code = int(status["exitCode"])
        if code == 0:
            continue
        if (code in wanted) == (match.get("operator") == "In"):
            return status
    return None


def _conditions_match(matches: Iterable[Obj], pod: Obj) -> str | None:
    """The type of the first condition pattern the pod has, else None."""
    present = {
        (c.get("type"), c.get("status"))
        for c in (pod.get("status") or {}).get("conditions") or ()
    }
    return next((str(m.get("type")) for m in matches
                 if (m.get("type"), m.get("status", "True")) in present), None)


def _reasons(pod: Obj) -> list[str]:
    status = pod.get("status") or {}
    found = [str(status["reason"])] if status.get("reason") else []
    found += [str(t["reason"]) for t in _terminated(pod) if t.get("reason")]
    return found


def _terminated(pod: Obj) -> list[dict[str, Any]]:
    """Every container's last end (init containers first), with its name and exit code.

    That is its current state when it has terminated, else the end before it (the one
    the kubelet restarted it in place after, in an OnFailure or Always pod).
    """
    status = pod.get("status") or {}
    found: list[dict[str, Any]] = []
    statuses = [
        *(status.get("initContainerStatuses") or ()),
        *(status.get("containerStatuses") or ()),
    ]
    for container in statuses:
        terminated = (container.get("state") or {}).get("terminated") or (
            container.get("lastState") or {}
        ).get("terminated")
        if terminated is not None and terminated.get("exitCode") is not None:
            found.append({**terminated, "name": container.get("name")})
    return found
