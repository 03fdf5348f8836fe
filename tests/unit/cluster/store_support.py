"""A store driven by hand for unit tests: a manual reactor and a clock that moves when told."""

from __future__ import annotations

import heapq
import itertools
from typing import Any

from engine.cluster.apiserver.core import Core, open_core
from engine.cluster.apiserver.registry.builtins import NAMESPACES
from engine.cluster.apiserver.registry.reactor import Task


class ManualReactor:
    """Runs scheduled tasks only when `run` is called, in order, with a fake clock."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0
        self._queue: list[tuple[float, int, Task]] = []
        self._counter = itertools.count()

    def clock(self) -> float:
        return self.now

    def soon(self, task: Task) -> None:
        heapq.heappush(self._queue, (self.now, next(self._counter), task))

    def later(self, delay: float, task: Task) -> None:
        heapq.heappush(self._queue, (self.now + max(0.0, delay), next(self._counter), task))

    def run(self) -> None:
        """Run every task that is due, including those the tasks schedule."""
        while self._queue and self._queue[0][0] <= self.now:
            heapq.heappop(self._queue)[2]()

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self.run()


def make_core(reactor: ManualReactor, **kwargs: Any) -> Core:
    core = open_core(reactor, clock=reactor.clock, **kwargs)
    reactor.run()
    return core


def namespace(core: Core, name: str) -> None:
    core.store.create(NAMESPACES, "", {"metadata": {"name": name}})
