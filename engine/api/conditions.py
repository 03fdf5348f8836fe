"""Job conditions as the controller reads and writes them: pure functions on status dicts.

Kubeflow's meaning is kept: a condition that changes moves to the end of the
list (its tools take the last condition as the job's state), lastTransitionTime
moves only when the status flips. A call that changes nothing returns an equal
list, so the controller can skip a status write that would only wake itself up.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Condition = dict[str, Any]


def get_condition(conditions: Sequence[Condition], type: str) -> Condition | None:
    """The condition of this type, if the job has one."""
    return next((c for c in conditions if c.get("type") == type), None)


def is_true(conditions: Sequence[Condition], type: str) -> bool:
    """Whether the job has this condition with status True."""
    found = get_condition(conditions, type)
    return found is not None and found.get("status") == "True"


def set_condition(
    conditions: Sequence[Condition],
    *,
    type: str,
    status: str,
    reason: str,
    message: str,
    now: str,
) -> list[Condition]:
    """A new list with the condition of `type` set; the input is not changed.

    lastUpdateTime is `now` whenever status, reason or message changes;
    lastTransitionTime is `now` only when the status changes (or the condition is new).
    """
    current = get_condition(conditions, type)
    copies = [dict(c) for c in conditions]
    if current is None or current.get("status") != status:
        transitioned = now
    elif (current.get("reason"), current.get("message")) == (reason, message):
        return copies
    else:
        transitioned = current.get("lastTransitionTime", now)
    updated = {
        "type": type,
        "status": status,
        "reason": reason,
        "message": message,
        "lastUpdateTime": now,
        "lastTransitionTime": transitioned,
    }
    return [c for c in copies if c.get("type") != type] + [updated]
