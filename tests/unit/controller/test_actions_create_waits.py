"""When a replica's pod is not created yet (actions._may_create): while the job's child
objects are not as the machine wants them (a pod may mount them), the pass creates no pod and
looks again when it was told to, however soon; a slow-start pass holds one create per
replica, however often it was planned."""

from __future__ import annotations

from engine.controller.reconcile.actions import execute
from tests.scenarios.world import machine_job, pytorch_job, worker
from tests.unit.controller.action_runs import Api, Recorder, action_run, judged, planned, world_of


def test_no_pod_is_created_while_the_jobs_objects_are_not_ready() -> None:
    for objects_wait_s in (0.5, 3.0):
        world = world_of(machine_job(workers=2))
        decision, facts = judged(world, actions=(planned("createPod", worker(1)),))
        api = Api()
        run = action_run(world, decision, api, Recorder(), facts=facts,
                         objects_wait_s=objects_wait_s)
        execute(run)
        assert api.sent == []
        assert run.wait_s == [objects_wait_s]


def test_a_slow_start_pass_holds_one_create_per_replica() -> None:
    world = world_of(pytorch_job(workers=2))
    decision, facts = judged(world, actions=(planned("createPod", worker(1)),
                                             planned("createPod", worker(1))))
    api = Api()
    execute(action_run(world, decision, api, Recorder(), facts=facts))
    assert api.verbs("create") == ["mnist-worker-1"]


def test_no_pod_is_created_when_the_expectations_were_unmet_as_the_pass_began() -> None:
    world = world_of(machine_job(workers=2))
    decision, facts = judged(world, actions=(planned("createPod", worker(1)),))
    api = Api()
    run = action_run(world, decision, api, Recorder(), facts=facts, satisfied={"Worker": False})
    execute(run)
    assert api.sent == []
    assert run.wait_s == [1.0]
