"""Replica state timeouts whose expression fails (`_timed_out`, `_restart_timer`): the job is
told why, on every pass, and the replica simply has no timer; nothing stops the decision.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.definition import load_definitions
from tests.kinds import MACHINES
from tests.scenarios.world import DEFINITIONS, World, machine_job, pending, worker

PENDING_TIMEOUT = ('timeout: "has(runPolicy.pendingTimeoutSeconds) ? '
                   'runPolicy.pendingTimeoutSeconds : 0"')
FAILING_TIMEOUT = "timeout: \"{'other': 60}[job.metadata.name]\""
"""A timeout that cannot be worked out for a job named anything but `other`."""


@pytest.fixture
def failing_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The shipped MachineJob machine with Pending's timeout `FAILING_TIMEOUT`."""
    text = (MACHINES / "job.yaml").read_text()
    assert text.count(PENDING_TIMEOUT) == 1
    (tmp_path / "job.yaml").write_text(text.replace(PENDING_TIMEOUT, FAILING_TIMEOUT))
    [definition] = load_definitions([tmp_path])
    monkeypatch.setitem(DEFINITIONS, "MachineJob", definition)
    yield


SAID = ("timeout of replica state Pending: \"{'other': 60}[job.metadata.name]\": "
        "no such key: train")
"""The error (the job is named `train`): the state, the expression, and why it failed."""


@pytest.mark.usefixtures("failing_timeout")
def test_a_timeout_that_cannot_be_worked_out_is_said_on_every_pass_and_starts_no_timer(
) -> None:
    world = World(machine_job(workers=1))
    created = world.reconcile()
    assert created.replica_states == {"Worker-0": "Pending"}
    assert set(created.decision.errors) == {SAID}
    assert created.decision.record.replica_timers == {}

    world.pods[worker(0)] = pending()
    world.advance(3600)
    waiting = world.reconcile()
    assert waiting.replica_states == {"Worker-0": "Pending"}
    assert set(waiting.decision.errors) == {SAID}
    assert waiting.decision.record.replica_timers == {}
    assert waiting.decision.timer_due is None
