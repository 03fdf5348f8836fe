"""Steps remembered by what they evaluated, for the model checker (switched on only there).

A step is a function of the machine, the state, the observations and what each expression
it evaluates gives: which transition fires, what is rendered and planned all follow from
those values. So a step taken before is replayed by evaluating the same expressions in the
same order (each answered by `RememberedValues`) and following the outcomes down a tree of
the steps seen; only a new outcome runs the step itself. What is skipped is the stepping
(`transitions` dispatch, rendering, planning): every value is still the engine's.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from engine.definition.cel import (
    Activation,
    CompiledExpression,
    RememberedValues,
    Tape,
    remembered_values,
)
from engine.definition.step import STEP_MEMORY, Facts, PlannedAction, StepResult

if TYPE_CHECKING:
    from engine.definition.compiled import CompiledMachine

Stepper = Callable[["CompiledMachine", "str | None", "Facts"], "StepResult"]


class _Node:
    """A point of a remembered step: what it asks next (an expression, or which of its
    observations are withheld given what it replays), or the step's result."""

    __slots__ = ("asks", "next", "result")

    def __init__(self) -> None:
        self.asks: CompiledExpression | tuple[PlannedAction, ...] | None = None
        self.next: dict[Hashable, _Node] = {}
        self.result: StepResult | None = None


class RememberedSteps:
    """The steps taken so far, as trees of outcomes under each (machine, state,
    observations) they started from."""

    def __init__(self) -> None:
        self._roots: dict[Hashable, tuple[CompiledMachine, _Node]] = {}

    def step(self, machine: CompiledMachine, state: str | None, facts: Facts,
             run: Stepper) -> StepResult:
        """What `run(machine, state, facts)` gives, replayed when the step was taken
        before with the same outcomes."""
        values = remembered_values()
        if values is None:
            return run(machine, state, facts)
        key = (id(machine), state, facts.observations, tuple(facts.consumed.items()),
               facts.withheld is None)
        root = self._roots.get(key)
        node = None if root is None else self._replay(root[1], facts, values)
        if node is not None and node.result is not None:
            return node.result
        tape = Tape()
        with values.recording(tape):
            result = run(machine, state, _withheld_on(tape, facts))
        if root is None:
            root = self._roots[key] = (machine, _Node())  # the machine stays alive with its id
        _remember(root[1], tape.outcomes, result)
        return result

    @staticmethod
    def _replay(node: _Node, facts: Facts, values: RememberedValues) -> _Node | None:
        """The node the step's outcomes lead to from `node` (a result), or None at a new
        outcome."""
        activation = Activation(facts.variables, sharing=facts.sharing)
        while node.result is None:
            asks = node.asks
            if isinstance(asks, CompiledExpression):
                outcome = values.outcome(asks, activation)
            elif facts.withheld is not None and asks is not None:
                outcome = facts.withheld(asks)
            else:
                return None
            found = node.next.get(outcome)
            if found is None:
                return None
            node = found
        return node


def _withheld_on(tape: Tape, facts: Facts) -> Facts:
    """`facts` whose `withheld` also goes on the tape."""
    withheld = facts.withheld
    if withheld is None:
        return facts

    def noted(replays: tuple[PlannedAction, ...]) -> frozenset[str]:
        found = withheld(replays)
        tape.outcomes.append((replays, found))
        return found

    return replace(facts, withheld=noted)


def _remember(root: _Node, outcomes: list[tuple[Any, Hashable]], result: StepResult) -> None:
    """Put the step's path into the tree; a path that disagrees with one there (it cannot,
    for a step is a function of its outcomes) is left out."""
    node = root
    for asks, outcome in outcomes:
        if node.result is not None or (node.asks is not None and node.asks is not asks
                                       and node.asks != asks):
            return
        node.asks = asks
        node = node.next.setdefault(outcome, _Node())
    if node.asks is None and not node.next:
        node.result = result


@contextmanager
def remembering_steps(remembered: RememberedSteps | None = None) -> Iterator[None]:
    """Within this block (with `remembering_values` on), steps taken before with the same
    outcomes are replayed (`RememberedSteps`): `remembered`, to go on with one kept from
    an earlier block, else a new one."""
    token = STEP_MEMORY.set(remembered or RememberedSteps())
    try:
        yield
    finally:
        STEP_MEMORY.reset(token)
