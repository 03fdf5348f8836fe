"""Property tests: random small machines reach a fixed point unless validation calls them
cyclic, and the transitions fired are those a tiny reference interpreter picks."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.definition import Facts, StepError, compile_definition, load_text, step
from engine.definition.edges import guard_only_cycles
from tests.unit.definition.texts import JOB, document

OPERATORS = {">": operator.gt, "<": operator.lt, "==": operator.eq}
OBSERVATIONS = (None, "podRunning", "podFailed", "timedOut")


@dataclass(frozen=True)
class Transition:
    sources: tuple[str, ...] | None  # None: "*"
    target: str
    on: str | None
    guard: tuple[str, int] | None  # `restarts OP K`


@dataclass(frozen=True)
class Machine:
    states: tuple[str, ...]
    terminal: frozenset[str]
    transitions: tuple[Transition, ...]

    def yaml(self) -> str:
        lines = ["  replica:", f"    initial: {self.states[0]}", "    states:"]
        for name in self.states:
            lines.append(f"      {name}: {{terminal: success}}" if name in self.terminal
                         else f"      {name}: {{}}")
        lines.append("    transitions:" if self.transitions else "    transitions: []")
        for t in self.transitions:
            parts = [f"from: {'[' + ', '.join(t.sources) + ']' if t.sources else repr('*')}",
                     f"to: {t.target}"]
            if t.on is not None:
                parts.append(f"\"on\": {t.on}")
            if t.guard is not None:
                parts.append(f'when: "restarts {t.guard[0]} {t.guard[1]}"')
            lines.append("      - {" + ", ".join(parts) + "}")
        return "\n".join(lines) + "\n"


@st.composite
def machines(draw: Any) -> Machine:
    count = draw(st.integers(2, 5))
    states = tuple(f"S{i}" for i in range(count))
    terminal = frozenset(draw(st.sets(st.sampled_from(states[1:]))))
    movable = [s for s in states if s not in terminal]
    transitions = []
    for _ in range(draw(st.integers(0, 8))):
        wildcard = draw(st.booleans()) and draw(st.booleans())
        sources = None if wildcard else tuple(draw(st.lists(
            st.sampled_from(movable), min_size=1, max_size=2, unique=True
        )))
        guard = draw(st.one_of(st.none(), st.tuples(st.sampled_from(sorted(OPERATORS)),
                                                      st.integers(0, 4))))
        transitions.append(Transition(sources, draw(st.sampled_from(states)),
                                      draw(st.sampled_from(OBSERVATIONS)), guard))
    return Machine(states, terminal, tuple(transitions))


@st.composite
def facts(draw: Any) -> tuple[frozenset[str], int]:
    pod = draw(st.sampled_from([None, "podRunning", "podFailed", "podPending"]))
    held = {pod} if pod else set()
    if draw(st.booleans()):
        held.add("timedOut")
    return frozenset(held), draw(st.integers(0, 5))


def reference(machine: Machine, state: str, observations: frozenset[str], restarts: int
              ) -> tuple[str, list[int]] | None:
    """The language's semantics, directly: None when the bound is exceeded."""
    fired: list[int] = []
    movable = [s for s in machine.states if s not in machine.terminal]
    for _ in range(len(machine.states) + 2):
        for index, t in enumerate(machine.transitions):
            sources = movable if t.sources is None else [s for s in t.sources if s in movable]
            if state not in sources or (t.on is not None and t.on not in observations):
                continue
            if t.guard is not None and not OPERATORS[t.guard[0]](restarts, t.guard[1]):
                continue
            fired.append(index)
            if t.target == state:
                return state, fired
            state = t.target
            break
        else:
            return state, fired
    return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(machine=machines(), start=st.integers(0, 4), held=facts())
def test_fixed_point_unless_cyclic_and_first_match_wins(
    machine: Machine, start: int, held: tuple[frozenset[str], int]
) -> None:
    (loaded,) = load_text(document(job=JOB, replica=machine.yaml()), "random.yaml")
    compiled = compile_definition(loaded)
    cyclic = bool(guard_only_cycles(loaded.definition.spec.replica, "replica"))
    observations, restarts = held
    state = machine.states[start % len(machine.states)]
    expected = reference(machine, state, observations, restarts)
    try:
        result = step(compiled.replica, state, Facts(observations, {"restarts": restarts}))
    except StepError:
        assert cyclic, "a machine validation accepts must reach a fixed point"
        assert expected is None
        return
    assert expected is not None
    assert (result.state, [f.index for f in result.fired]) == expected
    assert result.errors == ()


@settings(max_examples=100, deadline=None)
@given(machine=machines(), held=facts())
def test_a_new_instance_starts_in_the_initial_state(
    machine: Machine, held: tuple[frozenset[str], int]
) -> None:
    (loaded,) = load_text(document(job=JOB, replica=machine.yaml()), "random.yaml")
    observations, restarts = held
    try:
        result = step(compile_definition(loaded).replica, None,
                      Facts(observations, {"restarts": restarts}))
    except StepError:
        assert guard_only_cycles(loaded.definition.spec.replica, "replica")
        return
    assert result.fired[0].source is None
    assert result.fired[0].target == machine.states[0]
