"""decide over the job policies the shipped machines declare (issue 5, second part).

Two-phase terminal conditions, restarting the whole job, replica timers, the
MachineJob success policy and start-up order, and the machine's default failure
rules: each driven through `World` (tests/scenarios/world.py), which observes its
pods and reads the record back from the status it wrote, as a reconcile does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.jobspec import read_job_spec
from engine.controller.reconcile.record import read_record
from engine.definition import CompiledDefinition, load_definitions
from engine.kube.timestamps import format_time
from tests.kinds import MACHINES
from tests.scenarios.world import (
    DEFINITIONS,
    MASTER,
    T0,
    Pod,
    World,
    deleted,
    exited,
    observe,
    pending,
    pytorch_job,
    running,
    worker,
)

NOW = format_time(T0)
LAUNCHER = ReplicaId("Launcher", 0)


def at(seconds: float) -> str:
    """The status time `seconds` after T0."""
    return format_time(T0 + timedelta(seconds=seconds))


def machine_job(
    name: str = "batch",
    *,
    replicas: Mapping[str, int],
    policy: str = "Never",
    run_policy: Mapping[str, Any] | None = None,
    depends_on: Mapping[str, Sequence[Mapping[str, str]]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A MachineJob with the given replica types and counts (and extra spec fields)."""
    replica_specs: dict[str, Any] = {
        replica_type: {
            "replicas": count,
            "restartPolicy": policy,
            "template": {"spec": {"containers": [{"name": "main", "image": "example/batch:1"}]}},
        }
        for replica_type, count in replicas.items()
    }
    for replica_type, dependencies in (depends_on or {}).items():
        replica_specs[replica_type]["dependsOn"] = [dict(d) for d in dependencies]
    body: dict[str, Any] = {"replicaSpecs": replica_specs, **spec}
    if run_policy is not None:
        body["runPolicy"] = dict(run_policy)
    return {
        "apiVersion": "jobmachine.dev/v1alpha1",
        "kind": "MachineJob",
        "metadata": {"name": name, "namespace": "team", "uid": f"uid-{name}", "generation": 1},
        "spec": body,
    }


def start(world: World) -> None:
    """Submit the job, then let every replica run (two reconciles)."""
    world.reconcile()
    spec = read_job_spec(world.job, world.definition)
    world.pods.update({
        ReplicaId(t.name, i): running() for t in spec.replica_types for i in range(t.replicas)
    })
    world.reconcile()


def with_conditions(pod: Pod, *conditions: tuple[str, str]) -> Pod:
    """`pod` with these pod conditions (type, status)."""
    found = [{"type": t, "status": status} for t, status in conditions]
    return {**pod, "status": {**pod["status"], "conditions": found}}


def disrupted(code: int) -> Pod:
    """A pod that exited with `code` after being disrupted (condition DisruptionTarget)."""
    return with_conditions(exited(code, "Error"), ("DisruptionTarget", "True"))


def ready(is_ready: bool = True) -> Pod:
    """A running pod whose Ready condition is True or False."""
    return with_conditions(running(), ("Ready", "True" if is_ready else "False"))


def failure_action_of(world: World, replica: ReplicaId) -> str:
    """The failure action the reconcile gives the replica's pod (job rules, then machine's)."""
    spec = read_job_spec(world.job, world.definition)
    facts, _ = observe(world.pods, spec, world.restart_attempt)
    return facts[replica].failure_action


# Two-phase terminal conditions ---------------------------------------------------------------


