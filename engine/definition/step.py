"""The one pure function the controller calls: step an instance to its fixed point.

Given a compiled level, the current state and the facts (observations that
hold, CEL variables), `step` returns the new state, the transitions fired, the
actions to run and, for an instance that stays in its state, the actions it
replays there, without side effects: one step per instance is all a decision
needs. The controller records the result in status first and only then acts.
Also the pure helpers the controller needs around a step: when to look at an
instance again (what a job's pods and objects are made of is rendering.py's).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

from engine.definition.cel import Activation, CelEvaluationError
from engine.definition.compiled import (
    CompiledAction,
    CompiledMachine,
    CompiledTransition,
    StepContext,
    StepError,
)
from engine.definition.templates import TextTemplate
from engine.definition.vocabulary import REPLAYABLE_ACTIONS, WORLD_RESETTING_ACTIONS


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
    withheld: Callable[[tuple[PlannedAction, ...]], frozenset[str]] | None = None
    """Which of `observations` do not hold after all, given what the instance replays if it
    stays in the state it starts in (nothing for a new instance): the job is not `settled`
    while a replayed clean-up still has pods to delete. Asked once, before anything fires."""


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
    """Everything one step decided for an instance, for the caller to apply as it is."""

    state: str
    fired: tuple[FiredTransition, ...] = ()
    actions: tuple[PlannedAction, ...] = ()
    errors: tuple[str, ...] = ()
    replays: tuple[PlannedAction, ...] = ()
    """When the instance ends the step in the state it started from: the replayable
    `onEnter` actions of that state, planned again, so that one whose carrying out failed
    (the API server was away) is done on a later pass. Empty for an instance that ends
    elsewhere or was created."""
    replay_errors: tuple[str, ...] = ()
    """The errors rendering that state's `onEnter` actions for `replays`, replayable or not."""
    withheld: frozenset[str] = frozenset()
    """The observations `Facts.withheld` withheld from this step."""

    @property
    def changed(self) -> bool:
        """Whether the state changed (self-loops do not count)."""
        return any(not f.self_loop for f in self.fired)


class _Recorder:
    def __init__(self, variables: Activation) -> None:
        self.variables = variables
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


@dataclass
class _Stay:
    """What an instance replays if it stays in the state it starts a step in (`None`: a new
    instance, which replays nothing); rendered once, when first asked for."""

    machine: CompiledMachine
    state: str | None
    variables: Activation

    @cached_property
    def replays(self) -> tuple[tuple[PlannedAction, ...], tuple[str, ...]]:
        """The state's replayable `onEnter` actions, rendered as on entry, and the errors
        rendering all of its `onEnter` actions."""
        if self.state is None:
            return (), ()
        recorder = _Recorder(self.variables)
        recorder.plan(self.machine.states[self.state].on_enter, state=self.state)
        replayable = tuple(a for a in recorder.actions if a.name in REPLAYABLE_ACTIONS)
        return replayable, tuple(recorder.errors)


class StepMemory(Protocol):
    """Steps taken before, replayed when their expressions have the same outcomes: the model
    checker plugs one in (`engine.definition.remembered_steps`); the engine never does."""

    def step(self, machine: CompiledMachine, state: str | None, facts: Facts,
             run: Callable[[CompiledMachine, str | None, Facts], StepResult]) -> StepResult:
        """`run(machine, state, facts)`'s result, replayed when it is known."""
        ...


STEP_MEMORY: ContextVar[StepMemory | None] = ContextVar("step_memory", default=None)
"""The step memory in force in this context (set by `remembering_steps`), or None."""


def step(machine: CompiledMachine, state: str | None, facts: Facts) -> StepResult:
    """`_step`, or within `remembering_steps` (the model checker), its result replayed when
    it was taken before with the same outcomes."""
    remembered = STEP_MEMORY.get()
    if remembered is not None:
        return remembered.step(machine, state, facts, _step)
    return _step(machine, state, facts)


def _step(machine: CompiledMachine, state: str | None, facts: Facts) -> StepResult:
    """Fire transitions from `state` until none fires, a self-loop fires, a state with
    `onEnter` actions is entered, or a transition resets the world (`restartJob`): those
    actions take effect before the instance moves on, so a transition out of that state is
    considered on the next step, against the world they made.

    An instance that ends in the state it started in replays that state's replayable
    `onEnter` actions (`StepResult.replays`)."""
    recorder = _Recorder(Activation(facts.variables, sharing=facts.sharing))
    stay = _Stay(machine, state, recorder.variables)
    if state is None:
        state = _create(machine, recorder)
    elif state not in machine.states:
        raise StepError(f"unknown {machine.level} state {state!r}")
    withheld = frozenset() if facts.withheld is None else facts.withheld(stay.replays[0])
    final = _fire(machine, state, facts.observations - withheld, facts.consumed, recorder)
    replays, replay_errors = stay.replays if final == stay.state else ((), ())
    return StepResult(
        final, tuple(recorder.fired), tuple(recorder.actions), tuple(recorder.errors),
        replays, replay_errors, withheld,
    )


def replays(machine: CompiledMachine, state: str, variables: Mapping[str, Any]
            ) -> tuple[tuple[PlannedAction, ...], tuple[str, ...]]:
    """What an instance that stays in `state` replays (as `StepResult.replays`) and the
    errors rendering it, without stepping the instance: for one that is not stepped (the
    replicas of a job that holds them)."""
    return _Stay(machine, state, Activation(variables)).replays


def _create(machine: CompiledMachine, recorder: _Recorder) -> str:
    """Record the creation of an instance in the initial state; that state."""
    state = machine.initial
    recorder.fired.append(FiredTransition(None, state, state, f"Created in {state}", "Normal",
                                          silent=not machine.creation_event))
    recorder.plan(machine.states[state].on_enter, state=state)
    return state


def _fire(
    machine: CompiledMachine,
    state: str,
    observations: frozenset[str],
    consumed: Mapping[str, str],
    recorder: _Recorder,
) -> str:
    """Fire transitions from `state` as `step` says, recording them; the state reached."""
    context = StepContext(state, observations & machine.observations, recorder.variables)
    path = [state]
    while (fired := machine.fire(context)) is not None:
        recorder.transition(machine, fired, path[-1])
        if fired.on is not None and fired.on in consumed:
            context.observations = (
                context.observations - {fired.on} | {consumed[fired.on]}
            ) & machine.observations
        if fired.target == path[-1]:
            break
        path.append(fired.target)
        if machine.states[fired.target].on_enter or any(
                action.name in WORLD_RESETTING_ACTIONS for action in fired.actions):
            break
        if len(path) - 1 > len(machine.states) + 1:
            raise StepError(f"{machine.level} machine loops: {_loop(path)}")
    recorder.errors += context.errors
    return path[-1]


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
