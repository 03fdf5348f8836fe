"""Which shapes each of check's workers explores (`workers.py`): a worker stays on the
machine whose memories it warmed while that machine has shapes left, and the results come
back in the order of the tasks whoever made them."""

from __future__ import annotations

from engine.modelcheck.workers import _Plan, explore_by_machine


def test_a_worker_stays_on_its_machine_heaviest_shape_first() -> None:
    plan = _Plan(["tf", "tf", "mpi", "tf", "mpi"], [1, 4, 2, 3, 1])
    first = plan.next_for(None)
    assert first == 1  # tf: the most weight left (8 against 3), its heaviest shape
    plan.done(100, first)
    assert plan.next_for(100) == 3  # tf again, though mpi's 2 is heavier than tf's 1
    plan.done(100, 3)
    assert plan.next_for(100) == 0
    plan.done(100, 0)
    assert plan.next_for(100) == 2  # tf spent: a machine no worker started, heaviest first
    assert plan.next_for(100) == 4
    assert plan.next_for(100) is None


def test_a_second_worker_starts_another_machine_until_every_one_is_started() -> None:
    plan = _Plan(["tf", "tf", "tf", "mpi", "jax"], [4, 4, 4, 2, 1])
    assert plan.next_for(None) == 0
    assert plan.next_for(None) == 3  # not tf's next shape: mpi is not started
    plan.done(200, 3)
    assert plan.next_for(200) == 4  # mpi spent: jax, still not started
    plan.done(200, 4)
    assert plan.next_for(200) == 1  # every machine started: the heaviest left, tf's


def test_a_worker_goes_back_to_a_machine_it_warmed_before_a_fresh_one() -> None:
    plan = _Plan(["tf", "mpi", "mpi", "jax"], [4, 2, 2, 1])
    for handed in (1, 0):  # this worker explored an mpi shape, then the tf one
        plan.left[plan.machines[handed]].remove(handed)
        plan.started.add(plan.machines[handed])
        plan.done(300, handed)
    assert plan.next_for(300) == 2  # mpi, warm here, before jax, which no worker started
    assert plan.next_for(300) == 3


def _square(task: int) -> int:
    return task * task


def test_results_come_back_in_the_order_of_the_tasks() -> None:
    tasks = [5, 1, 4, 2, 3, 6]
    found = explore_by_machine(tasks, _square, jobs=2, machines=["a", "b", "a", "b", "a", "c"],
                               weights=[1, 9, 2, 8, 3, 1])
    assert found == [25, 1, 16, 4, 9, 36]
