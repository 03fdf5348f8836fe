"""PyTorchJob lifecycles as step tables: what happens to the pods, and what the engine decides.

Each table reads like the field notes: "worker-1 exits 137, its pod goes, it runs
again, the master finishes -> Running, Restarting, Restarting, Running, Succeeded;
Worker-1 created twice; one restart". Every step is one reconcile through the
real machine (machines/pytorchjob.yaml), with status written back in between.
"""

from __future__ import annotations

import pytest

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.record import RestartRecord, read_record
from tests.scenarios.world import (
    MASTER,
    T0,
    Step,
    World,
    deleted,
    ended_in_place,
    evicted,
    exited,
    exited_while_phase_running,
    lost,
    pending,
    play,
    pytorch_job,
    running,
    worker,
)

ALL = ("Master-0", "Worker-0", "Worker-1")
ALL_RUN = {MASTER: running(), worker(0): running(), worker(1): running()}
STARTED = [
    Step("the job is submitted", phase="Created", created=ALL,
         conditions={"Created": "True"}, events=[]),
    Step("every pod runs", ALL_RUN, phase="Running",
         conditions={"Created": "True", "Running": "True"},
         events=["Started", "Started", "Started"]),
]


def test_a_job_whose_master_finishes_succeeds() -> None:
    world = World(pytorch_job())
    results = play(world, [
        *STARTED,
        Step("the workers finish", {worker(0): exited(0), worker(1): exited(0)},
             phase="Running", states={"Worker-0": "Succeeded", "Worker-1": "Succeeded"}),
        Step("the master finishes; cleanPodPolicy None deletes nothing, so it is settled "
             "and Succeeded takes SuccessCriteriaMet over in the same pass",
             {MASTER: exited(0)}, phase="Succeeded", job_actions=["cleanupPods"],
             conditions={"Running": "False", "SuccessCriteriaMet": None, "Succeeded": "True"},
             events=["ExitedWithCode", "PyTorchJobSucceeded"]),
        Step("nothing changes afterwards", phase="Succeeded", events=[]),
    ])
    finished = results[3]
    assert finished.job_path == [
        ("Running", "Succeeding", "PyTorchJobSucceeded"),
        ("Succeeding", "Succeeded", "PyTorchJobSucceeded"),
    ]
    succeeded = finished.condition("Succeeded") or {}
    assert (succeeded.get("reason"), succeeded.get("message")) == (
        "PyTorchJobSucceeded", "PyTorchJob team/mnist successfully completed.")
    status = world.job["status"]
    assert status["completionTime"] == status["startTime"]
    assert status["replicaStatuses"]["Master"]["succeeded"] == 1
    assert status["replicaStatuses"]["Worker"]["succeeded"] == 2


def test_the_master_running_is_enough_for_running() -> None:
    play(World(pytorch_job()), [
        STARTED[0],
        Step("only the master runs", {MASTER: running(), worker(0): pending()},
             phase="Running", created=["Worker-1"]),
    ])


