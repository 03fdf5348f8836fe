"""A replica entering a state works out the state's timeout then (`_restart_timer`), not only
when a later round checks its timer: when the job stops stepping its replicas in the same
pass (it holds them), the entry is the only time a timeout that fails to evaluate is said.

The test runs the shipped MachineJob machine with a timeout on the replica's Suspended state
that fails for a job named `train`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.definition import load_definitions
from tests.kinds import MACHINES
from tests.scenarios.world import DEFINITIONS, World, machine_job, running, worker

SUSPENDED = ("        description: The job was suspended while this replica ran; its pod is being"
             " deleted.\n")


@pytest.fixture
def failing_suspended_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shipped MachineJob machine whose replica Suspended state has a timeout that fails
    for a job named `train`."""
    text = (MACHINES / "job.yaml").read_text()
    assert text.count(SUSPENDED) == 1
    (tmp_path / "job.yaml").write_text(text.replace(
        SUSPENDED, SUSPENDED + "        timeout: \"{'other': 60}[job.metadata.name]\"\n"))
    [definition] = load_definitions([tmp_path])
    monkeypatch.setitem(DEFINITIONS, "MachineJob", definition)


@pytest.mark.usefixtures("failing_suspended_timeout")
@pytest.mark.parametrize("workers", [1, 2])
def test_a_failing_timeout_is_said_when_the_state_is_entered_as_the_job_holds_its_replicas(
    workers: int,
) -> None:
    world = World(machine_job(workers=workers))
    world.reconcile()
    for index in range(workers):
        world.put(worker(index), running())
    assert world.reconcile().phase == "Running"
    world.run_policy["suspend"] = True
    suspended = world.reconcile()
    assert suspended.phase == "Suspended"
    assert set(suspended.replica_states.values()) == {"Suspended"}
    assert [error.split(":")[0] for error in suspended.decision.errors] == [
        "timeout of replica state Suspended"] * workers
