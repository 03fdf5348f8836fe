"""A replica's pod deleted (actions._delete): the DELETE carries the pod's uid, the pass
logs it as `deleted pod <name>` bound to the job and the replica (what a user greps the
engine's log for when a pod vanished), and a pod already going is left alone."""

from __future__ import annotations

from typing import Any

from engine.controller.reconcile.actions import execute
from engine.controller.reconcile.children import ReplicaId
from engine.kube.errors import NotFound
from tests.scenarios.world import machine_job, worker
from tests.unit.controller.action_runs import (
    Api,
    Recorder,
    Said,
    action_run,
    judged,
    logged,
    obj,
    planned,
    world_of,
)


def test_a_deleted_pod_is_logged_for_its_replica() -> None:
    world = world_of(machine_job(workers=2))
    decision, facts = judged(world, actions=(planned("deletePod", worker(1)),))
    api = Api()
    run = action_run(world, decision, api, Recorder(), facts=facts,
                     pods={worker(1): obj("train-worker-1")})
    with logged() as lines:
        execute(run)
    assert api.sent == [("delete", "pods", "train-worker-1", ("team", "uid-train-worker-1", None))]
    assert [(level, message, extra) for level, message, extra in lines if level == "INFO"] == [
        ("INFO", "deleted pod train-worker-1",
         {"job": "team/train", "kind": "MachineJob", "replica": "Worker-1"})]


def batch_job() -> dict[str, Any]:
    """A batch/v1 Job of one pod: its machine says each pod it deletes (SuccessfulDelete)."""
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "pi", "namespace": "team", "generation": 1},
        "spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}},
    }


def deleted_in_phase(phase: str | None) -> list[Said]:
    """What a pass that deletes the Job's pod, in `phase`, says."""
    world = world_of(batch_job())
    decision, facts = judged(world, actions=(planned("deletePod", ReplicaId("Job", 0)),))
    pod = obj("pi-0") | ({"status": {"phase": phase}} if phase else {})
    api, recorder = Api(), Recorder()
    execute(action_run(world, decision, api, recorder, facts=facts,
                       pods={ReplicaId("Job", 0): pod}))
    assert api.verbs("delete") == ["pi-0"]
    return recorder.said


def test_a_pod_deleted_before_it_ended_is_said() -> None:
    # As the Job controller says each active pod it deletes.
    for phase in (None, "Pending", "Running"):
        assert deleted_in_phase(phase) == [
            Said("pi", "Normal", "SuccessfulDelete", "Deleted pod: pi-0", "Job-0")]


def test_an_ended_pod_deleted_is_not_said() -> None:
    # The engine deletes an ended pod to replace it, which the Job controller never does.
    for phase in ("Succeeded", "Failed"):
        assert deleted_in_phase(phase) == []


def test_a_member_sent_back_to_waiting_whose_pod_is_gone_already_is_not_said() -> None:
    # Parallelism 1 of 2 completions: Work-1 waits again, and its pod's DELETE answers
    # NotFound (another pass, or the user, deleted it): this pass deleted nothing to say.
    job = {
        "apiVersion": "jobmachine.dev/v1alpha1", "kind": "MachineJob",
        "metadata": {"name": "pool", "namespace": "team", "generation": 1},
        "spec": {"replicaSpecs": {"Work": {
            "completions": 2, "parallelism": 1, "restartPolicy": "Never",
            "template": {"spec": {"containers": [{"name": "main", "image": "example/w:1"}]}},
        }}},
    }
    world = world_of(job)
    decision, facts = judged(world, actions=())
    gone = NotFound(404, "NotFound", "gone", {})
    api, recorder = Api(refuse={("delete", "pool-work-1"): gone}), Recorder()
    execute(action_run(world, decision, api, recorder, facts=facts,
                       pods={ReplicaId("Work", i): obj(f"pool-work-{i}") for i in range(2)}))
    assert api.verbs("delete") == ["pool-work-1"]
    assert recorder.said == []