def test_a_worker_killed_with_137_is_restarted_and_the_job_still_succeeds() -> None:
    world = World(pytorch_job(policy="ExitCode"))
    results = play(world, [
        *STARTED,
        Step("worker-1 is OOM-killed (137): the job is Restarting",
             {worker(1): exited(137, "OOMKilled")},
             phase="Restarting", deleted=["Worker-1"], restarts=1,
             conditions={"Restarting": "True", "Running": None},
             states={"Worker-1": "Restarting"},
             events=["ExitedWithCode", "PyTorchJobRestarting"]),
        Step("its pod is gone: created again at once", {worker(1): None},
             phase="Restarting", created=["Worker-1"], restarts=1,
             conditions={"Restarting": "True", "Running": None},
             states={"Worker-1": "Pending"}, events=[]),
        Step("it runs again: the job is Running again", {worker(1): running()},
             phase="Running", restarts=1,
             conditions={"Restarting": None, "Running": "True"},
             states={"Worker-1": "Running"}, events=["Restarted"]),
        Step("the master finishes", {MASTER: exited(0)}, phase="Succeeded",
             job_actions=["cleanupPods"], restarts=1,
             conditions={"Succeeded": "True", "Running": "False"}),
    ])
    assert [r.phase for r in results] == [
        "Created", "Running", "Restarting", "Restarting", "Running", "Succeeded"
    ]
    created = [name for r in results for name in r.planned("createPod")]
    assert created == [*ALL, "Worker-1"]
    assert read_record(world.job["status"]).replica_restarts == {
        ReplicaId("Worker", 1): RestartRecord(1, "2027-01-15T08:00:00Z")
    }
    assert results[2].notices == []  # the restart is said by its event actions only
    assert results[2].posted == [
        ("Normal", "ExitedWithCode", "Pod: team.mnist-worker-1 exited with code 137"),
        ("Warning", "PyTorchJobRestarting",
         "job mnist is restarting because Worker replica(s) failed."),
    ]
    assert results[2].job_path == [("Running", "Restarting", "PyTorchJobRestarting")]
    restarting = results[2].condition("Restarting") or {}
    assert (restarting.get("reason"), restarting.get("message")) == (
        "PyTorchJobRestarting", "job mnist is restarting because Worker replica(s) failed.")
    assert results[2].condition("Running") is None  # Restarting replaced it, as in Kubeflow
    rerun = results[4].notices[0]
    assert (rerun.reason, rerun.message) == (
        "Restarted", "Worker-1 runs again in pod mnist-worker-1 (restart 1).")
    assert results[4].job_path == [("Restarting", "Running", "PyTorchJobRunning")]


def test_a_worker_exiting_1_fails_the_job() -> None:
    world = World(pytorch_job(policy="ExitCode"))
    results = play(world, [
        *STARTED,
        Step("worker-1 exits 1", {worker(1): exited(1, "Error")}, phase="Failed",
             job_actions=["cleanupPods"], restarts=0, states={"Worker-1": "Failed"},
             conditions={"Running": "False", "FailureTarget": None, "Failed": "True"},
             events=["ExitedWithCode", "PyTorchJobFailed"]),
        Step("the master keeps running; nothing more happens", phase="Failed", events=[]),
    ])
    failed = results[2].condition("Failed")
    assert failed is not None
    assert failed["reason"] == "PyTorchJobFailed"
    assert "Worker" in failed["message"]
    ended = results[2].notices[0]
    assert (ended.type, ended.reason, ended.message) == (
        "Normal", "ExitedWithCode",
        "Pod: team.mnist-worker-1 exited with code 1; restart policy ExitCode does not retry "
        "it (exit code 1, Error).")


@pytest.mark.parametrize(
    ("policy", "code", "outcome"),
    [
        ("OnFailure", 1, "in place"),
        ("OnFailure", 137, "in place"),
        ("OnFailure", 0, "success"),
        ("Always", 0, "in place"),
        ("Always", 1, "in place"),
        ("Never", 1, "failure"),
        ("Never", 137, "failure"),
        ("Never", 0, "success"),
        ("ExitCode", 1, "failure"),
        ("ExitCode", 127, "failure"),
        ("ExitCode", 128, "recreate"),
        ("ExitCode", 137, "recreate"),
        ("ExitCode", 143, "recreate"),
        ("ExitCode", 0, "success"),
    ],
)
def test_restart_policies_decide_what_an_exit_code_means(
    policy: str, code: int, outcome: str
) -> None:
    """OnFailure and Always pods are restarted in place by the kubelet (their pod stays
    Running); ExitCode and Never pods run with restartPolicy Never and end for good."""
    world = World(pytorch_job(workers=1, policy=policy))
    in_place = policy in ("OnFailure", "Always")
    ends = ended_in_place(code) if in_place and outcome != "success" else exited(code)
    expected = {
        "in place": Step("worker-0 ends", {worker(0): ends}, phase="Restarting",
                         restarts=1, states={"Worker-0": "RestartingInPlace"},
                         conditions={"Restarting": "True", "Running": None},
                         events=["ExitedWithCode", "PyTorchJobRestarting"]),
        "recreate": Step("worker-0 ends", {worker(0): ends}, phase="Restarting",
                         deleted=["Worker-0"], restarts=1, states={"Worker-0": "Restarting"},
                         conditions={"Restarting": "True", "Running": None},
                         events=["ExitedWithCode", "PyTorchJobRestarting"]),
        "success": Step("worker-0 ends", {worker(0): ends}, phase="Running",
                        restarts=0, states={"Worker-0": "Succeeded"}),
        "failure": Step("worker-0 ends", {worker(0): ends}, phase="Failed",
                        job_actions=["cleanupPods"], restarts=0,
                        states={"Worker-0": "Failed"}, conditions={"Failed": "True"}),
    }[outcome]
    play(world, [
        Step("submitted", phase="Created", created=["Master-0", "Worker-0"]),
        Step("both run", {MASTER: running(), worker(0): running()}, phase="Running"),
        expected,
    ])
    assert world.pods[worker(0)]["spec"]["restartPolicy"] == (policy if in_place else "Never")


