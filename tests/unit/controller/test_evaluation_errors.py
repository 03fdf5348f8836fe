"""A machine expression that fails while a job runs is said once per job and revision: one
Warning Event naming the machine, its revision, where the expression is written and as what
(named expressions not expanded), and why; not a log line at every pass."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from engine.controller.reconcile.children import JobKey
from engine.controller.reporting.evaluation_errors import (
    MAX_SAID_PER_JOB,
    REASON,
    EvaluationErrors,
    without_replica,
)
from engine.definition import CompiledDefinition, load_definitions
from tests.kinds import MACHINES
from tests.scenarios.world import DEFINITIONS, World, machine_job

PENDING_TIMEOUT = ('timeout: "has(runPolicy.pendingTimeoutSeconds) ? '
                   'runPolicy.pendingTimeoutSeconds : 0"')
FAILING = "{'other': 60}[job.metadata.name]"
KEY = JobKey("MachineJob", "ml", "train")


@dataclass
class RecordingRecorder:
    events: list[tuple[str, str, str]] = field(default_factory=list)

    def record(self, involved: Any, *, type: str, reason: str, message: str) -> None:
        self.events.append((type, reason, message))


def _failing_machine(tmp_path: Path, name: str = "job.yaml") -> CompiledDefinition:
    """The shipped MachineJob machine whose replicas' Pending timeout is a named expression
    that fails for a job named `train`."""
    text = (MACHINES / "job.yaml").read_text()
    assert text.count(PENDING_TIMEOUT) == 1 and text.count("\nspec:\n") == 1
    text = text.replace(PENDING_TIMEOUT, 'timeout: "pendingLimit()"').replace(
        "\nspec:\n", f"\nspec:\n  expressions:\n    pendingLimit: \"{FAILING}\"\n")
    folder = tmp_path / name.removesuffix(".yaml")
    folder.mkdir()
    (folder / name).write_text(text)
    [definition] = load_definitions([folder])
    return definition


@pytest.fixture
def failing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[CompiledDefinition]:
    definition = _failing_machine(tmp_path)
    monkeypatch.setitem(DEFINITIONS, "MachineJob", definition)
    yield definition


def _errors(workers: int = 2) -> tuple[str, ...]:
    return World(machine_job(workers=workers)).reconcile().decision.errors


def test_a_failure_met_by_every_replica_is_one_event_naming_where_it_is_written(
        failing: CompiledDefinition) -> None:
    recorder = RecordingRecorder()
    errors = _errors()
    assert len(errors) == 2

    EvaluationErrors(recorder).report(KEY, {}, definition=failing, revision="mj-1",
                                      errors=errors)

    [(type_, reason, message)] = recorder.events
    assert (type_, reason) == ("Warning", REASON)
    assert message == (
        "machine machinejob (revision mj-1): timeout of replica state Pending at "
        "data.spec.replica.states.Pending.timeout cannot be evaluated: 'pendingLimit()': "
        "no such key: train")


def test_the_same_failure_in_later_passes_says_nothing_more(failing: CompiledDefinition
                                                          ) -> None:
    recorder = RecordingRecorder()
    said = EvaluationErrors(recorder)
    for _ in range(3):
        said.report(KEY, {}, definition=failing, revision="mj-1", errors=_errors())
    assert len(recorder.events) == 1


def test_another_job_a_new_revision_or_a_job_made_again_is_told_afresh(
        failing: CompiledDefinition, tmp_path: Path) -> None:
    recorder = RecordingRecorder()
    said = EvaluationErrors(recorder)
    errors = _errors()
    said.report(KEY, {}, definition=failing, revision="mj-1", errors=errors)
    other = JobKey("MachineJob", "ml", "other")
    said.report(other, {}, definition=failing, revision="mj-1", errors=errors)
    assert len(recorder.events) == 2

    revised = _failing_machine(tmp_path, "again.yaml")
    said.report(KEY, {}, definition=revised, revision="mj-2", errors=errors)
    assert len(recorder.events) == 3
    assert "(revision mj-2)" in recorder.events[-1][2]

    said.forget(KEY.id)
    said.report(KEY, {}, definition=revised, revision="mj-2", errors=errors)
    assert len(recorder.events) == 4


def test_an_error_that_quotes_no_expression_is_said_as_it_is() -> None:
    recorder = RecordingRecorder()
    definition = DEFINITIONS["MachineJob"]
    EvaluationErrors(recorder).report(
        KEY, {}, definition=definition, revision="mj-1",
        errors=["worker-0: countRestart count gave -1, not an int >= 0"])
    assert recorder.events == [("Warning", REASON, "machine machinejob (revision mj-1): "
                                "countRestart count gave -1, not an int >= 0")]


def test_distinct_failures_of_one_job_are_said_up_to_a_bound() -> None:
    recorder = RecordingRecorder()
    said = EvaluationErrors(recorder)
    errors = [f"restartJob count gave {n}, not an int >= 0" for n in range(-40, 0)]
    said.report(KEY, {}, definition=DEFINITIONS["MachineJob"], revision="mj-1",
                errors=errors)
    assert len(recorder.events) == MAX_SAID_PER_JOB
    assert recorder.events[-1][2].endswith(errors[MAX_SAID_PER_JOB - 1])


@pytest.mark.parametrize(("error", "gist"), [
    ("worker-0: transition 2 guard: 'x': no", "transition 2 guard: 'x': no"),
    ("Worker-12: y", "y"),
    ("transition 2 guard: 'worker-0: x': no", "transition 2 guard: 'worker-0: x': no"),
    ("0-1: y", "0-1: y"),
])
def test_the_replica_a_failure_was_for_is_left_out(error: str, gist: str) -> None:
    assert without_replica(error) == gist
