"""Which failure rule a failed (or restarting) pod matches: the job's rules in order, the first
match wins.

Like the Job API's podFailurePolicy, but per replica type: a rule matches a
container's exit code (a named container or any, init containers included, 0
never), a pod condition such as DisruptionTarget, or a reason (the pod's
status.reason, or a container's termination reason such as OOMKilled).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

Obj = Mapping[str, Any]


def failure_action(rules: Sequence[Obj], replica_type: str, pod: Obj) -> str:
    """The action of the first rule that matches `pod` of `replica_type`, else ''."""
    for rule in rules:
        types = rule.get("replicaTypes") or ()
        if types and replica_type not in types:
            continue
        if _matches(rule, pod):
            return str(rule["action"])
    return ""


def _matches(rule: Obj, pod: Obj) -> bool:
    if rule.get("onExitCodes") is not None:
        return _exit_codes_match(rule["onExitCodes"], pod)
    if rule.get("onPodConditions") is not None:
        return _conditions_match(rule["onPodConditions"], pod)
    if rule.get("onReasons") is not None:
        return bool(set(rule["onReasons"]) & set(_reasons(pod)))
    return False


def _exit_codes_match(match: Obj, pod: Obj) -> bool:
    wanted = set(match.get("values") or ())
    name = match.get("containerName")
    for status in _terminated(pod):
        if name is not None and status["name"] != name:
            continue
        code = int(status["exitCode"])
        if code == 0:
            continue
        if (code in wanted) == (match.get("operator") == "In"):
            return True
    return False


def _conditions_match(matches: Iterable[Obj], pod: Obj) -> bool:
    present = {
        (c.get("type"), c.get("status"))
        for c in (pod.get("status") or {}).get("conditions") or ()
    }
    return any((m.get("type"), m.get("status", "True")) in present for m in matches)


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
