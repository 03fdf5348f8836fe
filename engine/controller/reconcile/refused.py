"""What a job shows when an admission check refuses what the engine creates for it.

Upstream controllers post a Warning `Error creating: <the server's message>` when a pod
create is refused: the Job controller (and ReplicaSet, StatefulSet...) with reason
`FailedCreate`, Kubeflow's training operator with `FailedCreatePod` / `FailedCreateService`.
The engine posts the same for the kind it runs (built-in kinds: Kubernetes' names;
custom kinds: Kubeflow's), and, on custom kinds, sets the condition ReplicaSet sets then,
`ReplicaFailure`, with the refusing check as its reason, until a reconcile goes through.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.api.conditions import get_condition, set_condition
from engine.kube.refusals import Policy, Refusal

REFUSED_CONDITION = "ReplicaFailure"
"""ReplicaSet's condition for replicas it cannot create (apps/v1 `ReplicaSetReplicaFailure`)."""

_KUBEFLOW_REASONS = {"pods": "FailedCreatePod", "services": "FailedCreateService"}
_KUBERNETES_REASON = "FailedCreate"


def refused_event(refusal: Refusal, *, built_in: bool) -> tuple[str, str]:
    """The Warning event's reason and message, as the upstream controller of such a kind
    posts it (`built_in`: a Kubernetes kind such as batch/v1 Job)."""
    reason = _KUBERNETES_REASON if built_in else _KUBEFLOW_REASONS.get(
        refusal.resource or "", _KUBERNETES_REASON)
    return reason, f"Error creating: {refusal.message}"


def refused_status(status: Mapping[str, Any], refusal: Refusal, *, now: str) -> dict[str, Any]:
    """`status` with the ReplicaFailure condition naming the refusing check."""
    return replica_failure_status(
        status, reason=(refusal.policy or Policy.UNKNOWN).value,
        message=f"{refusal.policy_label} refused the engine: {refusal.message}", now=now)


TEMPLATE_ERROR_REASON = "PodTemplateError"
"""The ReplicaFailure reason while the machine's pod values cannot be computed."""


def replica_failure_status(status: Mapping[str, Any], *, reason: str, message: str, now: str
                           ) -> dict[str, Any]:
    """`status` with the ReplicaFailure condition: a replica's pod cannot be created (a
    refusing check, or pod values the machine cannot compute).

    The condition goes before the last one, which tools of Kubeflow's lineage read as the
    job's state (`conditions[-1]`); it stays where it is when only its message changes.
    """
    conditions = list(status.get("conditions") or [])
    present = get_condition(conditions, REFUSED_CONDITION) is not None
    updated = set_condition(conditions, type=REFUSED_CONDITION, status="True",
                            reason=reason, message=message, now=now)
    if present:
        updated = [next(u for u in updated if u.get("type") == c.get("type")) for c in conditions]
    elif len(updated) > 1:
        updated.insert(-1, updated.pop())
    return {**status, "conditions": updated}


def lifted_status(status: Mapping[str, Any]) -> dict[str, Any] | None:
    """`status` without the ReplicaFailure condition; None when it has none (as ReplicaSet
    does, the condition is removed once the engine's requests go through)."""
    conditions = list(status.get("conditions") or [])
    if get_condition(conditions, REFUSED_CONDITION) is None:
        return None
    return {**status, "conditions": [c for c in conditions if c.get("type") != REFUSED_CONDITION]}


def native_refused_status(status: Mapping[str, Any], refusal: Refusal, *, condition: str,
                          now: str) -> dict[str, Any]:
    """A built-in kind's own `status` with `condition` (its ReplicaSet-shaped refusal
    condition) set as upstream sets it: reason FailedCreate and the server's message, only
    when it is not there yet (upstream keeps the first message until a sync goes through)."""
    conditions = list(status.get("conditions") or [])
    if get_condition(conditions, condition) is not None:
        return dict(status)
    conditions.append({"type": condition, "status": "True", "lastTransitionTime": now,
                       "reason": _KUBERNETES_REASON, "message": refusal.message})
    return {**status, "conditions": conditions}


def kept_refusal(native: Mapping[str, Any], condition: str | None) -> Mapping[str, Any] | None:
    """The refusal condition a built-in kind's own status has now, kept by the status the
    engine writes until a pass goes through (`lifted_status` then removes it)."""
    if condition is None:
        return None
    return get_condition(list(native.get("conditions") or []), condition)
