"""The simulated world: one reconcile of the engine's own code against in-memory pods.

Each test moves the world by hand (the kubelet's doings, the clock) and reads what
one engine pass decided and did, as the driver and the model checker rely on.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from engine.controller.reconcile.children import ReplicaId
from engine.simulation import kubelet
from engine.simulation.world import Pass, World
from tests.kinds import shipped_definitions

T0 = datetime(2030, 1, 1, tzinfo=UTC)
WORKER_0, WORKER_1 = ReplicaId("Worker", 0), ReplicaId("Worker", 1)


def machine_job(*, policy: str = "ExitCode", **types: int) -> dict[str, Any]:
    """A MachineJob with the given replica types and counts."""
    template = {"spec": {"containers": [{"name": "main", "image": "example/etl"}]}}
    return {
        "apiVersion": "jobmachine.dev/v1alpha1", "kind": "MachineJob",
        "metadata": {"name": "etl", "namespace": "team", "uid": "uid-etl", "generation": 1},
        "spec": {"replicaSpecs": {t: {"replicas": n, "restartPolicy": policy,
                                      "template": template} for t, n in types.items()}},
    }


def world_of(job: dict[str, Any]) -> World:
    return World(shipped_definitions()["MachineJob"], job, T0)


def settle(world: World) -> list[Pass]:
    """Reconcile until a pass changes nothing, as the engine's watches would wake it."""
    passes = [world.reconcile()]
    while passes[-1].changed:
        passes.append(world.reconcile())
    return passes


def start_all(world: World) -> None:
    for pod in world.pods.values():
        kubelet.start(pod, world.now)


def names(replicas: tuple[ReplicaId, ...]) -> list[str]:
    return [str(r) for r in replicas]


def test_a_new_job_gets_every_pod_in_its_first_pass() -> None:
    # Expectations are asked once per pass (the Job controller's once per sync), so the
    # pass's own creations do not hold back the rest of their type.
    world = world_of(machine_job(Worker=3, PS=1))
    passes = settle(world)
    assert [names(p.created) for p in passes] == [["Worker-0", "Worker-1", "Worker-2", "PS-0"],
                                                  []]
    assert world.state() == "Created"
    assert [e.reason for e in passes[0].events] == ["JobCreated"]
    pod = world.pods[WORKER_0]
    assert pod["status"]["phase"] == "Pending"
    assert pod["spec"]["nodeName"] == kubelet.NODE
    assert pod["metadata"]["name"] == "etl-worker-0"


def test_running_pods_make_the_job_run() -> None:
    world = world_of(machine_job(Worker=2))
    settle(world)
    start_all(world)
    passes = settle(world)
    assert world.state() == "Running"
    assert [e.reason for e in passes[0].events if e.replica is None] == ["JobRunning"]
    assert passes[-1].next_look is None


def test_a_failed_replica_is_recreated_only_after_the_back_off() -> None:
    world = world_of(machine_job(Worker=1))
    settle(world)
    start_all(world)
    settle(world)
    world.advance(5)
    kubelet.end(world.pods[WORKER_0], 137, world.now)
    failed = settle(world)
    assert names(failed[0].deleted) == ["Worker-0"]
    assert world.job["status"]["restarts"] == 1
    world.advance(1)
    assert world.remove_deleted_pods() == [WORKER_0]
    waiting = settle(world)
    assert [names(p.created) for p in waiting] == [[], []]
    assert waiting[-1].next_look == T0 + timedelta(seconds=15)  # 10 s after the failure
    world.advance_to(T0 + timedelta(seconds=15))
    assert names(world.reconcile().created) == ["Worker-0"]


def test_an_in_place_restart_keeps_the_pod_and_counts_one_restart() -> None:
    world = world_of(machine_job(policy="OnFailure", Worker=1))
    settle(world)
    start_all(world)
    settle(world)
    pod = world.pods[WORKER_0]
    uid = pod["metadata"]["uid"]
    assert kubelet.end(pod, 1, world.now)  # OnFailure, exit 1: the kubelet restarts it
    assert pod["status"]["phase"] == "Running"
    ended = settle(world)
    assert (names(ended[0].created), names(ended[0].deleted)) == ([], [])
    assert world.job["status"]["restarts"] == 1
    assert kubelet.restart_delay(pod) == 10
    kubelet.restart_in_place(pod, world.now)
    settle(world)
    assert kubelet.restart_delay(pod) == 20  # CrashLoopBackOff doubles
    assert world.pods[WORKER_0]["metadata"]["uid"] == uid
    assert world.job["status"]["restarts"] == 1  # each end is counted once


def test_a_pod_on_a_lost_node_is_deleted_and_counted_as_a_restart() -> None:
    world = world_of(machine_job(Worker=2))
    settle(world)
    start_all(world)
    settle(world)
    kubelet.lose(world.pods[WORKER_1])
    lost = settle(world)
    assert names(lost[0].deleted) == ["Worker-1"]
    assert world.pods[WORKER_1]["metadata"]["deletionTimestamp"]
    assert world.job["status"]["restarts"] == 1
    assert "PodLost" in [e.reason for e in lost[0].events]


def test_a_suspended_job_deletes_every_pod_and_creates_none() -> None:
    world = world_of(machine_job(Worker=2))
    settle(world)
    start_all(world)
    settle(world)
    world.edit_spec(lambda spec: spec.setdefault("runPolicy", {}).update(suspend=True))
    suspended = settle(world)
    assert [names(p.deleted) for p in suspended] == [["Worker-0", "Worker-1"], []]
    assert world.state() == "Suspended"
    world.remove_deleted_pods()
    assert [names(p.created) for p in settle(world)] == [[]]
    world.edit_spec(lambda spec: spec["runPolicy"].update(suspend=False))
    resumed = settle(world)
    assert world.state() == "Created"
    assert names(resumed[0].created) == ["Worker-0", "Worker-1"]


def test_a_deadline_that_has_passed_is_not_asked_for_again_while_the_pods_go() -> None:
    """The job sits in Failing after its deadline while its pods terminate; a wake-up at the
    passed deadline would have the engine reconcile it again at once, pass after pass."""
    job = machine_job(Worker=1)
    job["spec"]["runPolicy"] = {"activeDeadlineSeconds": 60, "cleanPodPolicy": "All"}
    world = world_of(job)
    settle(world)
    start_all(world)
    settle(world)
    world.advance(61)
    passes = settle(world)
    assert world.state() == "Failing"
    assert world.pods[WORKER_0]["metadata"].get("deletionTimestamp")
    assert passes[-1].next_look is None or passes[-1].next_look > world.now