@pytest.mark.parametrize("policy", ["OnFailure", "Always"])
def test_a_pod_that_fails_as_a_whole_is_recreated_under_an_in_place_policy(policy: str) -> None:
    """Phase Failed (its activeDeadlineSeconds passed): the kubelet will not restart it, so
    the machine creates it again and counts a restart."""
    world = World(pytorch_job(workers=1, policy=policy))
    play(world, [
        Step("submitted", phase="Created", created=["Master-0", "Worker-0"]),
        Step("both run", {MASTER: running(), worker(0): running()}, phase="Running"),
        Step("worker-0's pod fails", {worker(0): exited(1)}, phase="Restarting",
             deleted=["Worker-0"], restarts=1, states={"Worker-0": "Restarting"},
             events=["ExitedWithCode", "PyTorchJobRestarting"]),
    ])


@pytest.mark.parametrize("policy", ["OnFailure", "Always", "ExitCode"])
def test_an_evicted_pod_without_an_exit_code_is_recreated_unless_never(policy: str) -> None:
    """Evicted: the pod failed as a whole and its container has no exit code; every policy
    but Never creates it again and counts a restart."""
    world = World(pytorch_job(workers=1, policy=policy))
    results = play(world, [
        Step("submitted", phase="Created", created=["Master-0", "Worker-0"]),
        Step("both run", {MASTER: running(), worker(0): running()}, phase="Running"),
        Step("worker-0's pod is evicted", {worker(0): evicted()}, phase="Restarting",
             deleted=["Worker-0"], restarts=1, states={"Worker-0": "Restarting"},
             conditions={"Restarting": "True"},
             events=["PyTorchJobRestarting", "PodFailed"]),
        Step("its pod is gone: created again at once", {worker(0): None},
             phase="Restarting", created=["Worker-0"], restarts=1, events=[]),
        Step("it runs again", {worker(0): running()}, phase="Running", restarts=1,
             conditions={"Restarting": None, "Running": "True"}, events=["Restarted"]),
    ])
    failed = results[2].notices[0]
    assert (failed.type, failed.reason, failed.message) == (
        "Warning", "PodFailed",
        f"Worker-0 failed (no exit code, Evicted); restart policy {policy} recreates it.")


def test_an_evicted_pod_under_never_fails_the_job() -> None:
    play(World(pytorch_job(workers=1, policy="Never")), [
        Step("submitted", phase="Created", created=["Master-0", "Worker-0"]),
        Step("both run", {MASTER: running(), worker(0): running()}, phase="Running"),
        Step("worker-0's pod is evicted", {worker(0): evicted()}, phase="Failed",
             job_actions=["cleanupPods"], restarts=0, states={"Worker-0": "Failed"},
             conditions={"Failed": "True"}),
    ])


def test_a_pod_whose_container_exited_while_it_says_running_is_not_counted_running() -> None:
    """Field notes, story 3: the exit code decides, and the replica is not active."""
    world = World(pytorch_job(policy="ExitCode"))
    results = play(world, [
        *STARTED,
        Step("worker-0's container exits 137, the pod still says Running",
             {worker(0): exited_while_phase_running(137)}, phase="Restarting",
             deleted=["Worker-0"], restarts=1, states={"Worker-0": "Restarting"},
             events=["ExitedWithCode", "PyTorchJobRestarting"]),
    ])
    assert results[-1].status["replicaStatuses"]["Worker"]["active"] == 1


