"""The work queue: de-duplication, per-key exclusivity, delays, back-off, shutdown, metrics."""

from __future__ import annotations

import random
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.controller.runtime.queue import WorkQueue

from .conftest import FakeClock

WAIT = 10.0  # generous bound for threads to finish; never asserted as a duration


def drain_ready(queue: WorkQueue[str]) -> list[str]:
    keys = []
    while (key := queue.get(timeout=0)) is not None:
        keys.append(key)
        queue.done(key)
    return keys


class TestDeduplication:
    def test_a_key_added_many_times_is_queued_once(self) -> None:
        queue: WorkQueue[str] = WorkQueue()
        for key in ["a", "b", "a", "a", "b", "c"]:
            queue.add(key)
        assert len(queue) == 3
        assert drain_ready(queue) == ["a", "b", "c"]
        assert queue.metrics().adds == 3

    def test_re_add_during_processing_is_handed_out_once_more_after_done(self) -> None:
        queue: WorkQueue[str] = WorkQueue()
        queue.add("a")
        assert queue.get(timeout=0) == "a"
        for _ in range(5):
            queue.add("a")
        assert len(queue) == 0
        assert queue.get(timeout=0) is None
        queue.done("a")
        assert queue.get(timeout=0) == "a"
        queue.done("a")
        assert queue.get(timeout=0) is None

    def test_done_without_get_is_an_error(self) -> None:
        queue: WorkQueue[str] = WorkQueue()
        queue.add("a")
        with pytest.raises(KeyError, match="not being processed"):
            queue.done("a")


def test_one_key_is_never_on_two_workers_at_once() -> None:
    rng = random.Random(1234)
    queue: WorkQueue[int] = WorkQueue()
    lock = threading.Lock()
    active: set[int] = set()
    overlaps: list[int] = []
    handled: set[int] = set()
    all_seen = threading.Event()

    def worker() -> None:
        local = random.Random(rng.random())
        while (key := queue.get()) is not None:
            with lock:
                if key in active:
                    overlaps.append(key)
                active.add(key)
            if local.random() < 0.5:
                queue.add(key)  # a watch event arriving mid-reconcile
            threading.Event().wait(local.random() / 1000)
            with lock:
                active.discard(key)
                handled.add(key)
                if len(handled) == 5:
                    all_seen.set()
            queue.done(key)

    def producer(seed: int) -> None:
        local = random.Random(seed)
        for _ in range(500):
            queue.add(local.randrange(5))

    workers = [threading.Thread(target=worker) for _ in range(8)]
    producers = [threading.Thread(target=producer, args=(rng.random(),)) for _ in range(4)]
    for thread in workers + producers:
        thread.start()
    for thread in producers:
        thread.join(WAIT)
    assert all_seen.wait(WAIT)
    assert queue.shut_down(drain=True, timeout=WAIT)
    for thread in workers:
        thread.join(WAIT)
    assert not any(thread.is_alive() for thread in workers)
    assert overlaps == []
    assert queue.metrics().processed >= 5


class TestUrgency:
    """Work in progress (a job whose pods changed) goes before new arrivals."""

    def test_urgent_keys_come_first_each_in_order(self) -> None:
        queue: WorkQueue[str] = WorkQueue()
        for key in ["new-1", "new-2"]:
            queue.add(key)
        for key in ["busy-1", "busy-2"]:
            queue.add(key, urgent=True)
        assert drain_ready(queue) == ["busy-1", "busy-2", "new-1", "new-2"]

    def test_an_urgent_add_moves_a_queued_key_ahead_once(self) -> None:
        queue: WorkQueue[str] = WorkQueue()
        for key in ["a", "b", "c"]:
            queue.add(key)
        queue.add("c", urgent=True)
        assert len(queue) == 3
        assert drain_ready(queue) == ["c", "a", "b"]
        assert queue.metrics().adds == 3

    def test_an_urgent_add_while_processing_goes_first_after_done(self) -> None:
        queue: WorkQueue[str] = WorkQueue()
        queue.add("a")
        assert queue.get(timeout=0) == "a"
        queue.add("b")
        queue.add("a", urgent=True)
        queue.done("a")
        assert drain_ready(queue) == ["a", "b"]


OPERATIONS = st.lists(st.one_of(
    st.tuples(st.just("add"), st.sampled_from("abcd"), st.booleans()),
    st.tuples(st.just("get"), st.just(""), st.just(False)),
    st.tuples(st.just("done"), st.sampled_from("abcd"), st.just(False)),
), max_size=60)


@given(OPERATIONS)
def test_any_sequence_hands_each_key_out_alone_and_urgent_ones_first(
    operations: list[tuple[str, str, bool]],
) -> None:
    """Against a model: queued keys, keys in flight, and which queued keys are urgent."""
    queue: WorkQueue[str] = WorkQueue()
    queued: set[str] = set()
    urgent: set[str] = set()
    in_flight: set[str] = set()
    for operation, key, is_urgent in operations:
        if operation == "add":
            queue.add(key, urgent=is_urgent)
            queued.add(key)
            if is_urgent:
                urgent.add(key)
        elif operation == "get":
            ready = queued - in_flight
            got = queue.get(timeout=0)
            if not ready:
                assert got is None
                continue
            assert got in ready
            if ready & urgent:
                assert got in urgent
            queued.discard(got)
            urgent.discard(got)
            in_flight.add(got)
        elif key in in_flight:
            queue.done(key)
            in_flight.discard(key)
        assert len(queue) == len(queued - in_flight)


