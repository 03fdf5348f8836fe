"""The one pure function the controller calls: step an instance to its fixed point.

Given a compiled level, the current state and the facts (observations that
hold, CEL variables), `step` returns the new state, the transitions fired and
the actions to run, without side effects; the controller records the result
in status first and only then acts. Also the pure helpers the controller needs
around a step: when to look at an instance again (what a job's pods and
objects are made of is rendering.py's).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.definition.cel import Activation, CelEvaluationError
from engine.definition.compiled import (
    CompiledAction,
    CompiledMachine,
    CompiledTransition,
    StepContext,
    StepError,
)
from engine.definition.templates import TextTemplate


@dataclass(frozen=True)
class Facts:
    """What holds for one instance now: observations of its level and CEL variables."""

    observations: frozenset[str] = frozenset()
    variables: Mapping[str, Any] = field(default_factory=dict)
    consumed: Mapping[str, str] = field(default_factory=dict)
    """Observations that hold once (an event, such as a new end of a container): the
    transition that takes one uses it up, and the observation mapped to holds instead."""
    sharing: Activation | None = None
    """An activation whose converted values this step may reuse (see `Activation`)."""


@dataclass(frozen=True)
class FiredTransition:
    """One transition that fired; `source` is None for the creation of an instance."""

    source: str | None
    target: str
    reason: str
    message: str
    event_type: str
    self_loop: bool = False
    index: int | None = None  # the transition's 0-based position in the file; None on creation
    silent: bool = False  # posts no Event


@dataclass(frozen=True)
class PlannedAction:
    """An action to run, with rendered arguments and what asked for it."""

    name: str
    args: Mapping[str, Any]
    transition: int | None = None  # the transition whose `actions` listed it
    state: str | None = None  # or the state whose `onEnter` listed it


@dataclass(frozen=True)
class StepResult:
    state: str
    fired: tuple[FiredTransition, ...] = ()
    actions: tuple[PlannedAction, ...] = ()
    errors: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        """Whether the state changed (self-loops do not count)."""
        return any(not f.self_loop for f in self.fired)


class _Recorder:
    def __init__(self, facts: Facts) -> None:
        self.variables = Activation(facts.variables, sharing=facts.sharing)
        self.fired: list[FiredTransition] = []
        self.actions: list[PlannedAction] = []
        self.errors: list[str] = []

    def render(self, template: TextTemplate | None, default: str) -> str:
        if template is None:
            return default
        text, errors = template.render(self.variables)
        self.errors += errors
        return text

    def plan(self, actions: tuple[CompiledAction, ...], **origin: Any) -> None:
        for action in actions:
            args: dict[str, Any] = dict(action.literals)
            for name, expression in action.expressions.items():
                try:
                    args[name] = expression.evaluate(self.variables)
                except CelEvaluationError as exc:
                    self.errors.append(f"action {action.name} argument {name}: {exc}")
            for name, template in action.templates.items():
                args[name] = self.render(template, template.source)
            self.actions.append(PlannedAction(action.name, args, **origin))

    def transition(self, machine: CompiledMachine, fired: CompiledTransition, source: str) -> None:
        loop = fired.target == source
        message = self.render(fired.message, f"{source} -> {fired.target}")
        self.fired.append(FiredTransition(
            source, fired.target, fired.reason, message, fired.event_type, loop, fired.index,
            fired.silent,
        ))
        self.plan(fired.actions, transition=fired.index)
        if not loop:
            self.plan(machine.states[fired.target].on_enter, state=fired.target)


def step(machine: CompiledMachine, state: str | None, facts: Facts) -> StepResult:
    """Fire transitions from `state` until none fires, a self-loop fires, or a state with
    `onEnter` actions is entered: those take effect before the instance moves on, so a
    transition out of that state is considered on the next step."""
    recorder = _Recorder(facts)
    if state is None:
        state = machine.initial
        recorder.fired.append(FiredTransition(
            None, state, state, f"Created in {state}", "Normal"
        ))
        recorder.plan(machine.states[state].on_enter, state=state)
    elif state not in machine.states:
        raise StepError(f"unknown {machine.level} state {state!r}")
    observations = facts.observations & machine.observations
    context = StepContext(state, observations, recorder.variables)
    path = [state]
    while (fired := machine.fire(context)) is not None:
        recorder.transition(machine, fired, path[-1])
        if fired.on is not None and fired.on in facts.consumed:
            context.observations = (
                context.observations - {fired.on} | {facts.consumed[fired.on]}
            ) & machine.observations
        if fired.target == path[-1]:
            break
        path.append(fired.target)
        if machine.states[fired.target].on_enter:
            break
        if len(path) - 1 > len(machine.states) + 1:
            raise StepError(f"{machine.level} machine loops: {_loop(path)}")
    recorder.errors += context.errors
    return StepResult(
        path[-1], tuple(recorder.fired), tuple(recorder.actions), tuple(recorder.errors)
    )


def entry_actions(
    machine: CompiledMachine, state: str, facts: Facts
) -> tuple[tuple[PlannedAction, ...], tuple[str, ...]]:
    """The `onEnter` actions of `state`, rendered as on entry, and any rendering errors.

    The controller replays the idempotent ones while an instance stays in the
    state, so an action that failed once is carried out on a later pass.
    """
    recorder = _Recorder(facts)
    recorder.plan(machine.states[state].on_enter, state=state)
    return tuple(recorder.actions), tuple(recorder.errors)


def _loop(path: list[str]) -> str:
    """The repeating part of a state path, as `A -> B -> A`."""
    last = path[-1]
    start = path.index(last)
    return " -> ".join(path[start:])


def requeue_after(
    machine: CompiledMachine, state: str, variables: Mapping[str, Any]
) -> float | None:
    """Seconds after which the instance in `state` should be looked at again, if ever.

    Raises `CelEvaluationError` for an expression that fails or gives no delay.
    """
    compiled = machine.states[state]
    if compiled.requeue_expression is None:
        return compiled.requeue_seconds
    return _seconds(compiled.requeue_expression.evaluate(variables), "requeueAfter", state)


def state_timeout(
    machine: CompiledMachine, state: str, variables: Mapping[str, Any]
) -> float | None:
    """Seconds an instance may stay in `state` before `timedOut` holds; None: no timeout.

    An expression giving null, 0 or less turns the timeout off (e.g. a run-policy field
    that is not set). Raises `CelEvaluationError` for an expression that fails.
    """
    compiled = machine.states[state]
    if compiled.timeout_expression is None:
        return compiled.timeout_seconds
    value = compiled.timeout_expression.evaluate(variables)
    if value is None:
        return None
    seconds = _seconds(value, "timeout", state)
    return seconds if seconds > 0 else None


def _seconds(value: Any, field: str, state: str) -> float:
    if isinstance(value, datetime.timedelta):
        return max(value.total_seconds(), 0.0)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return max(float(value), 0.0)
    raise CelEvaluationError(
        f"{field} of {state!r} gave {value!r}, not a number of seconds or a duration"
    )
