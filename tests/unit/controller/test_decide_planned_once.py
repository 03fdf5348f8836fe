"""An action is planned once a pass per replica and arguments (`_Progress.plan`): the job's
machine is stepped several rounds a pass, so the same action may be asked for again, but two
actions of the same name whose arguments differ in a value are two actions.

Each test runs the shipped MachineJob machine with the job's Running state given `onEnter`
Events.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from engine.definition import load_definitions
from tests.kinds import MACHINES
from tests.scenarios.world import DEFINITIONS, Reconciled, World, machine_job, running, worker

RUNNING_SAYS = '          message: "MachineJob ${job.metadata.name} is running."\n'

Machine = Callable[[str], None]


@pytest.fixture
def running_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Machine:
    """`running_says(events)`: the shipped MachineJob machine whose Running state posts
    `events` (YAML list items, each on a line of its own) as it is entered."""

    def changed(events: str) -> None:
        text = (MACHINES / "job.yaml").read_text()
        assert text.count(RUNNING_SAYS) == 1
        on_enter = "".join(f"          {line}\n" for line in events.splitlines())
        (tmp_path / "job.yaml").write_text(
            text.replace(RUNNING_SAYS, f"{RUNNING_SAYS}        onEnter:\n{on_enter}"))
        [definition] = load_definitions([tmp_path])
        monkeypatch.setitem(DEFINITIONS, "MachineJob", definition)

    return changed


def started() -> Reconciled:
    """A one-Worker job whose Worker runs: the job enters Running."""
    world = World(machine_job(workers=1))
    world.reconcile()
    world.put(worker(0), running())
    result = world.reconcile()
    assert result.phase == "Running"
    return result


def test_two_events_that_differ_only_in_their_values_are_both_posted(
    running_says: Machine,
) -> None:
    running_says("- event: {reason: Started, message: first}\n"
                 "- event: {reason: Started, message: second}\n"
                 "- event: {reason: Ready, message: second}")
    assert started().posted == [
        ("Normal", "Started", "first"), ("Normal", "Started", "second"),
        ("Normal", "Ready", "second")]


def test_the_same_event_asked_for_twice_is_posted_once(running_says: Machine) -> None:
    running_says("- event: {reason: Started, message: first}\n"
                 "- event: {reason: Started, message: first}")
    assert started().posted == [("Normal", "Started", "first")]
