"""`up`'s live lines: a job's state changes and its replicas' failures and restarts."""

from __future__ import annotations

import io
from datetime import datetime

import pytest

from engine.app.live import LiveReport, live_line, use_colour, wanted
from engine.controller.reporting.events import EventRecorder, EventType, RecordedEvent

AT = datetime(2027, 1, 15, 8, 2, 3)


def event(reason: str, *, type: EventType = "Normal", replica: str | None = None,
          message: str = "said") -> RecordedEvent:
    return RecordedEvent("PyTorchJob", "team", "train", type, reason, message, replica)


@pytest.mark.parametrize(("recorded", "shown"), [
    (event("PyTorchJobRunning"), True),
    (event("BackoffLimitExceeded", type="Warning"), True),
    (event("PodRestarted", type="Warning", replica="Worker-1"), True),
    (event("PodFailed", type="Warning", replica="Worker-1"), True),
    (event("Running", replica="Worker-1"), False),
    (event("Succeeded", replica="Worker-1"), False),
    (RecordedEvent("StateMachine", "", "pytorchjob", "Normal", "RevisionInForce", "ok", None),
     False),
    (RecordedEvent("StateMachine", "", "mine", "Warning", "Invalid", "bad", None), True),
])
def test_job_changes_and_replica_warnings_are_shown_routine_replica_steps_are_not(
    recorded: RecordedEvent, shown: bool
) -> None:
    assert wanted(recorded) is shown


def test_a_line_says_when_which_job_who_why_and_what() -> None:
    line = live_line(event("PodRestarted", type="Warning", replica="Worker-1",
                           message="Worker-1 ended (exit code 2, Error: boom)"), AT, colour=False)
    assert line == ("08:02:03  team/train  Worker-1    PodRestarted              "
                    "Worker-1 ended (exit code 2, Error: boom)")
    assert "\033[" not in line


def test_a_machine_is_named_as_such() -> None:
    refused = RecordedEvent("StateMachine", "", "mine", "Warning", "Invalid", "line 3: bad", None)
    assert live_line(refused, AT, colour=False) == (
        "08:02:03  statemachine/mine  machine     Invalid                   line 3: bad")


def test_colour_marks_the_reason_only() -> None:
    line = live_line(event("BackoffLimitExceeded", type="Warning"), AT, colour=True)
    assert line.startswith("08:02:03  team/train  job         \033[31mBackoffLimitExceeded")
    assert line.endswith("\033[0m  said")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_terminal_and_not_under_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_colour(_Terminal()) and not use_colour(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_colour(_Terminal())


class _Silent:
    """An event client that is never reached (the recorder is not started)."""

    def create(self, *_: object, **__: object) -> dict[str, object]:
        raise AssertionError("not posted in this test")

    def patch(self, *_: object, **__: object) -> dict[str, object]:
        raise AssertionError("not posted in this test")


JOB = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
       "metadata": {"name": "train", "namespace": "team", "uid": "u"}}


def _listening(out: io.StringIO) -> tuple[LiveReport, EventRecorder]:
    """A started report writing to `out`, listening to a recorder that posts nothing."""
    report = LiveReport(out, colour=False, clock=lambda: AT)
    recorder = EventRecorder(_Silent())
    recorder.add_listener(report)
    report.start()
    return report, recorder


def test_the_report_prints_what_the_recorder_records_in_order() -> None:
    out = io.StringIO()
    report, recorder = _listening(out)
    recorder.record(JOB, type="Normal", reason="PyTorchJobRunning", message="running")
    recorder.record(JOB, type="Normal", reason="Running", message="w", replica="Worker-0")
    recorder.record(JOB, type="Warning", reason="PodRestarted", message="ended",
                    replica="Worker-0")
    report.stop()
    assert out.getvalue().splitlines() == [
        "08:02:03  team/train  job         PyTorchJobRunning         running",
        "08:02:03  team/train  Worker-0    PodRestarted              ended",
    ]


def test_a_state_change_that_posts_no_event_is_shown_and_an_ending_said_once() -> None:
    out = io.StringIO()
    report, recorder = _listening(out)
    # Kubeflow posts no Event when a job is created or runs: `up` is told all the same.
    recorder.tell(JOB, type="Normal", reason="PyTorchJobCreated", message="created")
    recorder.tell(JOB, type="Normal", reason="PyTorchJobRunning", message="running")
    recorder.record(JOB, type="Normal", reason="PyTorchJobSucceeded", message="done")
    recorder.tell(JOB, type="Normal", reason="PyTorchJobSucceeded", message="done")  # cleaned up
    report.stop()
    assert [line.split()[3:] for line in out.getvalue().splitlines()] == [
        ["PyTorchJobCreated", "created"],
        ["PyTorchJobRunning", "running"],
        ["PyTorchJobSucceeded", "done"],
    ]
