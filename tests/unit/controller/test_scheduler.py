"""The wake-up scheduler: one replaceable wake-up per (purpose, key), bursts that all fire."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest

from engine.controller.runtime.scheduler import WakeScheduler

WAIT = 60.0  # generous bound for background firing; never asserted as a duration


class RecordingQueue:
    """Stands in for the work queue: counts adds and signals when `expected` keys arrived."""

    def __init__(self, expected: int = 1) -> None:
        self.adds: Counter[str] = Counter()
        self.expected = expected
        self.arrived = threading.Event()
        self._lock = threading.Lock()

    def add(self, key: str) -> None:
        with self._lock:
            self.adds[key] += 1
            if len(self.adds) >= self.expected:
                self.arrived.set()


@pytest.fixture
def make_scheduler() -> Iterator[Callable[..., WakeScheduler[str]]]:
    made: list[WakeScheduler[str]] = []

    def make(queue: RecordingQueue, **kwargs: Callable[[], datetime]) -> WakeScheduler[str]:
        scheduler = WakeScheduler[str](queue, **kwargs)
        made.append(scheduler)
        return scheduler

    yield make
    for scheduler in made:
        scheduler.shutdown(wait=True)


FAR = datetime.now(UTC) + timedelta(days=1)
"""A frozen clock a day ahead, so wake-ups computed from it never fire during a test."""


class TestWakeUps:
    def test_wake_after_replaces_the_previous_wake_up_of_that_purpose(
        self, make_scheduler: Callable[..., WakeScheduler[str]]
    ) -> None:
        scheduler = make_scheduler(RecordingQueue(), clock=lambda: FAR)
        scheduler.start()
        scheduler.wake_after("ns/a", 60, "ttl")
        assert scheduler.next_wake("ns/a", "ttl") == FAR + timedelta(seconds=60)
        scheduler.wake_after("ns/a", 10, "ttl")
        assert scheduler.next_wake("ns/a", "ttl") == FAR + timedelta(seconds=10)
        scheduler.wake_after("ns/a", 100, "ttl")
        assert scheduler.next_wake("ns/a", "ttl") == FAR + timedelta(seconds=100)

    def test_purposes_are_independent_and_cancel_drops_one(
        self, make_scheduler: Callable[..., WakeScheduler[str]]
    ) -> None:
        scheduler = make_scheduler(RecordingQueue(), clock=lambda: FAR)
        scheduler.start()
        scheduler.wake_after("ns/a", 10, "ttl")
        scheduler.wake_after("ns/a", 20, "deadline")
        scheduler.wake_after("ns/b", 30, "ttl")
        scheduler.cancel("ns/a", "ttl")
        assert scheduler.next_wake("ns/a", "ttl") is None
        assert scheduler.next_wake("ns/a", "deadline") == FAR + timedelta(seconds=20)
        scheduler.cancel("ns/a", "ttl")  # cancelling twice is harmless
        scheduler.cancel_all("ns/a")
        assert scheduler.next_wake("ns/a", "deadline") is None
        assert scheduler.next_wake("ns/b", "ttl") == FAR + timedelta(seconds=30)

    def test_firing_adds_the_key_once_and_the_wake_up_is_gone(
        self, make_scheduler: Callable[..., WakeScheduler[str]]
    ) -> None:
        queue = RecordingQueue()
        scheduler = make_scheduler(queue)
        scheduler.start()
        scheduler.wake_after("ns/a", 0.05, "requeue")
        scheduler.wake_after("ns/a", 0.01, "requeue")
        assert queue.arrived.wait(WAIT)
        assert queue.adds == Counter({"ns/a": 1})
        assert scheduler.next_wake("ns/a", "requeue") is None

    def test_cancel_all_after_firing_is_harmless(
        self, make_scheduler: Callable[..., WakeScheduler[str]]
    ) -> None:
        queue = RecordingQueue()
        scheduler = make_scheduler(queue)
        scheduler.start()
        scheduler.wake_after("ns/a", 0, "requeue")
        assert queue.arrived.wait(WAIT)
        scheduler.cancel_all("ns/a")
        scheduler.cancel_all("ns/never")

    def test_rejects_naive_times_and_ambiguous_purposes(
        self, make_scheduler: Callable[..., WakeScheduler[str]]
    ) -> None:
        scheduler = make_scheduler(RecordingQueue())
        with pytest.raises(ValueError, match="timezone-aware"):
            scheduler.wake_at("ns/a", datetime(2030, 1, 1), "ttl")
        with pytest.raises(ValueError, match="purpose"):
            scheduler.wake_after("ns/a", 1, "ttl:x")


class TestBursts:
    def test_two_thousand_overdue_wake_ups_all_fire_at_start(
        self, make_scheduler: Callable[..., WakeScheduler[str]]
    ) -> None:
        # Far beyond apscheduler's default 1 s grace: with it, every one would be dropped.
        queue = RecordingQueue(expected=2000)
        scheduler = make_scheduler(queue)
        overdue = datetime.now(UTC) - timedelta(seconds=30)
        for index in range(2000):
            scheduler.wake_at(f"ns/job-{index}", overdue, "deadline")
        scheduler.start()
        assert queue.arrived.wait(WAIT)
        assert set(queue.adds.values()) == {1}

    def test_two_thousand_wake_ups_due_together_all_fire(
        self, make_scheduler: Callable[..., WakeScheduler[str]]
    ) -> None:
        queue = RecordingQueue(expected=2000)
        scheduler = make_scheduler(queue)
        scheduler.start()
        for index in range(2000):
            scheduler.wake_after(f"ns/job-{index}", 0.2, "requeue")
        assert queue.arrived.wait(WAIT)
        assert len(queue.adds) == 2000


class TestEvery:
    def test_runs_periodically_and_survives_a_failure(
        self, make_scheduler: Callable[..., WakeScheduler[str]]
    ) -> None:
        scheduler = make_scheduler(RecordingQueue())
        calls: list[int] = []
        twice = threading.Event()

        def resync() -> None:
            calls.append(len(calls))
            if len(calls) >= 2:
                twice.set()
            if len(calls) == 1:
                raise RuntimeError("list failed")

        scheduler.every(0.02, resync, "resync")
        scheduler.start()
        assert twice.wait(WAIT)

    def test_rejects_a_non_positive_period(
        self, make_scheduler: Callable[..., WakeScheduler[str]]
    ) -> None:
        with pytest.raises(ValueError, match="seconds > 0"):
            make_scheduler(RecordingQueue()).every(0, lambda: None, "resync")
