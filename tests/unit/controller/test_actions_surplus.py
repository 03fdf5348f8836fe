"""Interchangeable pods beyond their type's replicas (actions._delete_surplus), as a
ReplicaSet scaled down has: each is deleted under its type's expectations (no replica holds
it, so the type is the surplus entry's), and said in the machine's deletedReason Event about
the job, for no replica (its older surplusReason only when it names no deletedReason); a
pass that had no more than a burst of them does not look again. A machine that creates one
pod at a time (no pod.slowStart) deletes them one at a time, under the same expectations."""

from __future__ import annotations

import dataclasses
from typing import Any

from engine.controller.reconcile.actions import execute
from engine.controller.reconcile.batches import BURST_REPLICAS
from engine.controller.reconcile.claims import Claimed
from engine.controller.runtime.expectations import ExpectationKey, Expectations
from engine.kube.resources import PODS
from tests.unit.controller.action_runs import (
    Api,
    Recorder,
    Said,
    action_run,
    judged,
    logged,
    obj,
    world_of,
)

PODS_OF_WEB = ExpectationKey("ReplicaSet/team/web", "Pod")


def replica_set() -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "web", "namespace": "team", "generation": 1},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def surplus_pass(*, slow_start: bool = True, names: tuple[str, ...] = ("web-b", "web-a"),
                 **pod: Any) -> tuple[Api, Recorder, Expectations, list[float]]:
    """A pass of `web` with the pods `names` beyond its one replica, its machine's pod
    section changed by `pod` (slow_start among them); what it waits for last."""
    world = world_of(replica_set())
    decision, facts = judged(world, actions=())
    api, recorder, expectations = Api(), Recorder(), Expectations()
    run = action_run(world, decision, api, recorder, facts=facts, expectations=expectations)
    run.replica_objects = Claimed({}, resource=PODS,
                                  surplus=tuple(("Pod", obj(name)) for name in names))
    shipped = run.definition.definition
    changed = shipped.model_copy(update={"spec": shipped.spec.model_copy(update={
        "pod": shipped.spec.pod.model_copy(update={"slow_start": slow_start, **pod})})})
    run.definition = dataclasses.replace(run.definition, definition=changed)
    assert run.slow_starting is slow_start
    execute(run)
    return api, recorder, expectations, run.wait_s


def test_the_surplus_is_deleted_awaited_and_said_for_no_replica() -> None:
    for slow_start in (True, False):
        api, recorder, expectations, _ = surplus_pass(slow_start=slow_start)
        assert api.verbs("delete") == ["web-b", "web-a"]
        assert recorder.said == [
            Said("web", "Normal", "SuccessfulDelete", f"Deleted pod: {name}", None)
            for name in ("web-b", "web-a")]
        assert not expectations.satisfied(PODS_OF_WEB)
        expectations.deletion_observed(PODS_OF_WEB, "web-b")
        expectations.deletion_observed(PODS_OF_WEB, "web-a")
        assert expectations.satisfied(PODS_OF_WEB)


def test_the_older_surplus_reason_is_said_only_without_a_deleted_reason() -> None:
    _, recorder, _, _ = surplus_pass(surplus_reason="Trimmed")
    assert [said.reason for said in recorder.said] == ["SuccessfulDelete"] * 2
    _, recorder, _, _ = surplus_pass(deleted_reason=None, surplus_reason="Trimmed")
    assert recorder.said == [Said("web", "Normal", "Trimmed", f"Deleted pod: {name}", None)
                             for name in ("web-b", "web-a")]


def test_a_pass_deleting_its_whole_burst_of_surplus_does_not_look_again_for_more() -> None:
    names = tuple(f"web-{i}" for i in range(BURST_REPLICAS))
    api, _, _, wait_s = surplus_pass(names=names)
    assert len(api.verbs("delete")) == BURST_REPLICAS
    assert wait_s == []


def test_a_surplus_pods_deletion_is_logged_for_the_job_alone() -> None:
    with logged("team/web") as lines:
        surplus_pass(names=("web-b",))
    assert [(message, extra) for _, message, extra in lines
            if message.startswith("deleted")] == [
        ("deleted pod web-b", {"job": "team/web", "kind": "ReplicaSet"})]
