"""A StateMachine's status, and the Events that say what changed about it.

Written only when it changes, conditional on the resourceVersion read (a stale
copy loses); an Event follows each change of verdict, a Warning when a machine
is refused, so `kubectl describe statemachine` tells its story.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.api.conditions import get_condition, set_condition
from engine.controller.machines.admission import Condition, MachineVerdict
from engine.controller.reporting.events import EventRecorder
from engine.kube.client import KubeClient
from engine.kube.resources import STATE_MACHINES

Obj = Mapping[str, Any]


def machine_status(obj: Obj, verdict: MachineVerdict, *, now: str) -> dict[str, Any]:
    """The object's next status (the input is not changed)."""
    status = dict(obj.get("status") or {})
    conditions = list(status.get("conditions") or [])
    for condition in (verdict.accepted, verdict.governing):
        conditions = set_condition(
            conditions, type=condition.type, status=condition.status, reason=condition.reason,
            message=condition.message, now=now,
        )
    status["conditions"] = conditions
    if verdict.generation is not None:
        status["observedGeneration"] = verdict.generation
    if verdict.current_revision is not None:
        status["currentRevision"] = verdict.current_revision
    else:
        status.pop("currentRevision", None)
    return status


def write_machine_status(client: KubeClient, obj: Obj, status: Mapping[str, Any]) -> None:
    """Replace the object's status, conditional on the resourceVersion it was judged from."""
    metadata = obj["metadata"]
    body = {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "metadata": {k: metadata[k] for k in ("name", "resourceVersion", "uid") if k in metadata},
        "spec": obj.get("spec") or {},
        "status": dict(status),
    }
    client.replace(STATE_MACHINES, metadata["name"], body, subresource="status")


def announce(recorder: EventRecorder, obj: Obj, verdict: MachineVerdict) -> None:
    """An Event when the verdict changed since the status the object had: a Warning for a
    refusal (the first condition that says why), a Normal one for a new revision in force."""
    old = (obj.get("status") or {})
    conditions = old.get("conditions") or []
    for condition in (verdict.accepted, verdict.governing):
        before = get_condition(conditions, condition.type)
        if _same(before, condition):
            continue
        if condition.status == "False" and condition.reason != "Abstract":
            recorder.record(obj, type="Warning", reason=condition.reason,
                            message=condition.message)
            break  # one refusal, one Event: Governing False follows from Accepted False
    revision = verdict.current_revision
    if revision is not None and revision != old.get("currentRevision"):
        recorder.record(obj, type="Normal", reason="RevisionInForce",
                        message=f"revision {revision} is in force: {verdict.governing.message}")


def _same(before: Mapping[str, Any] | None, condition: Condition) -> bool:
    return before is not None and (before.get("status"), before.get("reason")) == (
        condition.status, condition.reason
    )
