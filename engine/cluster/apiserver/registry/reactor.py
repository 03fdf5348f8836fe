"""How the store's background duties (garbage collection, namespace and CRD cleanup, pod
grace periods) are scheduled: soon, or after a delay, on the server's event loop.

The duties never run inside the write that triggered them, so a DELETE answers
before its cascade starts, exactly as with a real API server, and tests can
drive the same duties step by step with a manual reactor and a fake clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

from loguru import logger

Task = Callable[[], None]


class Reactor(Protocol):
    """Runs tasks later on the thread that owns the store."""

    def soon(self, task: Task) -> None: ...

    def later(self, delay: float, task: Task) -> None: ...


class LoopReactor:
    """A reactor on an asyncio loop; a failing task is logged, never fatal to the server."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._log = logger.bind(component="apiserver.reactor")

    def soon(self, task: Task) -> None:
        self._loop.call_soon(self._run, task)

    def later(self, delay: float, task: Task) -> None:
        self._loop.call_later(max(0.0, delay), self._run, task)

    def _run(self, task: Task) -> None:
        try:
            task()
        except Exception:
            self._log.exception("background task {} failed", getattr(task, "__qualname__", task))
