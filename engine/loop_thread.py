"""An asyncio event loop in a thread of its own, for servers that a synchronous program runs
beside its other work (the embedded API server in tests and `up`, the web view)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")

_JOIN_S = 30.0


@contextmanager
def running_loop(
    name: str, *, new_loop: Callable[[], asyncio.AbstractEventLoop] = asyncio.new_event_loop,
) -> Iterator[asyncio.AbstractEventLoop]:
    """A loop (made by `new_loop`) running in a daemon thread named `name` for the `with`
    block; stopped, joined and closed after it (what runs on it must have been stopped
    first)."""
    loop = new_loop()
    thread = threading.Thread(target=loop.run_forever, name=name, daemon=True)
    thread.start()
    try:
        yield loop
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(_JOIN_S)
        loop.close()


def run_on(loop: asyncio.AbstractEventLoop, work: Awaitable[T], *, timeout_s: float,
           what: str) -> T:
    """Run `work` on `loop` from another thread and wait for its result; its exception is
    raised here, and a TimeoutError names `what` when it takes longer than `timeout_s`."""
    future = asyncio.run_coroutine_threadsafe(_awaited(work), loop)
    try:
        return future.result(timeout_s)
    except TimeoutError:
        future.cancel()
        raise TimeoutError(f"{what} did not finish within {timeout_s:g}s") from None


async def _awaited(work: Awaitable[T]) -> T:
    return await work
