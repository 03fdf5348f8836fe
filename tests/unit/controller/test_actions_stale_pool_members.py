"""Pods no replica owns any more deleted in a pass (actions._delete_stale, _delete_all): under
their type's expectations, one at a time or (pod.slowStart, the batch Job machine) all at
once; a pool member sent back to waiting says ParallelismLowered once, for its replica, when
its pod goes (its service's deletion says nothing), and not when the pod was gone already."""

from __future__ import annotations

from typing import Any

from engine.controller.reconcile.actions import execute
from engine.controller.reconcile.children import ReplicaId
from engine.controller.runtime.expectations import ExpectationKey, Expectations
from engine.kube.errors import NotFound
from tests.unit.controller.action_runs import (
    Api,
    Recorder,
    Said,
    action_run,
    judged,
    obj,
    world_of,
)


def machine_pool() -> dict[str, Any]:
    """A MachineJob whose type Work is a pool of 3 completions, 2 at once."""
    return {
        "apiVersion": "jobmachine.dev/v1alpha1", "kind": "MachineJob",
        "metadata": {"name": "pool", "namespace": "team", "generation": 1},
        "spec": {"replicaSpecs": {"Work": {
            "completions": 3, "parallelism": 2, "restartPolicy": "Never",
            "template": {"spec": {"containers": [{"name": "main", "image": "example/w:1"}]}},
        }}},
    }


def batch_pool() -> dict[str, Any]:
    """An Indexed batch/v1 Job of 3 completions, 2 at once (its machine slow-starts)."""
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "pool", "namespace": "team", "generation": 1},
        "spec": {"completions": 3, "parallelism": 2, "completionMode": "Indexed",
                 "template": {"spec": {"restartPolicy": "Never",
                                       "containers": [{"name": "c", "image": "busybox"}]}}},
    }


def stale_pass(job: dict[str, Any], kind: str, *, services: bool = False,
               api: Api | None = None) -> tuple[Api, Recorder, Expectations]:
    """A pass whose 3 members of `kind` each have a pod (and a service): the third waits."""
    world = world_of(job)
    decision, facts = judged(world, actions=())
    api, recorder, expectations = api or Api(), Recorder(), Expectations()
    members = [ReplicaId(kind, i) for i in range(3)]
    execute(action_run(world, decision, api, recorder, facts=facts, expectations=expectations,
                       pods={m: obj(f"pool-{i}") for i, m in enumerate(members)},
                       services={m: obj(f"pool-{i}-svc") for i, m in enumerate(members)}
                       if services else None))
    return api, recorder, expectations


def lowered(kind: str) -> list[Said]:
    """What the deletion of the third member's pod says (the batch Job's machine says each
    pod it deletes first)."""
    deleted = Said("pool", "Normal", "SuccessfulDelete", "Deleted pod: pool-2", "Job-2")
    return [deleted] * (kind == "Job") + [Said("pool", "Normal", "ParallelismLowered",
                 f"{kind}-2 waits for a place again: its pool's parallelism is now 2; its pod "
                 "pool-2 is deleted.", f"{kind}-2")]


def test_a_member_sent_back_to_waiting_is_deleted_under_expectations_and_said() -> None:
    for job, kind in ((machine_pool(), "Work"), (batch_pool(), "Job")):
        api, recorder, expectations = stale_pass(job, kind)
        assert api.verbs("delete") == ["pool-2"]
        assert recorder.said == lowered(kind)
        key = ExpectationKey(f"{job['kind']}/team/pool", kind)
        assert not expectations.satisfied(key)
        expectations.deletion_observed(key, "pool-2")
        assert expectations.satisfied(key)


def test_a_members_service_going_with_its_pod_says_nothing_more() -> None:
    api, recorder, _ = stale_pass(machine_pool(), "Work", services=True)
    assert api.verbs("delete") == ["pool-2", "pool-2-svc"]
    assert recorder.said == lowered("Work")


def test_a_member_whose_pod_was_gone_already_is_not_said() -> None:
    for job, kind in ((machine_pool(), "Work"), (batch_pool(), "Job")):
        gone = NotFound(404, "NotFound", "gone", {})
        api, recorder, _ = stale_pass(job, kind, api=Api(refuse={("delete", "pool-2"): gone}))
        assert api.verbs("delete") == ["pool-2"]
        assert recorder.said == []
