"""Job policies as step tables: a failure rule restarting the whole job, the two-phase end
(Failing or Succeeding until the clean-pod policy's pods are gone), and the Pending timeout.

Each step is one reconcile through the real machines, with status written back in
between; pods of an older restart attempt are not observed, as in the reconcile.
"""

from __future__ import annotations

import json

from engine.kube.timestamps import format_time
from tests.scenarios.world import (
    MASTER,
    T0,
    Step,
    World,
    deleted,
    exited,
    machine_job,
    pending,
    play,
    ps,
    pytorch_job,
    running,
    tf_job,
    worker,
)

ALL = ("Master-0", "Worker-0", "Worker-1")
ALL_RUN = {MASTER: running(), worker(0): running(), worker(1): running()}
ALL_GONE = {MASTER: None, worker(0): None, worker(1): None}
STARTED = [
    Step("the job is submitted", phase="Created", created=ALL),
    Step("every pod runs", ALL_RUN, phase="Running"),
]


def test_a_restart_job_rule_deletes_every_pod_and_starts_a_new_attempt() -> None:
    job = pytorch_job(policy="Never")
    job["spec"]["failureRules"] = [
        {"action": "RestartJob", "onExitCodes": {"operator": "In", "values": [42]}}
    ]
    world = World(job)
    results = play(world, [
        *STARTED,
        Step("worker-1 exits 42: the rule says RestartJob", {worker(1): exited(42)},
             phase="RestartingAll", job_actions=["cleanupPods"], restarts=1,
             conditions={"Restarting": "True", "Running": None},
             events=["RestartJob", "PyTorchJobRestarting"]),
        Step("the pods are being deleted", {r: deleted() for r in ALL_RUN},
             phase="RestartingAll", restarts=1, events=[]),
        Step("two are gone; worker-1's pod of the last attempt is still there",
             {MASTER: None, worker(0): None}, phase="RestartingAll", events=[]),
        Step("every pod of the last attempt is gone: a new attempt from Created",
             {worker(1): None}, phase="Created", created=ALL, restarts=1,
             conditions={"Restarting": "False", "Created": "True"},
             states={"Master-0": "Pending", "Worker-0": "Pending", "Worker-1": "Pending"},
             events=["PyTorchJobRestarted"]),
        Step("the new pods run", ALL_RUN, phase="Running", restarts=1,
             states={"Worker-1": "Running"}),
    ])
    restarting = results[2]
    assert restarting.replica_path == [("Worker-1", "Running", "RestartRequested")]
    assert restarting.job_path == [("Running", "RestartingAll", "PyTorchJobRestarting")]
    assert restarting.decision.record.replica_states == {}
    assert restarting.decision.holds_replicas
    assert restarting.job_actions == [("cleanupPods", {"policy": "All"})]
    assert restarting.status["restartAttempt"] == 1
    assert world.job["status"]["restartAttempt"] == 1
    assert world.job["status"]["restarts"] == 1
    assert world.job["status"]["phase"] == "Running"


def test_a_restart_replica_rule_restarts_only_that_replica() -> None:
    """RestartReplica under restart policy Never: the replica is recreated at once and
    counted, said as Kubeflow says a restart; the job is Restarting until it runs again."""
    job = pytorch_job(policy="Never")
    job["spec"]["failureRules"] = [
        {"action": "RestartReplica", "onExitCodes": {"operator": "In", "values": [42]}}
    ]
    results = play(World(job), [
        *STARTED,
        Step("worker-1 exits 42: the rule says RestartReplica", {worker(1): exited(42)},
             phase="Restarting", deleted=["Worker-1"], restarts=1,
             states={"Worker-1": "Restarting", "Worker-0": "Running"},
             conditions={"Restarting": "True", "Running": None},
             events=["ExitedWithCode", "PyTorchJobRestarting"]),
        Step("its pod is gone: created again at once", {worker(1): None},
             phase="Restarting", created=["Worker-1"], restarts=1, events=[]),
        Step("it runs again", {worker(1): running()}, phase="Running", restarts=1,
             conditions={"Restarting": None, "Running": "True"}, events=["Restarted"]),
        Step("it exits 1: no rule matches, Never fails the job", {worker(1): exited(1)},
             phase="Failed", job_actions=["cleanupPods"], restarts=1,
             events=["ExitedWithCode", "PyTorchJobFailed"]),
    ])
    assert results[2].replica_path == [("Worker-1", "Running", "Restarting")]
    assert results[2].notices == []
    assert [reason for _, reason, _ in results[2].posted] == [
        "ExitedWithCode", "PyTorchJobRestarting"]
    assert results[3].made == ["Worker-1"]


def test_a_machine_job_keeps_its_recreation_backoff_and_its_own_words() -> None:
    """MachineJob is not a Kubeflow kind: PodFailed says the restart, and a failed pod is
    made again only after the 10 s back-off."""
    results = play(World(machine_job(policy="ExitCode")), [
        Step("submitted", phase="Created", created=["Worker-0"], events=["JobCreated"]),
        Step("it runs", {worker(0): running()}, phase="Running",
             events=["Started", "JobRunning"]),
        Step("it is killed (137)", {worker(0): exited(137)}, phase="Running",
             deleted=["Worker-0"], restarts=1, states={"Worker-0": "Restarting"},
             events=["PodFailed"]),
        Step("its pod is gone: it waits out the back-off", {worker(0): None},
             phase="Running", created=["Worker-0"], restarts=1, events=[]),
        Step("10 s later: made again", wait=10, phase="Running", created=["Worker-0"]),
        Step("it runs again", {worker(0): running()}, phase="Running", restarts=1,
             events=["Restarted"]),
    ])
    assert results[1].notices[0].message == "Worker-0 runs in pod train-worker-0."
    assert results[3].made == [] and results[3].next_look == T0.replace(second=10)
    assert results[4].made == ["Worker-0"]
    assert results[5].notices[0].message == "Worker-0 runs again in pod train-worker-0 (restart 1)."