def test_a_failed_job_waits_in_failing_until_the_pods_it_cleans_up_are_gone() -> None:
    world = World(pytorch_job(policy="Never", run_policy={"cleanPodPolicy": "All"}))
    start(world)
    world.advance(10)
    world.pods[worker(0)] = exited(1)

    failing = world.reconcile()

    assert failing.job_path == [("Running", "Failing", "PyTorchJobFailed")]
    assert failing.phase == "Failing"
    assert failing.condition_status("FailureTarget") == "True"
    assert failing.condition_reason("FailureTarget") == "PyTorchJobFailed"
    assert failing.condition("Failed") is None
    assert "completionTime" not in failing.status
    assert failing.job_actions == [("cleanupPods", {})]
    assert failing.decision.holds_replicas

    world.advance(10)
    world.pods = {replica: deleted() for replica in world.pods}
    deleting = world.reconcile()
    assert deleting.decision.fired == ()
    assert deleting.phase == "Failing"

    world.advance(10)
    world.pods.clear()
    failed_job = world.reconcile()

    assert failed_job.job_path == [("Failing", "Failed", "PyTorchJobFailed")]
    assert failed_job.phase == "Failed"
    # Failed takes FailureTarget over: its reason and message, and FailureTarget is gone.
    target, final = failing.condition("FailureTarget"), failed_job.condition("Failed")
    assert target is not None and final is not None
    assert failed_job.condition("FailureTarget") is None
    assert final["status"] == target["status"] == "True"
    assert (final["reason"], final["message"]) == (target["reason"], target["message"])
    assert final["message"] == (
        'PyTorchJob team/mnist has failed because replicas of type ["Worker"] failed. '
        'Last failure: Worker-0 (exit code 1).'
    )
    assert failed_job.status["completionTime"] == at(30)


def test_the_failed_condition_repeats_why_the_job_failed_not_the_last_step() -> None:
    world = World(pytorch_job(policy="OnFailure", run_policy={"backoffLimit": 0}))
    start(world)
    world.pods[worker(1)] = exited(1)
    failing = world.reconcile()
    assert failing.job_path == [("Running", "Failing", "BackoffLimitExceeded")]
    # Worker-1's own deletePod has not happened yet: not settled, even with policy None.
    assert failing.planned("deletePod") == ["Worker-1"]
    assert failing.phase == "Failing"

    del world.pods[worker(1)]
    done = world.reconcile()

    assert done.job_path == [("Failing", "Failed", "PyTorchJobFailed")]
    assert done.condition_reason("Failed") == "BackoffLimitExceeded"
    assert done.condition("FailureTarget") is None
    target, final = failing.condition("FailureTarget"), done.condition("Failed")
    assert target is not None and final is not None
    assert target["reason"] == "BackoffLimitExceeded"
    assert final["message"] == target["message"] == (
        "PyTorchJob mnist has failed because it has reached the specified backoff limit (0). "
        "Last failure: Worker-1 (exit code 1)."
    )


def test_a_job_whose_clean_up_has_nothing_to_delete_finishes_in_one_pass() -> None:
    world = World(pytorch_job(policy="Never"))  # cleanPodPolicy None, as upstream
    start(world)
    world.pods[worker(0)] = exited(1)
    result = world.reconcile()
    assert result.job_path == [("Running", "Failing", "PyTorchJobFailed"),
                               ("Failing", "Failed", "PyTorchJobFailed")]
    assert result.phase == "Failed"
    assert result.status["completionTime"] == NOW


def test_a_job_that_met_its_success_criteria_cannot_fail_afterwards() -> None:
    world = World(pytorch_job(policy="Never", run_policy={
        "cleanPodPolicy": "Running", "activeDeadlineSeconds": 100,
    }))
    start(world)
    world.pods[MASTER] = exited(0)
    succeeding = world.reconcile()
    assert succeeding.job_path == [("Running", "Succeeding", "PyTorchJobSucceeded")]
    assert succeeding.condition_status("SuccessCriteriaMet") == "True"
    assert succeeding.condition("Succeeded") is None

    # While the Workers are cleaned up, the deadline passes and a Worker fails.
    world.advance(200)
    world.pods[worker(0)] = deleted()
    world.pods[worker(1)] = exited(1)
    later = world.reconcile()
    assert later.decision.fired == ()
    assert later.phase == "Succeeding"

    world.pods = {MASTER: exited(0)}
    done = world.reconcile()
    assert done.job_path == [("Succeeding", "Succeeded", "PyTorchJobSucceeded")]
    assert done.condition_reason("Succeeded") == "PyTorchJobSucceeded"
    assert done.condition("SuccessCriteriaMet") is None
    assert done.condition("FailureTarget") is None
    assert done.condition("Failed") is None



