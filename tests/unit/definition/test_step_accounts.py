"""What one step reports besides the state it reaches: every error of every template, action
argument and guard it met, the replays of a stay rendered with the step's variables, an
observation that holds once, and the exact loop a runaway machine is stopped at."""

from __future__ import annotations

import pytest

from engine.definition import Facts, PlannedAction, StepError, step
from tests.unit.definition.test_step import JOB, REPLICA, VARIABLES, compiled, facts

ERRORS = """\
  replica:
    initial: Pending
    states:
      Pending: {}
      Running: {}
      Succeeded: {terminal: success}
      Failed: {terminal: failure}
    transitions:
      - from: Pending
        to: Running
        "on": podRunning
        message: "${pod.name} runs"
        actions:
          - event: {reason: Up, message: "${pod.phase} now"}
          - countRestart: {count: "pod.restartCount"}
      - {from: Running, to: Failed, when: "pod.name == 'x'"}
      - {from: [Pending, Running], to: Succeeded, "on": podSucceeded}
"""


def test_a_step_reports_every_error_it_met_in_order() -> None:
    result = step(compiled(replica=ERRORS).replica, "Pending", facts("podRunning"))
    assert result.state == "Running"
    assert result.errors == (
        "'pod.name': no such key: name",
        "'pod.phase': no such key: phase",
        "action countRestart argument count: 'pod.restartCount': no such key: restartCount",
        "transition 2 guard: \"pod.name == 'x'\": no such key: name",
    )
    assert result.actions == (
        PlannedAction("event", {"reason": "Up", "message": "${pod.phase} now"}, transition=0),
        PlannedAction("countRestart", {}, transition=0),
    )


def test_a_stay_renders_what_it_replays_with_the_step_s_variables() -> None:
    replica = REPLICA.replace(
        "Pending: {onEnter: [createService]}",
        "Pending: {onEnter: [createService, "
        "{event: {reason: Wait, message: \"${replica.type} waits\"}}]}",
    )
    result = step(compiled(replica=replica).replica, "Pending", facts())
    assert result.state == "Pending"
    assert result.replays == (PlannedAction("createService", {}, state="Pending"),)
    assert result.replay_errors == ()


def test_an_observation_that_holds_once_gives_way_to_the_one_it_stands_for() -> None:
    replica = REPLICA.replace(
        "      Restarting: {onEnter: [deletePod], ",
        "      Restarted: {}\n      Restarting: {onEnter: [deletePod], ",
    ) + (
        "      - {from: Running, to: Restarted, \"on\": podRestarting}\n"
        "      - {from: Restarted, to: Failed, \"on\": podFailed}\n"
        "      - {from: Restarted, to: Running, \"on\": podRestarting}\n"
    )
    machine = compiled(replica=replica).replica
    once = Facts(frozenset({"podRestarting"}), VARIABLES, {"podRestarting": "podFailed"})
    result = step(machine, "Running", once)
    assert [f.target for f in result.fired] == ["Restarted", "Failed"]
    assert result.state == "Failed"


def test_a_runaway_machine_is_stopped_after_as_many_moves_as_states_and_one() -> None:
    job = JOB.replace("      Done: {terminal: success}\n",
                      "      Done: {terminal: success}\n      Waiting: {}\n")
    job += "      - {from: Running, to: Waiting}\n      - {from: Waiting, to: Running}\n"
    job = job.replace('when: "restarts == 0"', 'when: "restarts == 0 && false"')
    with pytest.raises(StepError) as caught:
        step(compiled(job=job).job, "Running", facts())
    assert str(caught.value) == (
        "job machine loops: Waiting -> Running -> Waiting -> Running -> Waiting"
    )