def test_restarts_beyond_the_backoff_limit_fail_the_job() -> None:
    world = World(pytorch_job(workers=1, policy="OnFailure", run_policy={"backoffLimit": 1}))
    fails = {worker(0): exited(1)}
    results = play(world, [
        Step("submitted", phase="Created", created=["Master-0", "Worker-0"]),
        Step("both run", {MASTER: running(), worker(0): running()}, phase="Running"),
        Step("worker-0 fails once", fails, phase="Restarting", deleted=["Worker-0"],
             restarts=1),
        Step("its pod is gone", {worker(0): None}, phase="Restarting", created=["Worker-0"]),
        Step("it runs again", {worker(0): running()}, phase="Running", restarts=1),
        Step("it fails again: 2 restarts > backoffLimit 1; Failing until its pod is gone",
             fails, phase="Failing", deleted=["Worker-0"], job_actions=["cleanupPods"],
             restarts=2, conditions={"FailureTarget": "True", "Failed": None, "Running": "False"},
             events=["ExitedWithCode", "PyTorchJobRestarting", "BackoffLimitExceeded"]),
        Step("its pod is gone: the job has failed, Failed taking FailureTarget over",
             {worker(0): None}, phase="Failed",
             restarts=2, conditions={"FailureTarget": None, "Failed": "True"},
             events=[]),
        Step("a failed job stays failed", phase="Failed", restarts=2, events=[]),
    ])
    assert results[5].condition_reason("FailureTarget") == "BackoffLimitExceeded"
    assert results[6].condition("Failed") == {
        **(results[5].condition("FailureTarget") or {}), "type": "Failed"
    }
    assert "completionTime" not in results[5].status
    assert results[6].status["completionTime"] == "2027-01-15T08:00:00Z"


def test_without_a_backoff_limit_restarts_are_not_limited() -> None:
    world = World(pytorch_job(workers=1, policy="OnFailure"))
    play(world, [
        Step("submitted", phase="Created", created=["Master-0", "Worker-0"]),
        Step("both run", {MASTER: running(), worker(0): running()}, phase="Running"),
    ])
    for attempt in range(1, 6):
        play(world, [
            Step(f"failure {attempt}", {worker(0): exited(1)}, phase="Restarting",
                 deleted=["Worker-0"], restarts=attempt),
            Step("pod gone: created again at once", {worker(0): None}, phase="Restarting",
                 created=["Worker-0"]),
            Step("runs again", {worker(0): running()}, phase="Running"),
        ])


def test_suspend_deletes_every_pod_and_resume_recreates_them_without_restarts() -> None:
    world = World(pytorch_job())
    results = play(world, [
        *STARTED,
        Step("the user suspends the job", run_policy={"suspend": True}, phase="Suspended",
             job_actions=["cleanupPods"],
             conditions={"Suspended": "True", "Running": "False"},
             events=["Suspended", "Suspended", "Suspended", "PyTorchJobSuspended"]),
        Step("its pods go away", {MASTER: None, worker(0): None, worker(1): None},
             phase="Suspended", events=[]),
        Step("still suspended: nothing is created", phase="Suspended"),
        Step("the user resumes it", run_policy={"suspend": False}, phase="Created",
             created=ALL, restarts=0,
             conditions={"Suspended": "False", "Created": "True"}),
        Step("every pod runs again", ALL_RUN, phase="Running", restarts=0,
             conditions={"Running": "True"}),
    ])
    assert results[2].job_actions == [("cleanupPods", {"policy": "All"})]
    assert results[2].decision.holds_replicas


def test_a_job_submitted_suspended_creates_no_pod_until_resumed() -> None:
    play(World(pytorch_job(run_policy={"suspend": True})), [
        Step("submitted suspended", phase="Suspended", job_actions=["cleanupPods"],
             conditions={"Suspended": "True", "Created": "True"}),
        Step("looked at again", phase="Suspended"),
        Step("resumed", run_policy={"suspend": False}, phase="Created", created=ALL),
    ])


