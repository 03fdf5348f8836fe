"""Stepping at its edges: what `replays` gives an instance that is not stepped, the loop a
runaway machine names, and delays that are zero, negative or not numbers at all."""

from __future__ import annotations

import pytest

from engine.definition import PlannedAction, StepError, replays, requeue_after, step
from engine.definition.cel import CelEvaluationError
from engine.definition.step import state_timeout
from tests.unit.definition.test_step import JOB, REPLICA, VARIABLES, compiled, facts


def test_replays_of_a_state_are_its_replayable_on_enter_actions_rendered() -> None:
    replica = REPLICA.replace(
        "Pending: {onEnter: [createService]}",
        "Pending: {onEnter: [createService, countRestart, "
        "{event: {reason: Wait, message: \"${replica.type} waits\"}}]}",
    )
    machine = compiled(replica=replica).replica
    assert replays(machine, "Pending", VARIABLES) == (
        (PlannedAction("createService", {}, state="Pending"),),
        (),
    )
    assert replays(machine, "Running", VARIABLES) == ((), ())


def test_replays_report_the_errors_of_rendering_the_state_on_entry() -> None:
    replica = REPLICA.replace(
        "Pending: {onEnter: [createService]}",
        "Pending: {onEnter: [createService, "
        "{event: {reason: Wait, message: \"${pod.name} waits\"}}]}",
    )
    machine = compiled(replica=replica).replica
    actions, errors = replays(machine, "Pending", VARIABLES)
    assert actions == (PlannedAction("createService", {}, state="Pending"),)
    assert len(errors) == 1 and "name" in errors[0]


def _runaway(states: list[str], transitions: list[tuple[str, str]]) -> list[str]:
    """The states named by the error of a job machine whose guards chase each other."""
    job = JOB.replace(
        "      Done: {terminal: success}\n",
        "      Done: {terminal: success}\n" + "".join(f"      {s}: {{}}\n" for s in states),
    )
    job += "".join(f"      - {{from: {a}, to: {b}}}\n" for a, b in transitions)
    job = job.replace('when: "restarts == 0"', 'when: "restarts == 0 && false"')
    with pytest.raises(StepError) as caught:
        step(compiled(job=job).job, "Running", facts())
    return str(caught.value).removeprefix("job machine loops: ").split(" -> ")


def test_the_loop_a_runaway_machine_names_begins_and_ends_at_one_state() -> None:
    loop = _runaway(["Waiting"], [("Running", "Waiting"), ("Waiting", "Running")])
    assert loop[0] == loop[-1] == "Waiting"
    assert set(loop) == {"Running", "Waiting"}


def test_the_loop_named_leaves_out_the_states_that_led_into_it() -> None:
    loop = _runaway(["A", "B"], [("Running", "A"), ("A", "B"), ("B", "A")])
    assert loop[0] == loop[-1] == "B"
    assert set(loop) == {"A", "B"}


def _with_delays(requeue: str, timeout: str) -> object:
    replica = REPLICA.replace(
        "Running: {requeueAfter: 30s, timeout: 1m}",
        f"Running: {{requeueAfter: \"{requeue}\", timeout: \"{timeout}\"}}",
    )
    return compiled(replica=replica).replica


# restarts is 2 in VARIABLES: expressions, not literals (a literal is a constant delay).
@pytest.mark.parametrize(
    "expression", ["duration('0s')", "duration('-5s')", "restarts - 2", "restarts - 5"]
)
def test_a_delay_of_zero_or_less_requeues_at_once_and_turns_the_timeout_off(
    expression: str,
) -> None:
    machine = _with_delays(expression, expression)
    assert requeue_after(machine, "Running", VARIABLES) == 0.0  # type: ignore[arg-type]
    assert state_timeout(machine, "Running", VARIABLES) is None  # type: ignore[arg-type]


def test_a_delay_of_a_duration_or_a_number_is_seconds() -> None:
    machine = _with_delays("duration('1500ms')", "dyn(double(restarts) * 1.5)")
    assert requeue_after(machine, "Running", VARIABLES) == 1.5  # type: ignore[arg-type]
    assert state_timeout(machine, "Running", VARIABLES) == 3.0  # type: ignore[arg-type]


def test_a_timeout_under_a_second_is_kept() -> None:
    machine = _with_delays("duration('500ms')", "duration('500ms')")
    assert state_timeout(machine, "Running", VARIABLES) == 0.5  # type: ignore[arg-type]


def test_a_machine_without_a_creation_event_creates_silently() -> None:
    quiet = compiled(job=JOB.replace("  job:\n", "  job:\n    creationEvent: false\n")).job
    (created,) = step(quiet, None, facts()).fired[:1]
    assert (created.source, created.target, created.silent) == (None, "Running", True)
    (created,) = step(compiled().job, None, facts()).fired[:1]
    assert created.silent is False


@pytest.mark.parametrize(("expression", "shown"), [("dyn(true)", "True"), ("dyn('10')", "'10'")])
def test_a_delay_that_is_not_a_number_or_a_duration_is_an_evaluation_error(
    expression: str, shown: str
) -> None:
    machine = _with_delays(expression, expression)
    message = f"of 'Running' gave {shown}, not a number of seconds or a duration"
    with pytest.raises(CelEvaluationError) as caught:
        requeue_after(machine, "Running", VARIABLES)  # type: ignore[arg-type]
    assert str(caught.value) == f"requeueAfter {message}"
    with pytest.raises(CelEvaluationError) as caught:
        state_timeout(machine, "Running", VARIABLES)  # type: ignore[arg-type]
    assert str(caught.value) == f"timeout {message}"


@pytest.mark.parametrize("literal", ["0", "0s", "0ms"])
def test_a_literal_timeout_of_zero_is_no_timeout_as_an_expression_giving_zero_is(
    literal: str,
) -> None:
    machine = _with_delays("30s", literal)
    assert state_timeout(machine, "Running", VARIABLES) is None  # type: ignore[arg-type]
    assert not machine.states["Running"].has_timeout  # type: ignore[attr-defined]
