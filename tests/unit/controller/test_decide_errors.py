"""Each error a decision meets is said once: a replica visited in several rounds of one pass
(it moved, then is stepped again in its new state) meets the same error each time, and a
state's failing timeout is met entering the state and again checking its timer."""

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
def test_a_failing_timeout_is_said_once_in_the_pass_that_enters_its_state() -> None:
    created = World(machine_job(workers=2)).reconcile()
    assert created.replica_states == {"Worker-0": "Pending", "Worker-1": "Pending"}
    assert [error.split(":")[0] for error in created.decision.errors] == [
        "timeout of replica state Pending"]
