"""Worker threads that take keys from the queue, call the handler, and act on its outcome.

The loop knows nothing of jobs: a handler returns one `Outcome` (done, look again after,
retry with back-off, or terminal) and the loop turns it into queue calls. A handler that
raises is retried with back-off, never crashes its worker, never requeues at once. An API
server that cannot be reached (`Unavailable`) is a plain Retry, without a traceback, and
logged at DEBUG while the outage lasts: the client's `ApiHealth` has said so once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TypeVar, assert_never

from loguru import logger

from engine.controller.runtime.queue import WorkQueue
from engine.kube.errors import Unavailable
from engine.kube.outage import unreachable

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Done:
    """The key is in its desired state; its back-off is reset and nothing is scheduled."""


@dataclass(frozen=True)
class RequeueAfter:
    """Success, but look at the key again after `seconds` (back-off is reset)."""

    seconds: float

    def __post_init__(self) -> None:
        if self.seconds < 0:
            raise ValueError(f"RequeueAfter needs seconds >= 0, got {self.seconds}")


@dataclass(frozen=True)
class Retry:
    """A transient failure: requeue with the key's exponential back-off."""

    error: Exception


@dataclass(frozen=True)
class Terminal:
    """A failure that retrying cannot fix: logged, back-off reset, not requeued."""

    error: Exception


Outcome = Done | RequeueAfter | Retry | Terminal
"""What a handler decides about one key; each variant carries only what it needs."""


def run_workers(
    queue: WorkQueue[K],
    handler: Callable[[K], Outcome],
    *,
    workers: int,
    stop: threading.Event,
    poll_s: float = 0.5,
) -> None:
    """Run `workers` threads over `queue` until `stop` is set or the queue shuts down.

    Blocks until every worker has finished its current key and exited. `poll_s` bounds how
    long an idle worker takes to notice `stop`.
    """
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    threads = [
        threading.Thread(
            target=_work,
            args=(queue, handler, stop, poll_s),
            name=f"jobmachine-worker-{index}",
            daemon=True,
        )
        for index in range(workers)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _work(
    queue: WorkQueue[K],
    handler: Callable[[K], Outcome],
    stop: threading.Event,
    poll_s: float,
) -> None:
    while not stop.is_set():
        key = queue.get(timeout=poll_s)
        if key is not None:
            process_one(queue, handler, key)
        elif queue.shutting_down:
            return


def process_one(queue: WorkQueue[K], handler: Callable[[K], Outcome], key: K) -> None:
    """Handle one key taken from `queue` with `get`, apply the outcome, and mark it done."""
    log = logger.bind(key=str(key))
    try:
        try:
            outcome = handler(key)
        except Unavailable as exc:
            outcome = Retry(exc)
        except Exception:
            delay = queue.add_rate_limited(key)
            log.exception(f"handler raised; retry {queue.num_requeues(key)} in {delay:.3f}s")
            return
        _apply(queue, key, outcome)
    finally:
        queue.done(key)


def _apply(queue: WorkQueue[K], key: K, outcome: Outcome) -> None:
    log = logger.bind(key=str(key))
    match outcome:
        case Done():
            queue.forget(key)
        case RequeueAfter(seconds=seconds):
            queue.forget(key)
            queue.add_after(key, seconds)
        case Retry(error=error):
            delay = queue.add_rate_limited(key)
            log.log("DEBUG" if unreachable(error) else "WARNING",
                    f"retry {queue.num_requeues(key)} in {delay:.3f}s: {error}")
        case Terminal(error=error):
            queue.forget(key)
            log.error(f"terminal error, not retried: {error}")
        case _:
            assert_never(outcome)
