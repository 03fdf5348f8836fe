"""Steps remembered by their outcomes (remembered_steps.py, the model checker's): a step taken
before with the same outcomes is replayed, not run, and gives what running it gives; a new
outcome of a guard, another state, observations, consumed observations, machine or withheld
observations runs the step again; without remembered values nothing is remembered."""

from __future__ import annotations

from collections.abc import Callable

from engine.definition import Facts, StepResult
from engine.definition.cel import remembering_values
from engine.definition.compiled import CompiledMachine
from engine.definition.remembered_steps import RememberedSteps
from engine.definition.step import _step
from tests.unit.definition.test_step import REPLICA, compiled, facts

MACHINE = compiled().replica
OTHER = compiled(REPLICA.replace("reason: Started", "reason: Begun")).replica


class Counted:
    """`_step`, counting its runs."""

    def __init__(self) -> None:
        self.runs = 0

    def __call__(self, machine: CompiledMachine, state: str | None, facts: Facts) -> StepResult:
        self.runs += 1
        return _step(machine, state, facts)


def taken(steps: list[tuple[CompiledMachine, str | None, Facts]]) -> tuple[int, list[StepResult]]:
    """Each step in turn through one memory: how many ran, and what each gave."""
    memory, run = RememberedSteps(), Counted()
    with remembering_values():
        results = [memory.step(machine, state, facts, run) for machine, state, facts in steps]
    return run.runs, results


def afresh(steps: list[tuple[CompiledMachine, str | None, Facts]]) -> list[StepResult]:
    return [_step(machine, state, facts) for machine, state, facts in steps]


def test_a_step_taken_again_is_replayed_as_it_was() -> None:
    steps = [(MACHINE, "Running", facts("podFailed"))] * 3
    runs, results = taken(steps)
    assert runs == 1
    assert results == afresh(steps)
    assert results[0].state == "Restarting"


def test_a_new_outcome_of_a_guard_runs_the_step_and_both_are_remembered() -> None:
    exit_one = facts("podFailed", pod={"exitCode": 1})
    steps = [(MACHINE, "Running", facts("podFailed")), (MACHINE, "Running", exit_one)] * 2
    runs, results = taken(steps)
    assert runs == 2
    assert results == afresh(steps)
    assert [r.state for r in results] == ["Restarting", "Failed"] * 2


def test_another_state_observation_consumed_observation_or_machine_is_another_step() -> None:
    consumed = Facts(frozenset({"podRunning"}), facts().variables, {"podRunning": "podPending"})
    steps = [(MACHINE, "Pending", facts("podRunning")), (MACHINE, "Running", facts("podRunning")),
             (MACHINE, "Pending", facts("podSucceeded")), (MACHINE, "Pending", consumed),
             (OTHER, "Pending", facts("podRunning")), (MACHINE, None, facts("podRunning"))]
    runs, results = taken(steps + steps)
    assert runs == len(steps)
    assert results == afresh(steps + steps)
    assert results[0].fired[0].reason == "Started" and results[4].fired[0].reason == "Begun"


def withholding(held: frozenset[str], asked: list[int]) -> Callable[..., frozenset[str]]:
    def withheld(replays: tuple[object, ...]) -> frozenset[str]:
        asked.append(len(replays))
        return held
    return withheld


def test_what_is_withheld_is_asked_on_each_replay_and_a_new_answer_runs_the_step() -> None:
    asked: list[int] = []
    nothing = Facts(frozenset({"podMissing"}), facts().variables,
                    withheld=withholding(frozenset(), asked))
    missing = Facts(frozenset({"podMissing"}), facts().variables,
                    withheld=withholding(frozenset({"podMissing"}), asked))
    plain = facts("podMissing")
    steps = [(MACHINE, "Restarting", nothing), (MACHINE, "Restarting", missing),
             (MACHINE, "Restarting", plain)]
    runs, results = taken(steps + steps)
    assert runs == 3
    assert [(r.state, r.withheld) for r in results] == [
        ("Pending", frozenset()), ("Restarting", frozenset({"podMissing"})),
        ("Pending", frozenset())] * 2
    assert results == [_step(m, s, f) for m, s, f in steps + steps]
    # The first run; the second's replay, then its run (a new answer); two replays; afresh.
    assert len(asked) == 1 + 2 + 2 + 4
    assert asked[0] == 1  # Restarting replays its deletePod


def test_without_remembered_values_every_step_runs() -> None:
    memory, run = RememberedSteps(), Counted()
    steps = [(MACHINE, "Running", facts("podFailed"))] * 2
    assert [memory.step(m, s, f, run) for m, s, f in steps] == afresh(steps)
    assert run.runs == 2