def machine_copying_its_conditions(tmp_path: Path) -> CompiledDefinition:
    """The shipped MachineJob machine with its endings written as batch-job.yaml's:
    `copyFrom` in place of `moveFrom`."""
    text = (MACHINES / "job.yaml").read_text()
    assert text.count("moveFrom:") == 2
    (tmp_path / "job.yaml").write_text(text.replace("moveFrom:", "copyFrom:"))
    [definition] = load_definitions([tmp_path])
    return definition


@pytest.mark.parametrize("outcome", [
    (1, "FailureTarget", "Failed"), (0, "SuccessCriteriaMet", "Succeeded"),
], ids=["failed", "succeeded"])
@pytest.mark.parametrize("ending", ["moveFrom", "copyFrom"])
def test_an_ending_that_moves_its_condition_removes_it_one_that_copies_keeps_it(
    ending: str, outcome: tuple[int, str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    exit_code, target, final = outcome
    if ending == "copyFrom":
        monkeypatch.setitem(DEFINITIONS, "MachineJob", machine_copying_its_conditions(tmp_path))
    world = World(machine_job(replicas={"Worker": 1}, run_policy={"cleanPodPolicy": "All"}))
    start(world)
    world.pods[worker(0)] = exited(exit_code)
    ending_runs = world.reconcile()
    assert ending_runs.phase == f"{final[:-2]}ing"  # Failing, Succeeding: the pod goes first
    set_first = ending_runs.condition(target)
    assert set_first is not None and set_first["status"] == "True"
    assert ending_runs.condition(final) is None

    world.pods.clear()
    ended = world.reconcile()

    assert ended.phase == final
    taken = ended.condition(final)
    assert taken is not None and taken["status"] == "True"
    assert (taken["reason"], taken["message"]) == (set_first["reason"], set_first["message"])
    if ending == "moveFrom":
        assert ended.condition(target) is None
    else:
        assert ended.condition(target) == set_first

# Restarting the whole job ----------------------------------------------------------------------

RESTART_ON_42 = [{"action": "RestartJob", "onExitCodes": {"operator": "In", "values": [42]}}]


def test_restart_job_starts_a_new_attempt_once_every_pod_is_gone() -> None:
    world = World(machine_job(replicas={"Worker": 2}, failureRules=RESTART_ON_42))
    start(world)
    world.pods[worker(1)] = exited(42)
    assert failure_action_of(world, worker(1)) == "RestartJob"

    restarting = world.reconcile()

    assert restarting.replica_path == [("Worker-1", "Running", "RestartRequested")]
    assert restarting.job_path == [("Running", "Restarting", "JobRestarting")]
    record = restarting.decision.record
    assert (record.restart_attempt, record.restarts) == (1, 1)
    assert record.replica_states == {}
    assert (restarting.status["restartAttempt"], restarting.status["restarts"]) == (1, 1)
    assert restarting.condition_status("Restarting") == "True"
    assert restarting.job_actions == [("cleanupPods", {"policy": "All"})]
    assert restarting.pod_actions == []
    assert restarting.decision.holds_replicas

    # The pods of attempt 0 are not observed any more; until they are gone, the job waits.
    waiting = world.reconcile()
    assert waiting.decision.fired == ()
    assert waiting.phase == "Restarting"
    assert waiting.pod_actions == []

    world.pods.clear()
    again = world.reconcile()

    assert again.job_path == [("Restarting", "Created", "JobRestarted")]
    assert again.replica_path == [("Worker-0", None, "Pending"), ("Worker-1", None, "Pending")]
    assert again.planned("createPod") == ["Worker-0", "Worker-1"]
    assert again.condition_status("Restarting") == "False"
    record = read_record(again.status)
    assert (record.restart_attempt, record.restarts) == (1, 1)

    world.put(worker(0), running())
    world.put(worker(1), running())
    assert world.reconcile().job_path == [("Created", "Running", "JobRunning")]


def test_a_restart_of_the_job_counts_against_the_backoff_limit() -> None:
    """With no restart left, a RestartJob request fails the job instead of restarting it:
    no new attempt, no restart counted, the failed replica stays recorded."""
    world = World(machine_job(replicas={"Worker": 2}, failureRules=RESTART_ON_42,
                              run_policy={"backoffLimit": 0}))
    start(world)
    world.pods[worker(0)] = exited(42)
    result = world.reconcile()
    assert result.job_path == [("Running", "Failing", "BackoffLimitExceeded")]
    record = result.decision.record
    assert (record.restart_attempt, record.restarts) == (0, 0)
    assert record.replica_states[worker(0)] == "RestartRequested"
    assert result.condition_reason("FailureTarget") == "BackoffLimitExceeded"


def test_a_restart_of_the_job_within_the_limit_counts_one_restart() -> None:
    world = World(machine_job(replicas={"Worker": 2}, failureRules=RESTART_ON_42,
                              run_policy={"backoffLimit": 1}))
    start(world)
    world.pods[worker(0)] = exited(42)
    result = world.reconcile()
    assert result.job_path == [("Running", "Restarting", "JobRestarting")]
    assert (result.decision.record.restart_attempt, result.decision.record.restarts) == (1, 1)


# Replica timers -----------------------------------------------------------------------------


def test_a_pending_replica_times_out_and_fails_the_job() -> None:
    world = World(machine_job(replicas={"Worker": 2}, run_policy={"pendingTimeoutSeconds": 60}))
    created = world.reconcile()
    assert created.decision.record.replica_timers == {worker(0): NOW, worker(1): NOW}
    assert json.loads(created.status["record"])["timers"] == {"Worker": {"0": NOW, "1": NOW}}
    assert created.decision.timer_due == T0 + timedelta(seconds=60)

    world.advance(30)
    world.pods = {worker(0): running(), worker(1): pending()}
    one_runs = world.reconcile()
    assert one_runs.replica_path == [("Worker-0", "Pending", "Running")]
    assert one_runs.decision.record.replica_timers == {worker(1): NOW}
    assert one_runs.decision.timer_due == T0 + timedelta(seconds=60)

    world.advance(29)
    assert world.reconcile().decision.fired == ()

    world.advance(2)
    timed_out = world.reconcile()
    assert timed_out.replica_path == [("Worker-1", "Pending", "PendingTimedOut")]
    assert timed_out.job_path == [("Created", "Failing", "PendingTimeout")]
    assert timed_out.condition_reason("FailureTarget") == "PendingTimeout"
    assert timed_out.phase == "Failing"  # cleanPodPolicy Running: both pods are deleted first
    assert timed_out.decision.record.replica_timers == {}
    assert timed_out.decision.timer_due is None


def test_a_held_replica_deletes_its_pod_until_it_is_gone() -> None:
    """Worker-0 times out and the job goes Failing (cleanPodPolicy None: its clean-up
    deletes nothing); the deletion of Worker-0's pod does not land (refused, or the pod
    reached the cache only now). The job holds its replicas, yet Worker-0 deletes the pod
    again on each pass, and the job waits for it before it says Failed."""
    world = World(machine_job(replicas={"Worker": 1}, run_policy={
        "pendingTimeoutSeconds": 60, "cleanPodPolicy": "None"}))
    world.reconcile()
    world.pods = {worker(0): pending()}
    world.advance(61)
    timed_out = world.reconcile()
    assert timed_out.replica_path == [("Worker-0", "Pending", "PendingTimedOut")]
    assert (timed_out.phase, timed_out.pod_actions) == ("Failing", [("deletePod", "Worker-0")])

    again = world.reconcile()
    assert [(p.action.name, str(p.replica), p.replayed) for p in again.decision.actions
            if p.replica is not None] == [("deletePod", "Worker-0", True)]
    assert again.phase == "Failing"

    world.pods = {worker(0): deleted()}
    assert world.reconcile().phase == "Failing"
    world.pods = {}
    assert world.reconcile().phase == "Failed"


def test_without_a_pending_timeout_there_are_no_timers() -> None:
    result = World(machine_job(replicas={"Worker": 2})).reconcile()
    assert result.decision.record.replica_timers == {}
    assert "timers" not in json.loads(result.status["record"])
    assert result.decision.timer_due is None


def test_a_restarted_replica_starts_its_timer_afresh() -> None:
    world = World(machine_job(replicas={"Worker": 1}, policy="OnFailure",
                              run_policy={"pendingTimeoutSeconds": 60}))
    start(world)
    world.advance(100)
    world.pods[worker(0)] = exited(1)
    world.reconcile()
    del world.pods[worker(0)]
    recreated = world.reconcile()
    assert recreated.replica_states == {"Worker-0": "Pending"}
    assert recreated.decision.record.replica_timers == {worker(0): at(100)}
    assert recreated.decision.timer_due == T0 + timedelta(seconds=160)


def test_scaling_down_forgets_the_timers_of_forgotten_replicas() -> None:
    world = World(machine_job(replicas={"Worker": 3}, run_policy={"pendingTimeoutSeconds": 60}))
    world.reconcile()
    world.job["spec"]["replicaSpecs"]["Worker"]["replicas"] = 1
    result = world.reconcile()
    assert result.replica_states == {"Worker-0": "Pending"}
    assert result.decision.record.replica_timers == {worker(0): NOW}


def test_a_suspended_job_has_no_timers_and_resuming_starts_them_again() -> None:
    world = World(machine_job(replicas={"Worker": 1}, run_policy={"pendingTimeoutSeconds": 60}))
    world.reconcile()
    world.advance(10)
    world.run_policy["suspend"] = True
    suspended = world.reconcile()
    assert suspended.job_path == [("Created", "Suspended", "JobSuspended")]
    assert suspended.decision.record.replica_timers == {}
    assert "timers" not in json.loads(suspended.status["record"])
    assert suspended.decision.timer_due is None

    world.advance(300)
    assert world.reconcile().decision.fired == ()

    world.run_policy["suspend"] = False
    resumed = world.reconcile()
    assert resumed.job_path == [("Suspended", "Created", "JobResumed")]
    assert resumed.decision.record.replica_timers == {worker(0): at(310)}
    assert resumed.decision.timer_due == T0 + timedelta(seconds=370)
    assert resumed.planned("createPod") == ["Worker-0"]


# MachineJob success policy --------------------------------------------------------------------


def test_success_policy_any_needs_count_replicas_of_the_listed_types() -> None:
    world = World(machine_job(
        replicas={"Worker": 3},
        successPolicy={"mode": "Any", "count": 2, "replicaTypes": ["Worker"]},
    ))
    start(world)
    world.pods[worker(0)] = exited(0)
    one = world.reconcile()
    assert one.job_path == []
    assert one.phase == "Running"

    world.pods[worker(2)] = exited(0)
    two = world.reconcile()
    assert two.job_path == [("Running", "Succeeding", "SuccessPolicy")]
    assert two.condition_reason("SuccessCriteriaMet") == "SuccessPolicy"
    # cleanPodPolicy Running (MachineJob's default): Worker-1 still runs, so it goes first.
    assert two.phase == "Succeeding"

    world.pods[worker(1)] = deleted()
    assert world.reconcile().phase == "Succeeding"
    del world.pods[worker(1)]
    done = world.reconcile()
    assert done.job_path == [("Succeeding", "Succeeded", "JobSucceeded")]
    assert done.condition_reason("Succeeded") == "SuccessPolicy"
    assert done.condition("SuccessCriteriaMet") is None  # Succeeded took it over


def test_success_policy_all_looks_only_at_the_listed_types() -> None:
    world = World(machine_job(
        replicas={"Launcher": 1, "Worker": 2},
        successPolicy={"mode": "All", "replicaTypes": ["Worker"]},
    ))
    start(world)
    world.pods[worker(0)] = exited(0)
    assert world.reconcile().job_path == []
    world.pods[worker(1)] = exited(0)
    result = world.reconcile()
    assert result.job_path == [("Running", "Succeeding", "SuccessPolicy")]
    assert result.replica_states["Launcher-0"] == "Running"


def test_without_a_success_policy_every_replica_must_succeed() -> None:
    world = World(machine_job(replicas={"Launcher": 1, "Worker": 2}))
    start(world)
    world.pods[worker(0)] = exited(0)
    world.pods[worker(1)] = exited(0)
    workers_done = world.reconcile()
    assert workers_done.job_path == []
    assert workers_done.phase == "Running"

    world.pods[LAUNCHER] = exited(0)
    done = world.reconcile()
    assert done.job_path == [("Running", "Succeeding", "AllReplicasSucceeded"),
                             ("Succeeding", "Succeeded", "JobSucceeded")]
    assert done.condition_reason("Succeeded") == "AllReplicasSucceeded"


# Start-up order ---------------------------------------------------------------------------------


def test_a_replica_type_waits_for_the_type_it_depends_on_to_run() -> None:
    world = World(machine_job(replicas={"Master": 1, "Worker": 2},
                              depends_on={"Worker": [{"replicaType": "Master"}]}))
    first = world.reconcile()
    assert first.pod_actions == [("createService", "Master-0"), ("createPod", "Master-0")]
    assert first.replica_states == {"Master-0": "Pending", "Worker-0": "Pending",
                                    "Worker-1": "Pending"}

    world.pods[MASTER] = pending()
    assert world.reconcile().pod_actions == []

    world.pods[MASTER] = running()
    world.reconcile()
    after = world.reconcile()
    assert after.replica_states["Master-0"] == "Running"
    assert after.pod_actions == [
        ("createService", "Worker-0"), ("createPod", "Worker-0"),
        ("createService", "Worker-1"), ("createPod", "Worker-1"),
    ]


def test_a_replica_type_can_wait_for_the_other_type_to_be_ready() -> None:
    world = World(machine_job(
        replicas={"Master": 1, "Worker": 1},
        depends_on={"Worker": [{"replicaType": "Master", "condition": "Ready"}]},
    ))
    world.reconcile()
    world.pods[MASTER] = ready(is_ready=False)
    world.reconcile()
    not_ready = world.reconcile()
    assert not_ready.replica_states["Master-0"] == "Running"
    assert not_ready.planned("createPod") == []

    world.pods[MASTER] = ready()
    assert world.reconcile().planned("createPod") == ["Worker-0"]


# The machine's default failure rules -----------------------------------------------------------


def test_the_machines_default_rule_ignores_a_disrupted_pod() -> None:
    assert DEFINITIONS["PyTorchJob"].default_failure_rules == ()
    world = World(machine_job(replicas={"Worker": 2}, policy="OnFailure"))
    start(world)
    world.pods[worker(0)] = disrupted(143)
    assert failure_action_of(world, worker(0)) == "Ignore"

    result = world.reconcile()

    assert result.replica_path == [("Worker-0", "Running", "Restarting")]
    assert [f.transition.reason for f in result.decision.fired] == ["PodFailureIgnored"]
    assert "restarts" not in result.status  # none counted: a count of 0 is left out
    assert result.planned("deletePod") == ["Worker-0"]


def test_the_jobs_own_rule_wins_over_the_machines_default() -> None:
    count_disruptions = [{"action": "Count", "onPodConditions": [{"type": "DisruptionTarget"}]}]
    world = World(machine_job(replicas={"Worker": 2}, policy="OnFailure",
                              failureRules=count_disruptions))
    start(world)
    world.pods[worker(0)] = disrupted(143)
    assert failure_action_of(world, worker(0)) == "Count"

    result = world.reconcile()

    assert result.replica_path == [("Worker-0", "Running", "Restarting")]
    assert [f.transition.reason for f in result.decision.fired] == ["PodFailed"]
    assert result.status["restarts"] == 1


def test_a_failure_no_rule_matches_is_left_to_the_restart_policy() -> None:
    world = World(machine_job(replicas={"Worker": 2}, policy="Never"))
    start(world)
    world.pods[worker(0)] = exited(1)
    assert failure_action_of(world, worker(0)) == ""
    result = world.reconcile()
    assert result.replica_path == [("Worker-0", "Running", "Failed")]
    assert result.job_path[0] == ("Running", "Failing", "JobFailed")