def test_failing_holds_until_the_pods_the_clean_pod_policy_removes_are_gone() -> None:
    world = World(pytorch_job(policy="ExitCode", run_policy={"cleanPodPolicy": "Running"}))
    results = play(world, [
        *STARTED,
        Step("worker-1 exits 1: the job fails, master and worker-0 still run",
             {worker(1): exited(1)}, phase="Failing", job_actions=["cleanupPods"],
             states={"Worker-1": "Failed"},
             conditions={"FailureTarget": "True", "Failed": None, "Running": "False"},
             events=["ExitedWithCode", "PyTorchJobFailed"]),
        Step("their pods are terminating", {MASTER: deleted(), worker(0): deleted()},
             phase="Failing", conditions={"Failed": None}, events=[]),
        Step("the master's pod is gone, worker-0's still terminating", {MASTER: None},
             phase="Failing", conditions={"Failed": None}, events=[]),
        Step("worker-0's pod is gone: the job has failed (worker-1's failed pod stays); "
             "Failed takes FailureTarget over",
             {worker(0): None}, phase="Failed",
             conditions={"FailureTarget": None, "Failed": "True"},
             events=[]),
        Step("nothing changes afterwards", phase="Failed", events=[]),
    ])
    assert results[2].job_actions == [("cleanupPods", {})]
    assert all("completionTime" not in r.status for r in results[2:5])
    failing, failed = results[2], results[5]
    assert failed.job_path == [("Failing", "Failed", "PyTorchJobFailed")]
    assert failed.condition("Failed") == {
        **(failing.condition("FailureTarget") or {}), "type": "Failed"
    }
    assert failed.status["completionTime"] == format_time(T0)


def test_failing_holds_while_the_clean_up_has_not_reached_the_pods() -> None:
    world = World(pytorch_job(policy="ExitCode", run_policy={"cleanPodPolicy": "Running"}))
    play(world, [
        *STARTED,
        Step("worker-1 exits 1: the job fails", {worker(1): exited(1)}, phase="Failing",
             job_actions=["cleanupPods"], events=["ExitedWithCode", "PyTorchJobFailed"]),
        Step("looked at again before the deletions show: master and worker-0 still run",
             phase="Failing", conditions={"Failed": None}, events=[]),
    ])


def test_succeeding_holds_while_the_parameter_server_is_deleted() -> None:
    job = tf_job(replicas={"PS": 1, "Worker": 1}, run_policy={"cleanPodPolicy": "Running"})
    results = play(World(job), [
        Step("submitted", phase="Created", created=("PS-0", "Worker-0")),
        Step("both run", {ps(0): running(), worker(0): running()}, phase="Running"),
        Step("worker-0 finishes: success criteria met, PS-0 still runs",
             {worker(0): exited(0)}, phase="Succeeding", job_actions=["cleanupPods"],
             conditions={"SuccessCriteriaMet": "True", "Succeeded": None},
             states={"Worker-0": "SucceededAsChief", "PS-0": "Running"},
             events=["SucceededAsChief", "TFJobSucceeded"]),
        Step("PS-0 is terminating", {ps(0): deleted()}, phase="Succeeding", events=[]),
        Step("PS-0 is gone: the job has succeeded; Succeeded takes SuccessCriteriaMet over",
             {ps(0): None}, phase="Succeeded",
             conditions={"SuccessCriteriaMet": None, "Succeeded": "True"},
             events=[]),
    ])
    assert results[4].condition_reason("Succeeded") == "TFJobSucceeded"
    assert results[4].condition("Succeeded") == {
        **(results[2].condition("SuccessCriteriaMet") or {}), "type": "Succeeded"
    }
    assert "completionTime" not in results[3].status


def test_a_replica_pending_past_the_pending_timeout_fails_the_job() -> None:
    world = World(pytorch_job(run_policy={"pendingTimeoutSeconds": 60,
                                          "cleanPodPolicy": "Running"}))
    results = play(world, [
        Step("submitted: every replica Pending, its timer started", phase="Created",
             created=ALL),
        Step("master and worker-0 run, worker-1 cannot be scheduled", wait=30,
             pods={MASTER: running(), worker(0): running(), worker(1): pending()},
             phase="Running", states={"Worker-1": "Pending"}),
        Step("59s Pending: not yet", wait=29, phase="Running", states={"Worker-1": "Pending"},
             events=[]),
        Step("60s Pending: worker-1 timed out (its pod deleted), the job fails and cleans up",
             wait=1, phase="Failing", deleted=["Worker-1"], job_actions=["cleanupPods"],
             states={"Worker-1": "PendingTimedOut"},
             conditions={"FailureTarget": "True", "Failed": None},
             events=["PendingTimeout", "PendingTimeout"]),
        Step("every pod is gone", ALL_GONE, phase="Failed",
             conditions={"Failed": "True", "FailureTarget": None}, events=[]),
    ])
    assert json.loads(results[1].status["record"])["timers"] == {"Worker": {"1": format_time(T0)}}
    assert results[2].decision.timer_due == T0.replace(minute=1)
    assert results[3].replica_path == [("Worker-1", "Pending", "PendingTimedOut")]
    assert results[3].condition_reason("FailureTarget") == "PendingTimeout"
    assert "Worker" in str((results[3].condition("FailureTarget") or {})["message"])
    assert results[4].condition_reason("Failed") == "PendingTimeout"
    assert "timers" not in json.loads(results[4].status["record"])
