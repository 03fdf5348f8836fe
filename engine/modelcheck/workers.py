"""Job shapes explored in worker processes, each worker kept on one machine while it has
shapes left.

A worker remembers, per machine, the values, steps and replica summaries it worked out
(`check._MEMORY`, by content), so the first shapes of a machine cost it more than the
rest. Handed out in one list, heaviest first, every machine's shapes were spread over
every worker, and each worker warmed each machine's memories again (TFJob alone: about
2 s more CPU with two workers than with one). Here a worker is handed the heaviest shape
left of the machine it explored last, or of one it explored before; with none left, the
heaviest shape of a machine no worker has started (the machine with the most weight left
first); only when every machine is started does it take the heaviest shape left of
another worker's, so no worker idles while shapes wait. Which worker explores a shape
changes nothing of its result (what is remembered is keyed by content), and the results
come back in the order of the tasks.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def explore_by_machine(tasks: Sequence[T], run: Callable[[T], R], *, jobs: int,
                       machines: Sequence[Hashable], weights: Sequence[int]) -> list[R]:
    """`run` of every task, in `jobs` worker processes, in the order of `tasks`. `run`
    must be a module-level function (it is sent to the workers by name); each task's
    entry of `machines` says which memories it warms, of `weights` how long it may take."""
    plan = _Plan(list(machines), list(weights))
    results: dict[int, R] = {}
    with ProcessPoolExecutor(min(jobs, len(tasks))) as pool:
        # One task in flight per worker: the worker that returns one is the only idle
        # one, so the task submitted next is the one chosen for it.
        running: dict[Future[tuple[int, R]], int] = {}
        for _ in range(min(jobs, len(tasks))):
            first = plan.next_for(None)
            if first is not None:
                running[pool.submit(_run_here, run, tasks[first])] = first
        while running:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                index = running.pop(future)
                worker, results[index] = future.result()
                plan.done(worker, index)
                following = plan.next_for(worker)
                if following is not None:
                    running[pool.submit(_run_here, run, tasks[following])] = following
    return [results[index] for index in range(len(tasks))]


def _run_here(run: Callable[[T], R], task: T) -> tuple[int, R]:
    """In a worker: the result, with which worker made it (its process id)."""
    return os.getpid(), run(task)


class _Plan:
    """Which task each worker takes next (the module's docstring says how)."""

    def __init__(self, machines: list[Hashable], weights: list[int]) -> None:
        self.machines = machines
        self.weights = weights
        self.left: dict[Hashable, list[int]] = {}
        """Each machine's tasks not handed out yet, heaviest first (ties in task order)."""
        for index in sorted(range(len(machines)), key=lambda i: -weights[i]):
            self.left.setdefault(machines[index], []).append(index)
        self.started: set[Hashable] = set()
        self.warm: dict[int, list[Hashable]] = {}
        """Per worker, the machines it explored, the last one last."""

    def done(self, worker: int, index: int) -> None:
        machines = self.warm.setdefault(worker, [])
        machine = self.machines[index]
        if machine in machines:
            machines.remove(machine)
        machines.append(machine)

    def next_for(self, worker: int | None) -> int | None:
        """The task for `worker` (None: one not known yet); None when none is left."""
        warm = [m for m in reversed(self.warm.get(worker, []) if worker is not None else [])
                if self.left.get(m)]
        fresh = [m for m, tasks in self.left.items() if tasks and m not in self.started]
        any_left = [m for m, tasks in self.left.items() if tasks]
        if warm:
            machine = warm[0]
        elif fresh:
            machine = max(fresh, key=lambda m: sum(self.weights[i] for i in self.left[m]))
        elif any_left:
            machine = max(any_left, key=lambda m: self.weights[self.left[m][0]])
        else:
            return None
        self.started.add(machine)
        return self.left[machine].pop(0)
