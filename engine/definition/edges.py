"""The state graph a machine's transitions define: sources, reachability, guard-only cycles.

`from: "*"` and lists are expanded here once, so the checks, the compiler and
the step function agree on which transitions leave which state. The cycle
search is what makes the step's fixed-point bound unreachable in practice.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

from engine.definition.schema import MachineSpec, TransitionSpec
from engine.definition.vocabulary import WORLD_RESETTING_ACTIONS, Level, observations_for

WILDCARD = "*"


def non_terminal_states(machine: MachineSpec) -> list[str]:
    return [name for name, state in machine.states.items() if state.terminal is None]


def expand_sources(machine: MachineSpec, transition: TransitionSpec) -> list[str]:
    """The non-terminal states a transition leaves from, in the order written, once each.

    Undefined and terminal states are left out: the checks report them, and a
    terminal state has no transitions out whatever a definition says.
    """
    if transition.is_wildcard:
        return non_terminal_states(machine)
    states = machine.states
    return [s for s in dict.fromkeys(transition.source) if s in states and not states[s].terminal]


def edges(machine: MachineSpec) -> Iterator[tuple[str, str, int]]:
    """(source, target, transition index) for every defined state change."""
    for index, transition in enumerate(machine.transitions):
        if transition.to not in machine.states:
            continue
        for source in expand_sources(machine, transition):
            if source != transition.to:
                yield source, transition.to, index


def reachable(machine: MachineSpec) -> set[str]:
    """States reachable from the initial state, guards and observations ignored."""
    if machine.initial not in machine.states:
        return set(machine.states)
    successors: dict[str, set[str]] = {}
    for source, target, _ in edges(machine):
        successors.setdefault(source, set()).add(target)
    seen, todo = {machine.initial}, [machine.initial]
    while todo:
        for target in successors.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def _groups(level: Level) -> tuple[dict[str, list[str]], list[str]]:
    """The level's observations: exclusive groups, and the ungrouped ones."""
    grouped: dict[str, list[str]] = {}
    free: list[str] = []
    for name, observation in observations_for(level).items():
        if observation.group is None:
            free.append(name)
        else:
            grouped.setdefault(observation.group, []).append(name)
    return grouped, free


def observation_sets(level: Level) -> list[frozenset[str]]:
    """Every maximal set of the level's observations that can hold at the same time."""
    grouped, free = _groups(level)
    return [frozenset((*choice, *free)) for choice in itertools.product(*grouped.values())]


def possible_observation_sets(level: Level) -> list[frozenset[str]]:
    """Every set of the level's observations that can hold at the same time (even empty)."""
    grouped, free = _groups(level)
    choices = [[(name,) for name in names] + [()] for names in grouped.values()]
    subsets = [c for n in range(len(free) + 1) for c in itertools.combinations(free, n)]
    return [
        frozenset(itertools.chain(*choice, subset))
        for choice in itertools.product(*choices)
        for subset in subsets
    ]


@dataclass(frozen=True)
class Cycle:
    """States that could follow each other forever under one set of observations."""

    states: tuple[str, ...]  # in order; the first state follows the last
    transitions: tuple[int, ...]  # the transition taken out of each state
    observations: frozenset[str]


def guard_only_cycles(machine: MachineSpec, level: Level) -> list[Cycle]:
    """One cycle per distinct loop the machine could take without the world changing."""
    found: dict[frozenset[str], Cycle] = {}
    for observations in observation_sets(level):
        graph: dict[str, list[tuple[str, int]]] = {}
        for source, target, index in edges(machine):
            transition = machine.transitions[index]
            if any(a.name in WORLD_RESETTING_ACTIONS for a in transition.actions):
                continue
            on = transition.on
            if on is None or on in observations:
                graph.setdefault(source, []).append((target, index))
        for cycle in _cycles(graph, list(machine.states), observations):
            found.setdefault(frozenset(cycle.states), cycle)
    return list(found.values())


def _cycles(
    graph: dict[str, list[tuple[str, int]]], order: list[str], observations: frozenset[str]
) -> Iterator[Cycle]:
    """Cycles met searching from each state in turn (every looping part yields one)."""
    done: set[str] = set()
    for start in order:
        if start in done:
            continue
        path: list[tuple[str, int]] = []
        on_path: dict[str, int] = {}
        cycle = _search(graph, start, path, on_path, done)
        if cycle is not None:
            states = tuple(state for state, _ in cycle)
            yield Cycle(states, tuple(index for _, index in cycle), observations)


def _search(
    graph: dict[str, list[tuple[str, int]]],
    state: str,
    path: list[tuple[str, int]],
    on_path: dict[str, int],
    done: set[str],
) -> list[tuple[str, int]] | None:
    """Depth-first search from `state`; the first cycle met, as (state, transition out)."""
    on_path[state] = len(path)
    for target, index in graph.get(state, []):
        path.append((state, index))
        if target in on_path:
            return path[on_path[target] :]
        if target not in done:
            cycle = _search(graph, target, path, on_path, done)
            if cycle is not None:
                return cycle
        path.pop()
    del on_path[state]
    done.add(state)
    return None
