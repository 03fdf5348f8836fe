"""A replica's pod deleted under its type's expectations (actions._deletion, _deleted): the
pass awaits the pod's going, by name, until the watch shows it; a DELETE answered NotFound
(gone already) or refused is awaited no more, and a refusal other than NotFound fails the
pass. A pod already going is not deleted again, and nothing is deleted while the type's
expectations are unmet (the cache may not show an earlier pass's pods yet): the pass looks
again in a second. A replica's service is no pod: its deletion is not awaited."""

from __future__ import annotations

import pytest

from engine.controller.reconcile.actions import execute
from engine.controller.runtime.expectations import ExpectationKey, Expectations
from engine.kube.errors import Forbidden, NotFound
from tests.scenarios.world import machine_job, worker
from tests.unit.controller.action_runs import (
    Api,
    Recorder,
    action_run,
    judged,
    obj,
    planned,
    world_of,
)

WORKERS = ExpectationKey("MachineJob/team/train", "Worker")


def delete_pass(action: str, expectations: Expectations, api: Api, **metadata: str
                ) -> list[float]:
    """One pass whose only action is `action` of Worker-1, whose pod and service exist;
    what it waits for."""
    world = world_of(machine_job(workers=2))
    decision, facts = judged(world, actions=(planned(action, worker(1)),))
    run = action_run(world, decision, api, Recorder(), facts=facts, expectations=expectations,
                     pods={worker(1): obj("train-worker-1", **metadata)},
                     services={worker(1): obj("train-worker-1-svc")})
    execute(run)
    return run.wait_s


def test_a_deleted_pod_is_awaited_by_name_until_the_watch_shows_it_gone() -> None:
    expectations = Expectations()
    delete_pass("deletePod", expectations, Api())
    assert not expectations.satisfied(WORKERS)
    expectations.deletion_observed(WORKERS, "train-worker-0")
    assert not expectations.satisfied(WORKERS)
    expectations.deletion_observed(WORKERS, "train-worker-1")
    assert expectations.satisfied(WORKERS)


def test_a_pod_gone_already_is_awaited_no_more() -> None:
    expectations = Expectations()
    gone = NotFound(404, "NotFound", "gone", {})
    api = Api(refuse={("delete", "train-worker-1"): gone})
    delete_pass("deletePod", expectations, api)
    assert api.verbs("delete") == ["train-worker-1"]
    assert expectations.satisfied(WORKERS)


def test_a_refused_delete_fails_the_pass_and_is_awaited_no_more() -> None:
    expectations = Expectations()
    refused = Forbidden(403, "Forbidden", "not allowed", {})
    with pytest.raises(Forbidden, match="not allowed"):
        delete_pass("deletePod", expectations,
                    Api(refuse={("delete", "train-worker-1"): refused}))
    assert expectations.satisfied(WORKERS)


def test_a_pod_already_going_is_not_deleted_again() -> None:
    expectations, api = Expectations(), Api()
    wait_s = delete_pass("deletePod", expectations, api,
                         deletionTimestamp="2027-01-15T07:59:00Z")
    assert api.sent == []
    assert wait_s == []
    assert expectations.satisfied(WORKERS)


def test_nothing_is_deleted_while_the_types_expectations_are_unmet() -> None:
    expectations, api = Expectations(), Api()
    expectations.expect_creations(WORKERS, 1)  # an earlier pass's pod, not seen yet
    assert delete_pass("deletePod", expectations, api) == [1.0]
    assert api.sent == []


def test_a_deleted_service_is_not_awaited() -> None:
    expectations, api = Expectations(), Api()
    delete_pass("deleteService", expectations, api)
    assert api.sent == [("delete", "services", "train-worker-1-svc",
                         ("team", "uid-train-worker-1-svc", None))]
    assert expectations.satisfied(WORKERS)


def test_a_service_gone_already_is_no_failure() -> None:
    gone = NotFound(404, "NotFound", "gone", {})
    api = Api(refuse={("delete", "train-worker-1-svc"): gone})
    delete_pass("deleteService", Expectations(), api)
    assert api.verbs("delete") == ["train-worker-1-svc"]


def test_a_pod_no_replica_holds_is_deleted() -> None:
    # Claimed by the job but placed on no replica (say, its index label is gone): stale.
    world = world_of(machine_job(workers=2))
    decision, facts = judged(world, actions=())
    api = Api()
    execute(action_run(world, decision, api, Recorder(), facts=facts,
                       unplaced=(obj("train-stray"),)))
    assert api.sent == [("delete", "pods", "train-stray", ("team", "uid-train-stray", None))]


def test_a_pod_of_an_older_attempt_is_deleted_under_its_types_expectations() -> None:
    # Whatever the machine plans: a job restarted as a whole replaces every replica's pod.
    expectations, api = Expectations(), Api()
    world = world_of(machine_job(workers=2))
    decision, facts = judged(world, actions=())
    execute(action_run(world, decision, api, Recorder(), facts=facts,
                       expectations=expectations, old_attempt=frozenset({worker(1)}),
                       pods={worker(i): obj(f"train-worker-{i}") for i in range(2)}))
    assert api.sent == [("delete", "pods", "train-worker-1", ("team", "uid-train-worker-1", None))]
    expectations.deletion_observed(WORKERS, "train-worker-0")
    assert not expectations.satisfied(WORKERS)
    expectations.deletion_observed(WORKERS, "train-worker-1")
    assert expectations.satisfied(WORKERS)


def test_nothing_is_deleted_when_the_expectations_were_unmet_as_the_pass_began() -> None:
    # The pass read the cache after its expectations were met meanwhile: it must not act on
    # a cache that may not show the pods they awaited.
    api = Api()
    world = world_of(machine_job(workers=2))
    decision, facts = judged(world, actions=(planned("deletePod", worker(1)),))
    run = action_run(world, decision, api, Recorder(), facts=facts,
                     satisfied={"Worker": False}, pods={worker(1): obj("train-worker-1")})
    execute(run)
    assert api.sent == []
    assert run.wait_s == [1.0]
