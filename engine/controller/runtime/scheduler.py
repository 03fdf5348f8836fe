"""Timed wake-ups (requeue-after, deadlines, TTL, back-off delays) and the periodic resync.

A wake-up only adds its key to the queue: the reconcile decides what is due from status
timestamps. One apscheduler job per (purpose, key), replaced on every request, because the
reconcile always states the next time it wants (an earlier wake-up is no longer wanted).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from typing import Generic, Protocol, TypeVar

from apscheduler.jobstores.base import JobLookupError
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.date import DateTrigger
from apscheduler.triggers.interval import IntervalTrigger
from loguru import logger

K = TypeVar("K", bound=Hashable)
K_contra = TypeVar("K_contra", bound=Hashable, contravariant=True)


class SupportsAdd(Protocol[K_contra]):
    """Where wake-ups go: anything with `add(key)` (the work queue)."""

    def add(self, key: K_contra) -> None:
        """Queue `key` for a reconcile."""


def utc_now() -> datetime:
    """The wall clock, timezone-aware."""
    return datetime.now(UTC)


class WakeScheduler(Generic[K]):
    """Asks for a key to be reconciled at a given time, per purpose, on a background thread."""

    def __init__(self, queue: SupportsAdd[K], *, clock: Callable[[], datetime] = utc_now) -> None:
        self._queue = queue
        self._clock = clock
        # misfire_grace_time=None: a late wake-up still fires (the default of 1 s silently
        # dropped half of a burst of 2,000); coalesce: an overdue periodic job runs once.
        self._scheduler = BackgroundScheduler(
            timezone=UTC,
            job_defaults={"misfire_grace_time": None, "coalesce": True, "max_instances": 1},
        )
        self._lock = threading.Lock()
        self._purposes: dict[K, set[str]] = {}

    def start(self) -> None:
        """Start firing; wake-ups asked for before start fire then (late ones at once)."""
        self._scheduler.start()

    def shutdown(self, *, wait: bool = True) -> None:
        """Stop firing (a no-op if not running); with `wait`, until callbacks have returned."""
        if self._scheduler.running:
            self._scheduler.shutdown(wait=wait)

    def wake_at(self, key: K, when: datetime, purpose: str) -> None:
        """Add `key` to the queue at `when`, replacing any wake-up of the same purpose."""
        if when.tzinfo is None:
            raise ValueError(f"wake_at needs a timezone-aware datetime, got {when!r}")
        job_id = _job_id(purpose, key)
        with self._lock:
            self._purposes.setdefault(key, set()).add(purpose)
            self._scheduler.add_job(
                self._queue.add,
                trigger=DateTrigger(run_date=when),
                args=(key,),
                id=job_id,
                name=job_id,
                replace_existing=True,
            )

    def wake_after(self, key: K, seconds: float, purpose: str) -> None:
        """Add `key` to the queue `seconds` from now (by the injected clock)."""
        self.wake_at(key, self._clock() + timedelta(seconds=seconds), purpose)

    def next_wake(self, key: K, purpose: str) -> datetime | None:
        """When the pending wake-up of this purpose fires, or None if there is none."""
        job = self._scheduler.get_job(_job_id(purpose, key))
        if job is None:
            return None
        run_date: datetime = job.trigger.run_date
        return run_date

    def cancel(self, key: K, purpose: str) -> None:
        """Drop the pending wake-up of this purpose for `key`, if any."""
        with self._lock:
            purposes = self._purposes.get(key, set())
            purposes.discard(purpose)
            if not purposes:
                self._purposes.pop(key, None)
            self._remove(_job_id(purpose, key))

    def cancel_all(self, key: K) -> None:
        """Drop every pending wake-up of `key` (the job is gone)."""
        with self._lock:
            for purpose in self._purposes.pop(key, set()):
                self._remove(_job_id(purpose, key))

    def every(self, seconds: float, fn: Callable[[], None], job_id: str) -> None:
        """Call `fn` every `seconds` (the periodic resync), replacing a job with the same id."""
        if seconds <= 0:
            raise ValueError(f"every() needs seconds > 0, got {seconds}")
        self._scheduler.add_job(
            _logged(fn, job_id),
            trigger=IntervalTrigger(seconds=seconds, timezone=UTC),
            id=job_id,
            name=job_id,
            replace_existing=True,
        )

    def _remove(self, job_id: str) -> None:
        # Already fired or never asked for: nothing to cancel.
        with suppress(JobLookupError):
            self._scheduler.remove_job(job_id)


def _job_id(purpose: str, key: Hashable) -> str:
    if not purpose or ":" in purpose:
        raise ValueError(f"a wake-up purpose is a non-empty word without ':', got {purpose!r}")
    return f"{purpose}:{key}"


def _logged(fn: Callable[[], None], job_id: str) -> Callable[[], None]:
    def run() -> None:
        try:
            fn()
        except Exception:
            logger.bind(job_id=job_id).exception("periodic job failed; it runs again next period")

    return run
