"""In which job state a job made a child: from its kept history, else from its state-change
Events and the time it entered its current state, else its machine's initial state."""

from __future__ import annotations

from typing import Any

from engine.controller.reconcile.record import MachineRecord
from engine.definition.loader import load_file
from engine.definition.schema import MachineSpec
from engine.simulation.made_in import state_made_in
from tests.kinds import MACHINES


def jobset_machine() -> MachineSpec:
    (loaded,) = load_file(MACHINES / "jobset.yaml")
    return loaded.definition.spec.job


def child(created: str) -> dict[str, Any]:
    return {"metadata": {"name": "pair-workers-0", "creationTimestamp": created}}


def event(reason: str, first: str) -> dict[str, Any]:
    return {"reason": reason, "firstTimestamp": first, "lastTimestamp": first}


def test_the_kept_history_says_exactly() -> None:
    record = MachineRecord(state="Running", history=(
        {"time": "2030-01-01T00:00:00Z", "level": "job", "from": None, "to": "Running"},
        {"time": "2030-01-01T00:00:05Z", "level": "job", "from": "Running",
         "to": "Restarting"},
        {"time": "2030-01-01T00:00:05Z", "level": "replica", "replica": "workers-0",
         "from": "Started", "to": "Pending"},
        {"time": "2030-01-01T00:00:07Z", "level": "job", "from": "Restarting", "to": "Running"},
    ))
    machine = jobset_machine()
    assert state_made_in(child("2030-01-01T00:00:00Z"), record, machine, []) == "Running"
    assert state_made_in(child("2030-01-01T00:00:06Z"), record, machine, []) == "Restarting"
    assert state_made_in(child("2030-01-01T00:00:07Z"), record, machine, []) == "Running"


def test_without_history_the_events_and_the_current_states_start_say_it() -> None:
    """A set restarted at 5 s (its Warning Event) and completed at 9 s: a Job made at 6 s
    was made while Restarting, one made at the start in the initial state Running."""
    record = MachineRecord(state="Completed", state_since="2030-01-01T00:00:09Z")
    events = [event("RestartJobSetFailurePolicyAction", "2030-01-01T00:00:05Z"),
              event("AllJobsCompleted", "2030-01-01T00:00:09.250000Z")]
    machine = jobset_machine()
    assert state_made_in(child("2030-01-01T00:00:00Z"), record, machine, events) == "Running"
    assert state_made_in(child("2030-01-01T00:00:06Z"), record, machine, events) == (
        "Restarting")
    assert state_made_in(child("2030-01-01T00:00:09Z"), record, machine, events) == (
        "Completed")


def test_an_event_reason_no_job_transition_has_says_nothing() -> None:
    record = MachineRecord(state="Running", state_since="2030-01-01T00:00:00Z")
    events = [event("SuccessfulCreate", "2030-01-01T00:00:01Z")]
    assert state_made_in(child("2030-01-01T00:00:02Z"), record, jobset_machine(), events) == (
        "Running")
    assert state_made_in({"metadata": {}}, record, jobset_machine(), events) is None
