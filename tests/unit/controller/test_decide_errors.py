"""A replica state's failing timeout is said once per replica in a decision: it is met
entering the state and again checking the replica's timer in the next round."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.definition import load_definitions
from tests.kinds import MACHINES
from tests.scenarios.world import DEFINITIONS, World, machine_job

PENDING_TIMEOUT = ('timeout: "has(runPolicy.pendingTimeoutSeconds) ? '
                   'runPolicy.pendingTimeoutSeconds : 0"')


@pytest.fixture
def failing_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The shipped MachineJob machine whose Pending timeout fails for a job named `train`."""
    text = (MACHINES / "job.yaml").read_text()
    assert text.count(PENDING_TIMEOUT) == 1
    (tmp_path / "job.yaml").write_text(
        text.replace(PENDING_TIMEOUT, "timeout: \"{'other': 60}[job.metadata.name]\""))
    [definition] = load_definitions([tmp_path])
    monkeypatch.setitem(DEFINITIONS, "MachineJob", definition)
    yield


@pytest.mark.usefixtures("failing_timeout")
@pytest.mark.parametrize("workers", [1, 2])
def test_a_failing_timeout_is_said_once_per_replica_in_the_pass_that_enters_its_state(
        workers: int) -> None:
    created = World(machine_job(workers=workers)).reconcile()
    assert set(created.replica_states.values()) == {"Pending"}
    assert [error.split(":")[0] for error in created.decision.errors] == [
        "timeout of replica state Pending"] * workers
