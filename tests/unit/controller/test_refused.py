"""What a job shows when admission refuses the engine: the event as the upstream controller
of its kind posts it, and the ReplicaFailure condition, placed so the last condition stays
the job's state, and removed once the engine's requests go through."""

from __future__ import annotations

from typing import Any

from engine.controller.reconcile.refused import (
    REFUSED_CONDITION,
    kept_refusal,
    lifted_status,
    native_refused_status,
    refused_event,
    refused_status,
)
from engine.kube.refusals import classify_status

QUOTA = 'pods "job-master-0" is forbidden: exceeded quota: tiny, requested: pods=1, used: ' \
        'pods=1, limited: pods=1'


def refusal(message: str = QUOTA, kind: str = "pods") -> Any:
    return classify_status({"message": message, "details": {"kind": kind}})


def created(now: str = "t0") -> dict[str, Any]:
    return {"type": "Created", "status": "True", "reason": "Created", "message": "",
            "lastUpdateTime": now, "lastTransitionTime": now}


def test_events_are_named_as_the_upstream_controller_of_the_kind_names_them() -> None:
    assert refused_event(refusal(), built_in=True) == ("FailedCreate", f"Error creating: {QUOTA}")
    assert refused_event(refusal(), built_in=False)[0] == "FailedCreatePod"
    assert refused_event(refusal(kind="services"), built_in=False)[0] == "FailedCreateService"
    assert refused_event(refusal(kind="configmaps"), built_in=False)[0] == "FailedCreate"


def test_the_condition_names_the_check_and_keeps_the_state_last() -> None:
    running = {**created(), "type": "Running", "reason": "Running"}
    status = {"phase": "Running", "conditions": [created(), running]}
    updated = refused_status(status, refusal(), now="t1")
    assert [c["type"] for c in updated["conditions"]] == ["Created", REFUSED_CONDITION, "Running"]
    condition = updated["conditions"][1]
    assert (condition["status"], condition["reason"]) == ("True", "ResourceQuota")
    assert condition["message"] == f'ResourceQuota "tiny" refused the engine: {QUOTA}'
    assert status["conditions"] == [created(), running], "the input is not changed"


def test_a_new_message_updates_the_condition_in_place() -> None:
    status = refused_status({"conditions": [created()]}, refusal(), now="t1")
    assert [c["type"] for c in status["conditions"]] == [REFUSED_CONDITION, "Created"]
    again = refused_status(status, refusal(QUOTA.replace("used: pods=1", "used: pods=2")),
                           now="t2")
    assert [c["type"] for c in again["conditions"]] == [REFUSED_CONDITION, "Created"]
    assert again["conditions"][0]["lastTransitionTime"] == "t1"
    assert again["conditions"][0]["lastUpdateTime"] == "t2"
    assert refused_status(again, refusal(QUOTA.replace("used: pods=1", "used: pods=2")),
                          now="t3") == again


def test_a_job_without_conditions_gets_the_condition_alone() -> None:
    assert [c["type"] for c in refused_status({}, refusal(), now="t1")["conditions"]] == [
        REFUSED_CONDITION]


def test_lifting_removes_the_condition_only_where_there_is_one() -> None:
    status = refused_status({"conditions": [created()]}, refusal(), now="t1")
    assert lifted_status(status) == {"conditions": [created()]}
    assert lifted_status({"conditions": [created()]}) is None


def test_a_built_in_kind_gets_replicasets_condition_once_with_the_first_message() -> None:
    """ReplicaSet's calculateStatus: ReplicaFailure, FailedCreate and the error's words, set
    only while absent (a later refusal does not change it); its shape is apps/v1's."""
    status = {"replicas": 1, "readyReplicas": 1}
    refused = native_refused_status(status, refusal(), condition="ReplicaFailure", now="t1")
    assert refused == {**status, "conditions": [{
        "type": "ReplicaFailure", "status": "True", "lastTransitionTime": "t1",
        "reason": "FailedCreate", "message": QUOTA}]}
    again = native_refused_status(refused, refusal("other words"), condition="ReplicaFailure",
                                  now="t2")
    assert again == refused
    assert kept_refusal(refused, "ReplicaFailure") == refused["conditions"][0]
    assert kept_refusal(refused, None) is None
    assert kept_refusal(status, "ReplicaFailure") is None
    assert lifted_status(refused) == {**status, "conditions": []}
