"""Interchangeable pods beyond their type's replicas (actions._delete_surplus), as a
ReplicaSet scaled down has: each is deleted under its type's expectations (no replica holds
it, so the type is the surplus entry's), and said in the machine's deletedReason Event about
the job, for no replica. A machine that creates one pod at a time (no pod.slowStart) deletes
them one at a time, under the same expectations."""

from __future__ import annotations

import dataclasses
from typing import Any

from engine.controller.reconcile.actions import execute
from engine.controller.reconcile.claims import Claimed
from engine.controller.runtime.expectations import ExpectationKey, Expectations
from engine.kube.resources import PODS
from tests.unit.controller.action_runs import (
    Api,
    Recorder,
    Said,
    action_run,
    judged,
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


def surplus_pass(*, slow_start: bool) -> tuple[Api, Recorder, Expectations]:
    """A pass of `web` with two pods beyond its one replica."""
    world = world_of(replica_set())
    decision, facts = judged(world, actions=())
    api, recorder, expectations = Api(), Recorder(), Expectations()
    run = action_run(world, decision, api, recorder, facts=facts, expectations=expectations)
    run.replica_objects = Claimed({}, resource=PODS, surplus=(
        ("Pod", obj("web-b")), ("Pod", obj("web-a"))))
    if not slow_start:
        shipped = run.definition.definition
        one_at_a_time = shipped.model_copy(update={"spec": shipped.spec.model_copy(update={
            "pod": shipped.spec.pod.model_copy(update={"slow_start": False})})})
        run.definition = dataclasses.replace(run.definition, definition=one_at_a_time)
    assert run.slow_starting is slow_start
    execute(run)
    return api, recorder, expectations


def test_the_surplus_is_deleted_awaited_and_said_for_no_replica() -> None:
    for slow_start in (True, False):
        api, recorder, expectations = surplus_pass(slow_start=slow_start)
        assert api.verbs("delete") == ["web-b", "web-a"]
        assert recorder.said == [
            Said("web", "Normal", "SuccessfulDelete", f"Deleted pod: {name}", None)
            for name in ("web-b", "web-a")]
        assert not expectations.satisfied(PODS_OF_WEB)
        expectations.deletion_observed(PODS_OF_WEB, "web-b")
        expectations.deletion_observed(PODS_OF_WEB, "web-a")
        assert expectations.satisfied(PODS_OF_WEB)