def test_a_pod_deleted_by_someone_else_is_recreated_without_counting_a_restart() -> None:
    play(World(pytorch_job()), [
        *STARTED,
        Step("someone deletes worker-0's pod", {worker(0): deleted()}, phase="Restarting",
             deleted=["Worker-0"], restarts=0, states={"Worker-0": "Restarting"},
             conditions={"Restarting": "True", "Running": None}, events=["PodDeleted"]),
        Step("the pod is gone", {worker(0): None}, phase="Restarting", created=["Worker-0"],
             restarts=0, events=[]),
        Step("it runs again", {worker(0): running()}, phase="Running", restarts=0,
             states={"Worker-0": "Running"},
             conditions={"Restarting": None, "Running": "True"}, events=["Started"]),
    ])


def test_a_pod_that_vanished_unseen_is_said_and_created_again_without_counting() -> None:
    results = play(World(pytorch_job()), [
        *STARTED,
        Step("worker-0's pod is gone, its deletion never seen", {worker(0): None},
             phase="Restarting", created=["Worker-0"], deleted=["Worker-0"], restarts=0,
             states={"Worker-0": "Pending"},
             conditions={"Restarting": "True", "Running": None}, events=["PodMissing"]),
        Step("it runs again", {worker(0): running()}, phase="Running", restarts=0,
             states={"Worker-0": "Running"},
             conditions={"Restarting": None, "Running": "True"}, events=["Started"]),
    ])
    assert results[2].replica_path == [
        ("Worker-0", "Running", "Restarting"), ("Worker-0", "Restarting", "Pending")]
    assert results[2].notices[0].message == (
        "Worker-0's pod is gone without the engine seeing it deleted; it will be created again.")
    assert results[2].made == ["Worker-0"]


def test_a_failed_pod_is_created_again_at_once() -> None:
    """As Kubeflow: no re-creation back-off by default for a Kubeflow kind."""
    world = World(pytorch_job(workers=1, policy="ExitCode"))
    results = play(world, [
        Step("submitted", phase="Created", created=["Master-0", "Worker-0"]),
        Step("both run", {MASTER: running(), worker(0): running()}, phase="Running"),
        Step("worker-0 is killed (137)", {worker(0): exited(137)}, phase="Restarting",
             deleted=["Worker-0"], restarts=1),
        Step("its pod is gone: made again in the same pass", {worker(0): None},
             phase="Restarting", created=["Worker-0"], restarts=1),
    ])
    assert results[3].made == ["Worker-0"]
    assert results[3].next_look is None


def test_recreation_backoff_true_waits_before_creating_a_failed_pod_again() -> None:
    """runPolicy.recreationBackoff: true opts into the engine's back-off (10 s, doubling)."""
    world = World(pytorch_job(workers=1, policy="ExitCode",
                              run_policy={"recreationBackoff": True}))
    results = play(world, [
        Step("submitted", phase="Created", created=["Master-0", "Worker-0"]),
        Step("both run", {MASTER: running(), worker(0): running()}, phase="Running"),
        Step("worker-0 is killed (137)", {worker(0): exited(137)}, phase="Restarting",
             deleted=["Worker-0"], restarts=1),
        Step("its pod is gone: planned, but it waits out the back-off", {worker(0): None},
             phase="Restarting", created=["Worker-0"], restarts=1),
        Step("9 s later: still waiting", wait=9, phase="Restarting", created=["Worker-0"]),
        Step("10 s after the restart: made again", wait=1, phase="Restarting",
             created=["Worker-0"]),
        Step("it runs again", {worker(0): running()}, phase="Running", restarts=1),
    ])
    assert results[3].made == [] and results[4].made == []
    assert results[3].next_look == results[4].next_look == T0.replace(second=10)
    assert results[5].made == ["Worker-0"]


NODE_LOST = {worker(1): lost()}


