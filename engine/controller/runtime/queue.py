"""The work queue: job keys (never events), de-duplicated, one worker per key at a time.

A burst of watch events for one job costs one reconcile, and the reconcile always reads the
latest cache. Delayed adds and per-key exponential back-off live here too (client-go's
workqueue semantics), served by the getters themselves: no timer thread to start or stop.

Urgent keys (a job whose pods changed: work in progress) are handed out before the others
(new jobs, resyncs, the engine's own writes seen back), so a burst of new jobs does not hold
up the ends of jobs already running.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)

_MAX_DOUBLINGS = 1000
"""Exponents above this cannot matter (2**1000 seconds) and would overflow a float."""


@dataclass(frozen=True)
class QueueMetrics:
    """A snapshot of the queue's counters, for the metrics module to export."""

    depth: int
    """Keys ready to be handed out (not counting delayed or in-flight keys)."""
    adds: int
    """Keys that entered the queue (an add absorbed by de-duplication does not count)."""
    retries: int
    """Calls to `add_rate_limited`."""
    processed: int
    """Keys handed out and marked done."""
    work_seconds: float
    """Total time between handing a key out and its `done`, over all processed keys."""
    longest_running_seconds: float
    """How long the oldest in-flight key has been processing (0 when none)."""
    unfinished_work_seconds: float
    """Summed processing time of all in-flight keys (stuck workers show up here)."""


