"""TFJob lifecycles as step tables, through the real machine (machines/tfjob.yaml).

TFJob's success rule differs from PyTorchJob's: the Chief (or Master) decides;
without one, Worker 0 acts as the chief (replica state SucceededAsChief), or
every Worker must succeed with `successPolicy: AllWorkers`. Parameter servers
never finish by themselves, so they never hold a job back.
"""

from __future__ import annotations

import json

from tests.scenarios.world import (
    CHIEF,
    Step,
    World,
    exited,
    pending,
    play,
    ps,
    running,
    tf_job,
    worker,
)

PS_AND_WORKERS = ("PS-0", "Worker-0", "Worker-1")
RUNNING = {ps(0): running(), worker(0): running(), worker(1): running()}


def test_worker_0_finishing_ends_a_job_without_a_chief() -> None:
    world = World(tf_job(replicas={"PS": 1, "Worker": 2}))
    results = play(world, [
        Step("submitted", phase="Created", created=PS_AND_WORKERS,
             conditions={"Created": "True"}),
        Step("everything runs", RUNNING, phase="Running",
             events=["Started", "Started", "Started"]),
        Step("worker-1 finishes first: not the chief", {worker(1): exited(0)},
             phase="Running", states={"Worker-1": "Succeeded"}),
        Step("worker-0 finishes: the job succeeds, PS still running",
             {worker(0): exited(0)}, phase="Succeeded", job_actions=["cleanupPods"],
             states={"Worker-0": "SucceededAsChief", "PS-0": "Running"},
             conditions={"SuccessCriteriaMet": None, "Succeeded": "True", "Running": "False"},
             events=["SucceededAsChief", "TFJobSucceeded"]),
    ])
    status = results[-1].status
    assert json.loads(status["record"])["replicas"]["Worker"] == {
        "Succeeded": "1", "SucceededAsChief": "0"}
    assert status["replicaStatuses"]["Worker"]["succeeded"] == 2
    assert status["replicaStatuses"]["PS"]["active"] == 1
    assert results[-1].condition_reason("Succeeded") == "TFJobSucceeded"


def test_all_workers_policy_waits_for_every_worker() -> None:
    play(World(tf_job(replicas={"PS": 1, "Worker": 2}, successPolicy="AllWorkers")), [
        Step("submitted", phase="Created", created=PS_AND_WORKERS),
        Step("everything runs", RUNNING, phase="Running"),
        Step("worker-0 finishes", {worker(0): exited(0)}, phase="Running",
             states={"Worker-0": "SucceededAsChief"}),
        Step("worker-1 finishes", {worker(1): exited(0)}, phase="Succeeded",
             job_actions=["cleanupPods"]),
    ])


def test_with_a_chief_the_chief_decides_running_and_success() -> None:
    play(World(tf_job(replicas={"Chief": 1, "Worker": 2})), [
        Step("submitted", phase="Created", created=("Chief-0", "Worker-0", "Worker-1")),
        Step("workers run, the chief not yet",
             {CHIEF: pending(), worker(0): running(), worker(1): running()}, phase="Created"),
        Step("the chief runs", {CHIEF: running()}, phase="Running"),
        Step("worker-0 finishes: it is not the chief here", {worker(0): exited(0)},
             phase="Running", states={"Worker-0": "SucceededAsChief"}),
        Step("the chief finishes", {CHIEF: exited(0)}, phase="Succeeded",
             job_actions=["cleanupPods"]),
    ])


def test_a_failed_worker_fails_the_job_under_the_default_never_policy() -> None:
    results = play(World(tf_job(replicas={"Chief": 1, "Worker": 2})), [
        Step("submitted", phase="Created", created=("Chief-0", "Worker-0", "Worker-1")),
        Step("everything runs", {CHIEF: running(), worker(0): running(), worker(1): running()},
             phase="Running"),
        Step("worker-1 exits 137: Never does not restart", {worker(1): exited(137)},
             phase="Failed", job_actions=["cleanupPods"], restarts=0,
             events=["ExitedWithCode", "TFJobFailed"]),
    ])
    assert results[-1].condition_reason("Failed") == "TFJobFailed"
    ended = results[-1].notices[0]
    assert (ended.type, ended.reason) == ("Normal", "ExitedWithCode")
    assert ended.message == ("Pod: team.dist-mnist-worker-1 exited with code 137; restart policy "
                             "Never does not retry it (exit code 137).")


def test_dynamic_workers_tolerate_a_failed_worker() -> None:
    job = tf_job(replicas={"Chief": 1, "Worker": 2}, enableDynamicWorker=True)
    play(World(job), [
        Step("submitted", phase="Created", created=("Chief-0", "Worker-0", "Worker-1")),
        Step("everything runs", {CHIEF: running(), worker(0): running(), worker(1): running()},
             phase="Running"),
        Step("worker-1 fails", {worker(1): exited(2)}, phase="Running",
             states={"Worker-1": "Failed"}),
        Step("the chief finishes", {CHIEF: exited(0)}, phase="Succeeded",
             job_actions=["cleanupPods"]),
    ])


def test_an_unknown_replica_type_is_invalid() -> None:
    job = tf_job(replicas={"Worker": 1})
    job["spec"]["tfReplicaSpecs"]["Launcher"] = job["spec"]["tfReplicaSpecs"]["Worker"]
    results = play(World(job), [
        Step("submitted", phase="Failed", job_actions=["cleanupPods"],
             conditions={"FailureTarget": None, "Failed": "True"},
             events=["FailedValidation"]),
    ])
    assert results[0].condition_reason("Failed") == "FailedValidation"
