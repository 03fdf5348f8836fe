"""decide, the pure heart of a reconcile, and build_status, the status it becomes.

The lifecycles themselves are step tables in tests/scenarios; here are the
properties every lifecycle relies on: each child planned once, determinism,
exact counts, a bounded history, forgetting scaled-down replicas, holding
replicas in held states, and conditions whose transition times mean something.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.decide import Decision, decide
from engine.controller.reconcile.jobspec import read_job_spec
from engine.controller.reconcile.observe import job_observations
from engine.controller.reconcile.record import RestartRecord, read_record
from engine.controller.reconcile.status import build_status
from engine.kube.timestamps import format_time
from tests.kinds import assignment
from tests.scenarios.world import (
    MASTER,
    T0,
    Pod,
    Reconciled,
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


def started(world: World) -> None:
    """Submit the job, then let every replica run (two reconciles)."""
    world.reconcile()
    world.pods.update({
        ReplicaId(t, i): running()
        for t, spec in world.job["spec"]["pytorchReplicaSpecs"].items()
        for i in range(spec["replicas"])
    })
    world.reconcile()


def restart_worker(world: World, index: int) -> None:
    """One full restart of a worker: it fails, its pod goes, it runs again."""
    world.pods[worker(index)] = exited(1)
    world.reconcile()
    del world.pods[worker(index)]
    world.reconcile()
    world.pods[worker(index)] = running()
    world.reconcile()


# A new job -----------------------------------------------------------------------------------


def test_a_new_job_plans_a_service_and_a_pod_for_every_replica_once() -> None:
    result = World(pytorch_job(workers=3)).reconcile()
    assert result.pod_actions == [
        ("createService", "Master-0"), ("createPod", "Master-0"),
        ("createService", "Worker-0"), ("createPod", "Worker-0"),
        ("createService", "Worker-1"), ("createPod", "Worker-1"),
        ("createService", "Worker-2"), ("createPod", "Worker-2"),
    ]
    assert result.job_actions == []
    assert result.decision.errors == ()


def test_a_new_job_records_the_creation_of_every_machine() -> None:
    result = World(pytorch_job()).reconcile()
    record = result.decision.record
    assert record.state == "Created"
    assert record.state_since == NOW
    assert result.replica_states == {"Master-0": "Pending", "Worker-0": "Pending",
                                     "Worker-1": "Pending"}
    assert result.job_path == [(None, "Created", "PyTorchJobCreated")]
    assert result.replica_path == [("Master-0", None, "Pending"), ("Worker-0", None, "Pending"),
                                   ("Worker-1", None, "Pending")]
    # The last transitions leave out the creation of replica machines (not news to users).
    assert list(record.history) == [
        {"time": NOW, "level": "job", "from": None, "to": "Created", "reason": "PyTorchJobCreated"},
    ]
    assert record.transition_counts == {
        ("replica", "", "Pending", "Pending"): 3,
        ("job", "", "Created", "Created"): 1,
    }


def test_pods_keep_being_asked_for_while_they_are_missing() -> None:
    """Level-triggered: a create that did not happen is planned again next time."""
    world = World(pytorch_job())
    world.reconcile()
    world.pods[MASTER] = pending()
    again = world.reconcile()
    assert again.planned("createPod") == ["Worker-0", "Worker-1"]
    assert again.decision.fired == ()


# Determinism and purity -----------------------------------------------------------------------


def _decide_once(world: World, pods: dict[ReplicaId, Pod]) -> Decision:
    job = world.job
    spec = read_job_spec(job, world.definition)
    status = job.get("status") or {}
    facts, _ = observe(pods, spec, world.restart_attempt)
    return decide(
        world.definition, job, spec, read_record(status), facts,
        job_observations=job_observations(job, spec, start_time=status.get("startTime"),
                                          now=T0, terminating_pods=0),
        now=NOW,
    )


def test_decide_is_deterministic_and_ignores_the_order_of_the_pods() -> None:
    world = World(pytorch_job(workers=4))
    world.reconcile()
    pods = {
        MASTER: running(), worker(0): running(), worker(1): exited(137),
        worker(2): exited(0), worker(3): pending(),
    }
    job_before = copy.deepcopy(world.job)
    first = _decide_once(world, pods)
    assert _decide_once(world, pods) == first
    assert _decide_once(world, dict(reversed(pods.items()))) == first
    assert world.job == job_before


def test_two_runs_of_a_whole_lifecycle_write_identical_statuses() -> None:
    def lifecycle() -> dict[str, Any]:
        world = World(pytorch_job(policy="OnFailure"))
        started(world)
        restart_worker(world, 1)
        world.pods[MASTER] = exited(0)
        world.reconcile()
        status: dict[str, Any] = world.job["status"]
        return status

    assert lifecycle() == lifecycle()


def test_every_time_written_is_the_now_given() -> None:
    world = World(pytorch_job(policy="OnFailure"))
    started(world)
    world.advance(3600)
    restart_worker(world, 0)
    later = format_time(T0 + timedelta(seconds=3600))
    record = read_record(world.job["status"])
    assert {entry["time"] for entry in record.history} == {NOW, later}
    assert record.replica_restarts == {worker(0): RestartRecord(1, later)}


# Counts and history -----------------------------------------------------------------------------


def test_a_replicas_move_in_the_last_transitions_names_the_replica() -> None:
    world = World(pytorch_job(workers=1))
    world.reconcile()
    world.pods[worker(0)] = running()
    moved = world.reconcile()
    assert [entry for entry in moved.decision.record.history if entry["level"] == "replica"] == [
        {"time": NOW, "level": "replica", "replica": "Worker-0", "from": "Pending",
         "to": "Running", "reason": "Started"}]


def test_a_pod_delete_that_failed_is_planned_again_while_the_replica_restarts() -> None:
    # Entering Restarting plans deletePod once; if the API server refused it, the pod is
    # still there on the next pass and the replica is still Restarting: plan it again.
    world = World(pytorch_job(policy="OnFailure"))
    started(world)
    world.pods[worker(0)] = exited(1)
    entered = world.reconcile()
    assert entered.planned("deletePod") == ["Worker-0"]

    again = world.reconcile()

    assert again.decision.fired == ()
    replayed = [(p.action.name, str(p.replica)) for p in again.decision.actions if p.replayed]
    assert replayed == [("deletePod", "Worker-0")]
    assert read_record(world.job["status"]).restarts == 1


def test_ignored_failures_still_grow_the_back_off_and_a_success_resets_it() -> None:
    # A rule that ignores a failure counts no restart, but the re-creation back-off must
    # still grow with each failed attempt in a row, or a failing pod would loop.
    job = pytorch_job(policy="Never")
    job["spec"]["failureRules"] = [
        {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [143]}}
    ]
    world = World(job)
    started(world)
    for attempt in (1, 2):
        world.pods[worker(0)] = exited(143)
        world.reconcile()
        del world.pods[worker(0)]
        world.reconcile()
        record = read_record(world.job["status"])
        assert record.restarts == 0
        assert record.replica_backoff[worker(0)].count == attempt
        world.pods[worker(0)] = running()
        world.reconcile()

    world.pods[worker(0)] = exited(0)
    world.reconcile()
    assert worker(0) not in read_record(world.job["status"]).replica_backoff


def test_restarts_are_counted_per_replica_and_for_the_job() -> None:
    world = World(pytorch_job(policy="OnFailure"))
    started(world)
    restart_worker(world, 1)
    restart_worker(world, 1)
    restart_worker(world, 0)
    record = read_record(world.job["status"])
    assert record.restarts == 3
    assert record.replica_restarts == {
        worker(0): RestartRecord(1, NOW), worker(1): RestartRecord(2, NOW)
    }
    restarting = ("replica", "Running", "Restarting", "PyTorchJobRestarting")
    assert record.transition_counts[restarting] == 3
    assert record.transition_counts[("replica", "Restarting", "Pending", "Pending")] == 3
    assert record.transition_counts[("replica", "Pending", "Running", "Restarted")] == 3
    # The job is Restarting at each restart and Running again once the replica runs.
    assert record.transition_counts[("job", "Running", "Restarting", "PyTorchJobRestarting")] == 3
    assert record.transition_counts[("job", "Restarting", "Running", "PyTorchJobRunning")] == 3


@pytest.mark.parametrize("kept", [1, 3, 7])
def test_status_keeps_the_last_transitions_and_counts_every_one(kept: int) -> None:
    def lifecycle(transitions_kept: int) -> World:
        world = World(pytorch_job(policy="OnFailure"), transitions_kept=transitions_kept)
        started(world)
        assert len(read_record(world.job["status"]).history) <= transitions_kept
        restart_worker(world, 0)
        restart_worker(world, 1)
        assert len(read_record(world.job["status"]).history) <= transitions_kept
        return world

    bounded, unbounded = lifecycle(kept), lifecycle(1000)
    full = read_record(unbounded.job["status"]).history
    assert len(full) > 7
    assert read_record(bounded.job["status"]).history == full[-kept:]
    assert len(bounded.job["status"]["lastTransitions"]) == kept
    assert (read_record(bounded.job["status"]).transition_counts
            == read_record(unbounded.job["status"]).transition_counts)



def test_by_default_status_shows_no_last_transitions_but_counts_every_one() -> None:
    """`lastTransitions` is off unless the engine is told otherwise: decide keeps none by
    default (as `EngineSettings.status_last_transitions`); the counts are whole all the same."""
    shown = World(pytorch_job(policy="OnFailure"))
    started(shown)
    assert read_record(shown.job["status"]).history != ()
    assert _decide_once(shown, dict(shown.pods)).record.history == ()  # decide's default

    hidden = World(pytorch_job(policy="OnFailure"), transitions_kept=0)
    started(hidden)
    for world in (shown, hidden):
        restart_worker(world, 0)
    assert "lastTransitions" not in hidden.job["status"]
    assert read_record(hidden.job["status"]).history == ()
    assert (read_record(hidden.job["status"]).transition_counts
            == read_record(shown.job["status"]).transition_counts)

# Scaling ----------------------------------------------------------------------------------------


def test_scaling_down_forgets_replicas_beyond_the_desired_count() -> None:
    world = World(pytorch_job(workers=4))
    started(world)
    world.job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 2
    result = world.reconcile()
    assert result.replica_states == {"Master-0": "Running", "Worker-0": "Running",
                                     "Worker-1": "Running"}
    assert json.loads(result.status["record"])["replicas"] == {"Master": {"Running": "0"},
                                                               "Worker": {"Running": "0-1"}}
    assert result.decision.fired == ()
    assert result.pod_actions == []
    assert result.status["replicaStatuses"]["Worker"]["active"] == 2


def test_scaling_up_again_creates_fresh_replicas() -> None:
    world = World(pytorch_job(workers=3))
    started(world)
    world.job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 1
    world.reconcile()
    world.pods = {MASTER: running(), worker(0): running()}
    world.job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 3
    result = world.reconcile()
    assert result.replica_path == [("Worker-1", None, "Pending"), ("Worker-2", None, "Pending")]
    assert result.planned("createPod") == ["Worker-1", "Worker-2"]


def test_scaling_down_forgets_the_restart_record_of_forgotten_replicas() -> None:
    world = World(pytorch_job(workers=3, policy="OnFailure"))
    started(world)
    restart_worker(world, 2)
    world.job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 2
    result = world.reconcile()
    assert result.decision.record.restarts == 1
    assert worker(2) not in result.decision.record.replica_restarts


# Held replicas ---------------------------------------------------------------------------------


def test_replicas_of_a_failing_job_are_held_and_its_clean_up_is_replayed() -> None:
    world = World(pytorch_job(policy="Never", run_policy={"cleanPodPolicy": "Running"}))
    started(world)
    world.pods[worker(0)] = exited(1)
    failing = world.reconcile()
    assert failing.job_path == [("Running", "Failing", "PyTorchJobFailed")]
    assert failing.decision.holds_replicas
    assert failing.job_actions == [("cleanupPods", {})]

    # The clean-up is under way: Master and Worker-1 are being deleted. A stepped
    # Worker-1 would see podGone and restart; held, it stays Running.
    world.pods[MASTER] = deleted()
    world.pods[worker(1)] = deleted()
    after = world.reconcile()
    assert after.decision.fired == ()
    assert after.decision.record.state == "Failing"
    assert after.replica_states == {"Master-0": "Running", "Worker-0": "Failed",
                                    "Worker-1": "Running"}
    # Only the Failing state's own clean-up is planned again (it is idempotent).
    assert [(p.action.name, p.replica, p.replayed) for p in after.decision.actions] == [
        ("cleanupPods", None, True)
    ]


def test_a_failing_job_whose_clean_up_was_refused_stays_failing() -> None:
    world = World(pytorch_job(policy="Never", run_policy={"cleanPodPolicy": "Running"}))
    started(world)
    world.pods[worker(0)] = exited(1)
    world.reconcile()
    # The API server refused the deletes: Master and Worker-1 still run, not terminating.
    again = world.reconcile()
    assert again.decision.fired == ()
    assert again.decision.record.state == "Failing"
    assert [(p.action.name, p.replayed) for p in again.decision.actions] == [
        ("cleanupPods", True)
    ]


def test_replicas_of_a_finished_job_are_held_and_nothing_is_planned() -> None:
    world = World(pytorch_job(policy="OnFailure"))
    started(world)
    world.pods[MASTER] = exited(0)
    finished = world.reconcile()
    assert finished.decision.record.state == "Succeeded"
    assert finished.decision.holds_replicas
    world.pods[worker(0)] = exited(1)
    after = world.reconcile()
    assert after.decision.fired == ()
    assert after.decision.actions == ()
    assert after.replica_states["Worker-0"] == "Running"


def test_a_running_job_does_not_hold_its_replicas() -> None:
    world = World(pytorch_job())
    started(world)
    assert not world.reconcile().decision.holds_replicas


def test_a_suspended_job_holds_its_replicas_and_plans_no_pod() -> None:
    world = World(pytorch_job())
    started(world)
    world.run_policy["suspend"] = True
    suspended = world.reconcile()
    assert suspended.decision.holds_replicas
    world.pods.clear()
    later = world.reconcile()
    assert [p for p in later.decision.actions if not p.replayed] == []
    assert later.decision.fired == ()


def test_an_invalid_job_has_no_replicas_and_no_pod_actions() -> None:
    result = World(pytorch_job(masters=2)).reconcile()
    assert result.decision.record.replica_states == {}
    assert result.pod_actions == []
    assert result.job_path == [(None, "Created", "PyTorchJobCreated"),
                               ("Created", "Failing", "FailedValidation"),
                               ("Failing", "Failed", "PyTorchJobFailed")]
    assert result.condition_reason("Failed") == "FailedValidation"
    assert result.status["replicaStatuses"] == {}


def transition_time(result: Reconciled, condition: str) -> str:
    found = result.condition(condition)
    assert found is not None, f"no {condition} condition"
    return str(found["lastTransitionTime"])


# build_status ----------------------------------------------------------------------------------


def test_build_status_sets_phase_times_and_replica_statuses() -> None:
    world = World(pytorch_job())
    world.job["metadata"]["generation"] = 4
    world.job["status"] = {"observedGeneration": 3}  # as an older engine wrote it
    status = world.reconcile().status
    assert status["phase"] == "Created"
    assert "state" not in status  # the state is the phase's word: said once
    assert "restarts" not in status  # a count of 0 is left out
    assert read_record(status).state == "Created"
    assert status["startTime"] == NOW
    assert "completionTime" not in status
    assert "observedGeneration" not in status  # no peer's job status has it; dropped
    assert status["replicaStatuses"]["Worker"] == {  # counts of 0 are left out, as Kubeflow's
        "selector": "jobmachine.dev/job-name=mnist,jobmachine.dev/replica-type=Worker",
    }
    assert None not in status.values()


def test_start_and_completion_times_are_written_once() -> None:
    world = World(pytorch_job())
    started(world)
    world.advance(60)
    world.pods[MASTER] = exited(0)
    done = world.reconcile().status
    finished_at = format_time(T0 + timedelta(seconds=60))
    assert (done["startTime"], done["completionTime"]) == (NOW, finished_at)
    world.advance(60)
    again = world.reconcile().status
    assert (again["startTime"], again["completionTime"]) == (NOW, finished_at)


def test_a_condition_keeps_its_transition_time_until_its_status_flips() -> None:
    world = World(pytorch_job(policy="OnFailure"))
    started(world)
    running_since = world.job["status"]["conditions"][-1]
    assert (running_since["type"], running_since["lastTransitionTime"]) == ("Running", NOW)
    world.advance(60)
    world.pods[worker(0)] = exited(1)
    restarting = world.reconcile()
    flipped = format_time(T0 + timedelta(seconds=60))
    assert transition_time(restarting, "Created") == NOW
    assert restarting.condition("Running") is None  # Restarting replaced it, as in Kubeflow
    assert transition_time(restarting, "Restarting") == flipped
    world.advance(60)
    quiet = world.reconcile()
    assert quiet.status["conditions"] == restarting.status["conditions"]


def test_build_status_does_not_change_the_job() -> None:
    world = World(pytorch_job())
    started(world)
    before = copy.deepcopy(world.job)
    spec = read_job_spec(world.job, world.definition)
    facts, _ = observe({MASTER: exited(0)}, spec, world.restart_attempt)
    decision = decide(
        world.definition, world.job, spec, read_record(world.job["status"]),
        facts, job_observations=frozenset({"resumed", "settled"}), now=NOW,
    )
    status = build_status(world.job, assignment(world.definition), spec, decision, now=NOW)
    assert status["phase"] == "Succeeded"
    assert world.job == before


def test_build_status_writes_the_state_where_it_is_not_the_phases_word() -> None:
    world = World(pytorch_job())
    shipped = world.definition
    created = replace(shipped.job.states["Created"], phase="Pending")
    definition = replace(shipped, job=replace(
        shipped.job, states={**shipped.job.states, "Created": created}))
    spec = read_job_spec(world.job, definition)
    facts, _ = observe({}, spec, world.restart_attempt)
    decision = decide(definition, world.job, spec, read_record({}), facts,
                      job_observations=frozenset(), now=NOW)
    status = build_status(world.job, assignment(definition), spec, decision, now=NOW)
    assert (status["phase"], status["state"]) == ("Pending", "Created")
    assert read_record(status).state == "Created"
