"""Children no replica owns any more (actions._delete_stale): each is deleted with its
uid precondition, and only a pool member sent back to waiting (its pool's parallelism was
lowered) says so in a ParallelismLowered Event; a member beyond a lowered completions, or a
pod of a type the spec no longer has, goes without one."""

from __future__ import annotations

from typing import Any

from engine.controller.reconcile.actions import execute
from engine.controller.reconcile.children import ReplicaId
from engine.kube.resources import Resource
from tests.unit.controller.action_runs import (
    Api,
    Recorder,
    Said,
    action_run,
    judged,
    obj,
    world_of,
)


def work(index: int) -> ReplicaId:
    return ReplicaId("Work", index)


def pool_job(**pool: Any) -> dict[str, Any]:
    """A MachineJob whose one type, Work, is a pool with these fields."""
    return {
        "apiVersion": "jobmachine.dev/v1alpha1", "kind": "MachineJob",
        "metadata": {"name": "pool", "namespace": "team", "generation": 1},
        "spec": {"replicaSpecs": {"Work": {
            **pool, "restartPolicy": "Never",
            "template": {"spec": {"containers": [{"name": "main", "image": "example/w:1"}]}},
        }}},
    }


def stale_pass(job: dict[str, Any], pods: dict[ReplicaId, dict[str, Any]]
               ) -> tuple[Api, Recorder]:
    world = world_of(job)
    decision, facts = judged(world, actions=())
    api, recorder = Api(), Recorder()
    execute(action_run(world, decision, api, recorder, pods=pods, facts=facts))
    return api, recorder


def test_a_member_sent_back_to_waiting_says_so_when_its_pod_goes() -> None:
    # Parallelism 2: Work-0 and Work-1 have a place; Work-2's pod is from before.
    api, recorder = stale_pass(pool_job(completions=3, parallelism=2),
                               {work(i): obj(f"pool-work-{i}") for i in range(3)})
    assert api.sent == [("delete", "pods", "pool-work-2", ("team", "uid-pool-work-2", None))]
    assert recorder.said == [Said(
        "pool", "Normal", "ParallelismLowered",
        "Work-2 waits for a place again: its pool's parallelism is now 2; its pod "
        "pool-work-2 is deleted.", "Work-2")]


def test_a_member_beyond_the_completions_goes_without_an_event() -> None:
    api, recorder = stale_pass(pool_job(completions=2, parallelism=3),
                               {work(i): obj(f"pool-work-{i}") for i in range(3)})
    assert api.verbs("delete") == ["pool-work-2"]
    assert recorder.said == []


def test_a_pod_of_a_type_the_spec_no_longer_has_goes_without_an_event() -> None:
    api, recorder = stale_pass(pool_job(completions=1, parallelism=1),
                               {work(0): obj("pool-work-0"),
                                ReplicaId("Old", 0): obj("pool-old-0")})
    assert api.verbs("delete") == ["pool-old-0"]
    assert recorder.said == []


def test_a_child_object_is_deleted_in_the_foreground_its_service_is_not() -> None:
    # A spec.child object (here a batch Job) goes in the foreground, so that a new one waits
    # for the old one's pods; a service, like a pod, does not.
    world = world_of(pool_job(completions=1, parallelism=1))
    decision, facts = judged(world, actions=())
    api = Api()
    jobs = Resource("batch", "v1", "jobs", "Job")
    execute(action_run(world, decision, api, Recorder(), facts=facts, resource=jobs,
                       pods={work(3): obj("pool-work-3")},
                       services={work(3): obj("pool-work-3-svc")}))
    assert api.sent == [
        ("delete", "jobs", "pool-work-3", ("team", "uid-pool-work-3", "Foreground")),
        ("delete", "services", "pool-work-3-svc", ("team", "uid-pool-work-3-svc", None)),
    ]
