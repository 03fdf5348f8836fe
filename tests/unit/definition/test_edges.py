"""The state graph of a machine: which states a transition leaves, which states are reached,
which observations hold together, and the loops a machine could take with nothing changing."""

from __future__ import annotations

import math

from engine.definition import load_text
from engine.definition.edges import (
    edges,
    expand_sources,
    guard_only_cycles,
    observation_sets,
    reachable,
)
from engine.definition.schema import MachineSpec
from engine.definition.vocabulary import observations_for
from tests.unit.definition.texts import document


def job_machine(states: str, transitions: str, *, initial: str = "Running") -> MachineSpec:
    text = (
        "  job:\n"
        f"    initial: {initial}\n"
        "    states:\n"
        "      Running: {}\n"
        "      Done: {terminal: success}\n"
        f"{states}"
        "    transitions:\n"
        f"{transitions}"
    )
    (loaded,) = load_text(document(job=text), "demo.yaml")
    machine = loaded.definition.spec.job
    assert machine is not None
    return machine


def test_a_transition_leaves_its_defined_non_terminal_sources_once_each_in_order() -> None:
    machine = job_machine(
        "      Waiting: {}\n",
        "      - {from: [Waiting, Done, Ghost, Running, Waiting], to: Done}\n",
    )
    assert expand_sources(machine, machine.transitions[0]) == ["Waiting", "Running"]


def test_a_transition_to_an_undefined_state_makes_no_edge_and_hides_none_after_it() -> None:
    machine = job_machine(
        "      Waiting: {}\n",
        "      - {from: Running, to: Ghost}\n"
        "      - {from: Running, to: Waiting}\n"
        "      - {from: Waiting, to: Done}\n",
    )
    assert list(edges(machine)) == [("Running", "Waiting", 1), ("Waiting", "Done", 2)]
    assert reachable(machine) == {"Running", "Waiting", "Done"}


def test_with_an_undefined_initial_state_every_state_counts_as_reached() -> None:
    machine = job_machine("", "      - {from: Running, to: Done}\n", initial="Ghost")
    assert reachable(machine) == {"Running", "Done"}


def test_each_maximal_observation_set_takes_one_of_each_exclusive_group_and_every_free_one(
) -> None:
    for level in ("job", "replica"):
        observations = observations_for(level)
        groups: dict[str, set[str]] = {}
        for name, o in observations.items():
            if o.group is not None:
                groups.setdefault(o.group, set()).add(name)
        free = {name for name, o in observations.items() if o.group is None}
        sets = observation_sets(level)
        assert len(sets) == math.prod(len(g) for g in groups.values())
        for s in sets:
            assert free <= s
            assert all(len(s & g) == 1 for g in groups.values())


def test_a_loop_is_named_from_where_it_begins_not_from_the_state_that_led_into_it() -> None:
    machine = job_machine(
        "      A: {}\n      B: {}\n",
        "      - {from: Running, to: A}\n      - {from: A, to: B}\n      - {from: B, to: A}\n",
    )
    (cycle,) = guard_only_cycles(machine, "job")
    assert (cycle.states, cycle.transitions) == (("A", "B"), (1, 2))


def test_each_distinct_loop_is_found_once_with_the_observations_it_needs() -> None:
    machine = job_machine(
        "      A: {}\n      B: {}\n      C: {}\n",
        "      - {from: Running, to: Done, actions: [restartJob]}\n"
        "      - {from: Running, to: A, \"on\": settled}\n"
        "      - {from: A, to: Running}\n"
        "      - {from: B, to: C}\n"
        "      - {from: C, to: B}\n",
    )
    cycles = {c.states: c for c in guard_only_cycles(machine, "job")}
    assert set(cycles) == {("Running", "A"), ("B", "C")}
    assert "settled" in cycles[("Running", "A")].observations
    assert all(cycles[("B", "C")].observations in observation_sets("job") for _ in [0])


def test_a_transition_that_restarts_the_job_breaks_a_loop_but_no_other() -> None:
    machine = job_machine(
        "      A: {}\n",
        "      - {from: A, to: Running, actions: [restartJob]}\n"
        "      - {from: Running, to: A}\n"
        "      - {from: A, to: Running}\n",
    )
    (cycle,) = guard_only_cycles(machine, "job")
    assert set(cycle.states) == {"Running", "A"} and 0 not in cycle.transitions


def test_a_loop_among_states_listed_after_a_searched_dead_end_is_found() -> None:
    machine = job_machine(
        "      P: {}\n      B: {}\n      C: {}\n",
        "      - {from: Running, to: P}\n"
        "      - {from: P, to: Done, \"on\": settled}\n"
        "      - {from: B, to: C}\n"
        "      - {from: C, to: B}\n",
    )
    assert [c.states for c in guard_only_cycles(machine, "job")] == [("B", "C")]
