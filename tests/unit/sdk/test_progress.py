"""The progress line of `wait_for_job_conditions`: state, restarts and replica states."""

from __future__ import annotations

import io
from typing import Any

import pytest

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.record import MachineRecord, record_fields
from engine.sdk.progress import ProgressDisplay, progress_display, progress_line
from engine.sdk.replicas import replica_states


def job(state: str | None, restarts: int = 0, **replicas: str) -> dict[str, Any]:
    """A PyTorchJob team/mnist whose record has these replica states ("Worker_1"="Running")."""
    states = {ReplicaId(k.split("_")[0], int(k.split("_")[1])): v for k, v in replicas.items()}
    status = record_fields(MachineRecord(state=state, restarts=restarts, replica_states=states))
    return {"kind": "PyTorchJob", "metadata": {"namespace": "team", "name": "mnist"},
            "status": {k: v for k, v in status.items() if v is not None}}


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_line_says_state_restarts_and_each_replica_types_states_as_ranges() -> None:
    line = progress_line(job("Running", 1, Master_0="Succeeded", Worker_0="Running",
                             Worker_1="Running", Worker_2="Restarting", Worker_3="Running"))

    assert line == ("PyTorchJob team/mnist  Running  restarts 1  Master 0 Succeeded  "
                    "Worker 0-1,3 Running, 2 Restarting")


def test_a_job_the_engine_has_not_seen_yet_is_pending() -> None:
    fresh = {"kind": "MachineJob", "metadata": {"namespace": "d", "name": "j"}}

    assert progress_line(fresh) == "MachineJob d/j  Pending  restarts 0"


def test_a_record_edited_by_hand_still_gives_a_line() -> None:
    edited = {"kind": "MachineJob", "metadata": {"namespace": "d", "name": "j"},
              "status": {"state": "Running", "record": "{not json"}}

    assert progress_line(edited) == "MachineJob d/j  Running  restarts 0"


def test_on_a_terminal_one_line_is_rewritten_in_place_and_ended_at_close(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    out = Terminal()
    display = ProgressDisplay(out, live=True)

    display.show(job("Created"))
    display.show(job("Created"))
    display.show(job("Running", Worker_0="Running"))
    display.close()

    assert out.getvalue() == (
        "\rPyTorchJob team/mnist  Created  restarts 0\x1b[K"
        "\rPyTorchJob team/mnist  Running  restarts 0  Worker 0 Runnin\x1b[K\n")


def test_elsewhere_a_line_is_added_per_change() -> None:
    out = io.StringIO()
    display = ProgressDisplay(out, live=False)

    for version in (job("Created"), job("Created"), job("Succeeded")):
        display.show(version)
    display.close()

    assert out.getvalue().splitlines() == ["PyTorchJob team/mnist  Created  restarts 0",
                                           "PyTorchJob team/mnist  Succeeded  restarts 0"]


def test_none_shows_progress_on_a_terminal_only_and_true_or_false_decide() -> None:
    assert progress_display(None, io.StringIO()) is None
    assert progress_display(False, Terminal()) is None
    terminal, piped = Terminal(), io.StringIO()
    for display in (progress_display(None, terminal), progress_display(True, piped)):
        assert display is not None
        display.show(job("Created"))

    assert terminal.getvalue().startswith("\r")
    assert piped.getvalue() == "PyTorchJob team/mnist  Created  restarts 0\n"


def test_replicas_that_stopped_short_at_the_jobs_end_say_so_as_describe_does() -> None:
    ended = job("Failed", Master_0="Running", Worker_0="Failed", Worker_1="Running",
                Worker_2="Running")
    ended["status"]["replicaStatuses"] = {
        "Master": {"unfinished": {"0": "Running, stopped at job end (pod deleted)"}},
        "Worker": {"failed": 1, "unfinished": {"1-2": "Running, stopped at job end (pod "
                                                      "deleted)"}}}

    assert replica_states(ended) == {
        ReplicaId("Master", 0): "Running, stopped at job end (pod deleted)",
        ReplicaId("Worker", 0): "Failed",
        ReplicaId("Worker", 1): "Running, stopped at job end (pod deleted)",
        ReplicaId("Worker", 2): "Running, stopped at job end (pod deleted)"}
    assert progress_line(ended) == (
        "PyTorchJob team/mnist  Failed  restarts 0  "
        "Master 0 Running, stopped at job end (pod deleted)  "
        "Worker 0 Failed, 1-2 Running, stopped at job end (pod deleted)")