@pytest.mark.parametrize(
    ("policy", "then"),
    [
        ("OnFailure", Step("worker-1's node goes away", NODE_LOST, phase="Restarting",
                           deleted=["Worker-1"], restarts=1, states={"Worker-1": "Restarting"},
                           conditions={"Restarting": "True", "Running": None},
                           events=["PyTorchJobRestarting", "PodLost"])),
        ("Never", Step("worker-1's node goes away", NODE_LOST, phase="Failed",
                       job_actions=["cleanupPods"], restarts=0, states={"Worker-1": "Failed"},
                       events=["PodLost", "PyTorchJobFailed"])),
    ],
)
def test_a_pod_lost_with_its_node_is_a_retryable_failure(policy: str, then: Step) -> None:
    play(World(pytorch_job(policy=policy)), [*STARTED, then])


def test_the_active_deadline_fails_a_running_job() -> None:
    world = World(pytorch_job(run_policy={"activeDeadlineSeconds": 60}))
    play(world, STARTED)
    world.advance(59)
    assert world.reconcile().phase == "Running"
    world.advance(1)
    result = world.reconcile()
    assert result.phase == "Failed"
    assert result.job_path == [
        ("Running", "Failing", "DeadlineExceeded"),
        ("Failing", "Failed", "PyTorchJobFailed"),
    ]
    assert result.condition("FailureTarget") is None  # Failed took it over in the same pass
    assert result.condition_reason("Failed") == "DeadlineExceeded"


@pytest.mark.parametrize(
    ("replicas", "says"),
    [
        ({"Master": {"replicas": 2}}, "Master must have exactly 1 replica"),
        (None, "pytorchReplicaSpecs"),
        ({"Worker": {"template": {"spec": {"containers": [{"name": "x", "image": "i"}]}}}},
         "pytorch"),
    ],
    ids=["two-masters", "no-replica-specs", "no-pytorch-container"],
)
def test_an_invalid_job_fails_at_once_and_creates_nothing(
    replicas: dict[str, dict[str, object]] | None, says: str
) -> None:
    job = pytorch_job()
    specs = job["spec"]["pytorchReplicaSpecs"]
    if replicas is None:
        del job["spec"]["pytorchReplicaSpecs"]
    else:
        for name, change in replicas.items():
            specs[name].update(change)
    results = play(World(job), [
        Step("submitted", phase="Failed", job_actions=["cleanupPods"],
             conditions={"FailureTarget": None, "Failed": "True"},
             events=["FailedValidation"]),
        Step("looked at again", phase="Failed", events=[]),
    ])
    failed = results[0].condition("Failed")
    assert failed is not None
    assert failed["reason"] == "FailedValidation"
    assert says in failed["message"]
    assert results[0].decision.record.replica_states == {}


def test_without_a_master_the_workers_decide() -> None:
    play(World(pytorch_job(masters=0, workers=2)), [
        Step("submitted", phase="Created", created=["Worker-0", "Worker-1"]),
        Step("one worker runs", {worker(0): running(), worker(1): pending()}, phase="Running"),
        Step("worker-0 finishes", {worker(0): exited(0), worker(1): running()},
             phase="Running"),
        Step("worker-1 finishes", {worker(1): exited(0)}, phase="Succeeded",
             job_actions=["cleanupPods"]),
    ])


def test_a_job_that_ends_in_a_decision_creates_no_pod_in_it() -> None:
    """The workers' pods were never made (an engine was killed after creating the master's)
    when the master succeeds: the workers' replicas, stepped before the job's end in the
    same decision, plan their pods, but the ended job cancels them."""
    world = World(pytorch_job())
    results = play(world, [
        STARTED[0],
        Step("only the master's pod was made, and it succeeded", {MASTER: exited(0)},
             phase="Succeeded", job_actions=["cleanupPods"],
             conditions={"Created": "True", "SuccessCriteriaMet": None,
                         "Succeeded": "True"},
             events=["ExitedWithCode", "PyTorchJobSucceeded"]),
        Step("nothing is created afterwards either", phase="Succeeded", events=[]),
    ])
    assert results[1].planned("createPod") == [] and results[1].planned("createService") == []