class WorkQueue(Generic[K]):
    """A thread-safe queue of keys that never hands one key to two workers at once.

    A key added while queued is queued once; a key added while being processed is queued again
    once its `done` is called. An urgent add of a key already queued moves it ahead. After
    `shut_down`, adds are ignored and `get` returns None.
    """

    def __init__(
        self,
        *,
        backoff_base_s: float = 0.005,
        backoff_cap_s: float = 1000.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 0 < backoff_base_s <= backoff_cap_s:
            raise ValueError(
                f"back-off needs 0 < base <= cap, got base={backoff_base_s} cap={backoff_cap_s}"
            )
        self._base = backoff_base_s
        self._cap = backoff_cap_s
        self._clock = clock
        self._cond = threading.Condition()
        self._ready: deque[K] = deque()
        self._urgent: deque[K] = deque()
        """Handed out before `_ready`. Either may hold a key that was handed out from the other
        (an urgent add moves a queued key ahead by a second entry): `get` skips those."""
        self._urgent_keys: set[K] = set()
        self._dirty: set[K] = set()
        self._processing: dict[K, float] = {}
        self._waiting: list[tuple[float, int, K]] = []
        self._due: dict[K, float] = {}
        self._seq = itertools.count()
        self._failures: dict[K, int] = {}
        self._shutting_down = False
        self._adds = 0
        self._retries = 0
        self._processed = 0
        self._work_seconds = 0.0

    def add(self, key: K, *, urgent: bool = False) -> None:
        """Queue `key` unless it is already queued; if it is in flight, queue it after `done`.

        `urgent` (work in progress) puts it ahead of keys that are not.
        """
        with self._cond:
            self._add_locked(key, urgent=urgent)

    def add_after(self, key: K, delay_s: float) -> None:
        """Queue `key` once `delay_s` has passed; an earlier pending delay for it is kept."""
        with self._cond:
            self._add_after_locked(key, delay_s)

    def add_rate_limited(self, key: K) -> float:
        """Queue `key` after its back-off (base doubling per failure, capped); return the delay."""
        with self._cond:
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
            self._retries += 1
            delay = min(self._cap, self._base * 2.0 ** min(failures, _MAX_DOUBLINGS))
            self._add_after_locked(key, delay)
            return delay

    def forget(self, key: K) -> None:
        """Reset the back-off of `key` (its last processing succeeded)."""
        with self._cond:
            self._failures.pop(key, None)

    def num_requeues(self, key: K) -> int:
        """How many rate-limited adds `key` had since it was last forgotten."""
        with self._cond:
            return self._failures.get(key, 0)

    def get(self, timeout: float | None = None) -> K | None:
        """Hand out the next ready key, blocking up to `timeout` seconds (forever when None).

        Returns None on timeout and at once after `shut_down`. The caller owns the key until
        it calls `done(key)`; no other caller receives it meanwhile.
        """
        with self._cond:
            deadline = None if timeout is None else self._clock() + timeout
            while not self._shutting_down:
                now = self._clock()
                self._promote_due(now)
                key = self._next_ready()
                if key is not None:
                    self._dirty.discard(key)
                    self._urgent_keys.discard(key)
                    self._processing[key] = now
                    return key
                if deadline is not None and now >= deadline:
                    return None
                self._cond.wait(self._wait_seconds(now, deadline))
            return None

    def done(self, key: K) -> None:
        """Mark `key` processed; if it was added meanwhile, it becomes ready again."""
        with self._cond:
            started = self._processing.pop(key, None)
            if started is None:
                raise KeyError(f"done({key!r}) for a key that is not being processed")
            self._processed += 1
            self._work_seconds += self._clock() - started
            if key in self._dirty:
                (self._urgent if key in self._urgent_keys else self._ready).append(key)
                self._cond.notify()
            if self._shutting_down:
                self._cond.notify_all()

    def shut_down(self, *, drain: bool = False, timeout: float | None = None) -> bool:
        """Stop: drop queued and delayed keys, ignore further adds, release blocked getters.

        With `drain`, block (up to `timeout` seconds) until every key already handed out is
        done. Returns True when no key is in flight any more.
        """
        with self._cond:
            self._shutting_down = True
            self._ready.clear()
            self._urgent.clear()
            self._urgent_keys.clear()
            self._dirty.clear()
            self._waiting.clear()
            self._due.clear()
            self._cond.notify_all()
            if drain:
                self._cond.wait_for(lambda: not self._processing, timeout)
            return not self._processing

    @property
    def shutting_down(self) -> bool:
        """Whether `shut_down` was called."""
        with self._cond:
            return self._shutting_down

    def metrics(self) -> QueueMetrics:
        """A consistent snapshot of the counters."""
        with self._cond:
            now = self._clock()
            self._promote_due(now)
            running = [now - started for started in self._processing.values()]
            return QueueMetrics(
                depth=self._depth(),
                adds=self._adds,
                retries=self._retries,
                processed=self._processed,
                work_seconds=self._work_seconds,
                longest_running_seconds=max(running, default=0.0),
                unfinished_work_seconds=sum(running),
            )

    def __len__(self) -> int:
        """Keys ready to be handed out now."""
        with self._cond:
            self._promote_due(self._clock())
            return self._depth()

    def _depth(self) -> int:
        return sum(1 for key in self._dirty if key not in self._processing)

    def _next_ready(self) -> K | None:
        """The first queued key, urgent ones first; entries made stale by a move are dropped."""
        for entries in (self._urgent, self._ready):
            while entries:
                key = entries.popleft()
                if key in self._dirty and key not in self._processing:
                    return key
        return None

    def _add_locked(self, key: K, *, urgent: bool = False) -> None:
        if self._shutting_down:
            return
        if key in self._dirty:
            if urgent and key not in self._urgent_keys:
                self._urgent_keys.add(key)
                if key not in self._processing:
                    self._urgent.append(key)
            return
        self._dirty.add(key)
        self._adds += 1
        if urgent:
            self._urgent_keys.add(key)
        if key not in self._processing:
            (self._urgent if urgent else self._ready).append(key)
            self._cond.notify()

    def _add_after_locked(self, key: K, delay_s: float) -> None:
        if self._shutting_down:
            return
        if delay_s <= 0:
            self._add_locked(key)
            return
        due = self._clock() + delay_s
        if self._due.get(key, due + 1) <= due:
            return
        self._due[key] = due
        heapq.heappush(self._waiting, (due, next(self._seq), key))
        # A getter may be sleeping until a later due time or its own deadline.
        self._cond.notify_all()

    def _promote_due(self, now: float) -> None:
        while self._waiting and self._waiting[0][0] <= now:
            due, _, key = heapq.heappop(self._waiting)
            if self._due.get(key) == due:
                del self._due[key]
                self._add_locked(key)

    def _wait_seconds(self, now: float, deadline: float | None) -> float | None:
        wake_ups = [self._waiting[0][0]] if self._waiting else []
        if deadline is not None:
            wake_ups.append(deadline)
        return min(wake_ups) - now if wake_ups else None