class TestBackOff:
    def test_grows_doubling_and_caps(self, clock: FakeClock) -> None:
        queue: WorkQueue[str] = WorkQueue(backoff_base_s=1, backoff_cap_s=8, clock=clock)
        delays = [queue.add_rate_limited("a") for _ in range(6)]
        assert delays == [1, 2, 4, 8, 8, 8]
        assert queue.num_requeues("a") == 6

    def test_defaults_are_client_go_milliseconds_to_a_thousand_seconds(self) -> None:
        queue: WorkQueue[str] = WorkQueue()
        assert queue.add_rate_limited("a") == pytest.approx(0.005)
        assert queue.add_rate_limited("a") == pytest.approx(0.010)
        delays = [queue.add_rate_limited("a") for _ in range(5000)]
        assert delays[-1] == 1000.0

    def test_forget_resets_and_keys_are_independent(self, clock: FakeClock) -> None:
        queue: WorkQueue[str] = WorkQueue(backoff_base_s=1, backoff_cap_s=100, clock=clock)
        for _ in range(3):
            queue.add_rate_limited("a")
        queue.add_rate_limited("b")
        queue.forget("a")
        assert queue.num_requeues("a") == 0
        assert queue.num_requeues("b") == 1
        assert queue.add_rate_limited("a") == 1

    def test_a_retried_key_waits_for_its_back_off(self, clock: FakeClock) -> None:
        queue: WorkQueue[str] = WorkQueue(backoff_base_s=1, backoff_cap_s=100, clock=clock)
        queue.add_rate_limited("a")
        assert queue.get(timeout=0) is None
        clock.advance(0.9)
        assert len(queue) == 0
        clock.advance(0.1)
        assert queue.get(timeout=0) == "a"
        assert queue.metrics().retries == 1

    def test_invalid_bounds_are_rejected(self) -> None:
        with pytest.raises(ValueError, match="base <= cap"):
            WorkQueue(backoff_base_s=2, backoff_cap_s=1)
        with pytest.raises(ValueError, match="0 < base"):
            WorkQueue(backoff_base_s=0)


class TestAddAfter:
    def test_keys_come_out_in_due_order(self, clock: FakeClock) -> None:
        queue: WorkQueue[str] = WorkQueue(clock=clock)
        queue.add_after("c", 3)
        queue.add_after("a", 1)
        queue.add_after("b", 2)
        assert queue.get(timeout=0) is None
        clock.advance(1.5)
        assert drain_ready(queue) == ["a"]
        clock.advance(10)
        assert drain_ready(queue) == ["b", "c"]

    def test_an_earlier_pending_delay_is_kept(self, clock: FakeClock) -> None:
        queue: WorkQueue[str] = WorkQueue(clock=clock)
        queue.add_after("a", 5)
        queue.add_after("a", 1)
        queue.add_after("a", 10)
        clock.advance(1)
        assert drain_ready(queue) == ["a"]
        clock.advance(20)
        assert drain_ready(queue) == []

    def test_non_positive_delay_adds_at_once(self, clock: FakeClock) -> None:
        queue: WorkQueue[str] = WorkQueue(clock=clock)
        queue.add_after("a", 0)
        queue.add_after("b", -1)
        assert drain_ready(queue) == ["a", "b"]

    def test_a_blocked_getter_wakes_for_a_delayed_key(self) -> None:
        queue: WorkQueue[str] = WorkQueue()
        got: list[str | None] = []
        getter = threading.Thread(target=lambda: got.append(queue.get()))
        getter.start()
        queue.add_after("a", 0.01)
        getter.join(WAIT)
        assert got == ["a"]

    def test_delayed_key_in_flight_is_handed_out_after_done(self, clock: FakeClock) -> None:
        queue: WorkQueue[str] = WorkQueue(clock=clock)
        queue.add("a")
        assert queue.get(timeout=0) == "a"
        queue.add_after("a", 1)
        clock.advance(2)
        assert queue.get(timeout=0) is None
        queue.done("a")
        assert queue.get(timeout=0) == "a"


class TestShutDown:
    def test_releases_blocked_getters_and_ignores_later_adds(self) -> None:
        queue: WorkQueue[str] = WorkQueue()
        results: list[str | None] = []
        getters = [threading.Thread(target=lambda: results.append(queue.get())) for _ in range(3)]
        for thread in getters:
            thread.start()
        assert queue.shut_down()
        for thread in getters:
            thread.join(WAIT)
        assert results == [None, None, None]
        queue.add("a")
        queue.add_after("b", 0)
        queue.add_rate_limited("c")
        assert len(queue) == 0
        assert queue.get(timeout=0) is None
        assert queue.shutting_down

    def test_drain_waits_for_keys_in_flight(self) -> None:
        queue: WorkQueue[str] = WorkQueue()
        queue.add("a")
        queue.add("b")
        assert queue.get() == "a"
        assert not queue.shut_down(drain=True, timeout=0.01)
        assert queue.get(timeout=0) is None  # "b" was dropped, not handed out
        drained: list[bool] = []
        waiter = threading.Thread(target=lambda: drained.append(queue.shut_down(drain=True)))
        waiter.start()
        queue.done("a")
        waiter.join(WAIT)
        assert drained == [True]


def test_metrics_report_depth_work_and_longest_running(clock: FakeClock) -> None:
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    queue.add("a")
    queue.add("b")
    queue.add("c")
    assert queue.get() == "a"
    clock.advance(2)
    assert queue.get() == "b"
    clock.advance(3)
    metrics = queue.metrics()
    assert metrics.depth == 1
    assert metrics.longest_running_seconds == 5
    assert metrics.unfinished_work_seconds == 8
    queue.done("a")
    metrics = queue.metrics()
    assert (metrics.processed, metrics.work_seconds, metrics.longest_running_seconds) == (1, 5, 3)
