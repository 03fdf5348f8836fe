"""The counts of `countRestart` and `restartJob` (`_apply`): an int >= 0, computed by the
machine's CEL; anything else (a negative number, a bool) is an error of the decision and
counts nothing, 0 counts nothing, n counts n.

Each test runs the shipped MachineJob machine with the count of one action changed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from engine.definition import load_definitions
from tests.kinds import MACHINES
from tests.scenarios.world import (
    DEFINITIONS,
    Reconciled,
    World,
    exited,
    machine_job,
    running,
    running_again,
    worker,
)

IN_PLACE = "- countRestart: {count: newRestarts}"
RESTART_JOB = "        actions: [restartJob]\n"

Machine = Callable[[str, str], None]


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Machine:
    """`machine(old, new)`: the shipped MachineJob machine with `old` (found once) made `new`."""

    def changed(old: str, new: str) -> None:
        text = (MACHINES / "job.yaml").read_text()
        assert text.count(old) == 1, old
        (tmp_path / "job.yaml").write_text(text.replace(old, new))
        [definition] = load_definitions([tmp_path])
        monkeypatch.setitem(DEFINITIONS, "MachineJob", definition)

    return changed


def restarted_in_place() -> Reconciled:
    """A running Worker whose container the kubelet restarted in place once (OnFailure)."""
    world = World(machine_job(workers=1, policy="OnFailure"))
    world.reconcile()
    world.put(worker(0), running())
    assert world.reconcile().phase == "Running"
    world.put(worker(0), running_again(1))
    return world.reconcile()


@pytest.mark.parametrize(("count", "said"), [
    ("newRestarts - 2", "-1"), ("newRestarts > 0", "True"),
], ids=["negative", "bool"])
def test_a_restart_count_that_is_no_int_at_least_zero_is_an_error_and_counts_nothing(
    machine: Machine, count: str, said: str,
) -> None:
    machine(IN_PLACE, f"- countRestart: {{count: '{count}'}}")
    result = restarted_in_place()
    assert result.replica_path[0] == ("Worker-0", "Running", "RestartingInPlace")
    assert result.decision.errors == (
        f"Worker-0: countRestart count gave {said}, not an int >= 0",)
    assert result.decision.record.restarts == 0
    assert result.decision.record.replica_restarts == {}
    assert result.decision.restarts == ()


@pytest.mark.parametrize("count", [0, 2])
def test_a_restart_count_of_n_counts_n(machine: Machine, count: int) -> None:
    machine(IN_PLACE, f"- countRestart: {{count: '{count}'}}")
    result = restarted_in_place()
    assert result.decision.errors == ()
    assert result.decision.record.restarts == count
    counted = result.decision.record.replica_restarts.get(worker(0))
    assert (counted.count if counted else 0) == count
    assert result.decision.restarts == ((("PodRestarted", count),) if count else ())


def restart_job_rule() -> Reconciled:
    """A running Worker exits 42, which the job's failure rule says restarts the job."""
    job = machine_job(workers=1, policy="Never")
    job["spec"]["failureRules"] = [
        {"action": "RestartJob", "onExitCodes": {"operator": "In", "values": [42]}}]
    world = World(job)
    world.reconcile()
    world.pods[worker(0)] = running()
    assert world.reconcile().phase == "Running"
    world.pods[worker(0)] = exited(42)
    return world.reconcile()


@pytest.mark.parametrize(("count", "said"), [("-1", "-1"), ("true", "True")],
                         ids=["negative", "bool"])
def test_a_job_restart_count_that_is_no_int_at_least_zero_is_an_error_and_restarts_nothing(
    machine: Machine, count: str, said: str,
) -> None:
    machine(RESTART_JOB, f"        actions: [{{restartJob: {{count: '{count}'}}}}]\n")
    result = restart_job_rule()
    assert f"restartJob count gave {said}, not an int >= 0" in result.decision.errors
    assert result.decision.record.restart_attempt == 0
    assert result.decision.record.restarts == 0


@pytest.mark.parametrize("count", [0, 2])
def test_a_job_restart_counts_its_count_in_a_new_attempt(machine: Machine, count: int) -> None:
    machine(RESTART_JOB, f"        actions: [{{restartJob: {{count: '{count}'}}}}]\n")
    result = restart_job_rule()
    assert result.decision.errors == ()
    assert result.phase == "Restarting"
    assert (result.decision.record.restart_attempt, result.decision.record.restarts) == (
        1, count)
    assert result.decision.restarts == ((("JobRestarting", count),) if count else ())


HELD_RESTART = "        condition: Restarting\n        holdReplicas: true\n"


def test_a_job_restart_forgets_every_replicas_back_off_and_timer(machine: Machine) -> None:
    # Restarting does not hold the replicas here, so the timers the record keeps show too.
    machine(HELD_RESTART, "        condition: Restarting\n")
    job = machine_job(workers=2, policy="ExitCode", run_policy={"pendingTimeoutSeconds": 600})
    job["spec"]["failureRules"] = [
        {"action": "RestartJob", "onExitCodes": {"operator": "In", "values": [42]}}]
    world = World(job)
    world.reconcile()
    world.put(worker(0), running())
    world.put(worker(1), running())
    world.reconcile()
    world.put(worker(1), exited(137))  # killed: recreated, after a back-off
    world.reconcile()
    world.put(worker(1), None)
    recreated = world.reconcile()
    assert recreated.decision.record.replica_backoff.keys() == {worker(1)}
    assert recreated.decision.record.replica_timers.keys() == {worker(1)}  # Pending again
    world.put(worker(0), exited(42))
    restarted = world.reconcile()
    assert restarted.phase == "Restarting"
    assert restarted.decision.record.restart_attempt == 1
    assert restarted.decision.record.replica_states == {}
    assert restarted.decision.record.replica_backoff == {}
    assert restarted.decision.record.replica_timers == {}
