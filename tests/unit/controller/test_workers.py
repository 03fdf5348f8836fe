"""The worker loop: each handler outcome becomes the right queue calls; exceptions back off."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from loguru import logger

from engine.controller.runtime.queue import WorkQueue
from engine.controller.runtime.workers import (
    Done,
    Outcome,
    RequeueAfter,
    Retry,
    Terminal,
    process_one,
    run_workers,
)
from engine.kube.errors import Unavailable

from .conftest import FakeClock

WAIT = 10.0  # generous bound for threads to finish; never asserted as a duration


@pytest.fixture
def queue(clock: FakeClock) -> WorkQueue[str]:
    return WorkQueue(backoff_base_s=1, backoff_cap_s=60, clock=clock)


def handle(queue: WorkQueue[str], outcome: Outcome | Exception, key: str = "ns/a") -> None:
    """Take `key` from the queue and run it through a handler that returns or raises `outcome`."""

    def handler(_: str) -> Outcome:
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    queue.add(key)
    assert queue.get(timeout=0) == key
    process_one(queue, handler, key)


class TestOutcomes:
    def test_exception_is_retried_with_back_off_and_logged_with_the_key(
        self, queue: WorkQueue[str], clock: FakeClock, records: list[dict[str, Any]]
    ) -> None:
        handle(queue, RuntimeError("boom"))
        assert queue.num_requeues("ns/a") == 1
        assert queue.get(timeout=0) is None  # never an immediate requeue
        clock.advance(1)
        assert queue.get(timeout=0) == "ns/a"
        [error] = [r for r in records if r["level"].name == "ERROR"]
        assert error["extra"]["key"] == "ns/a"
        assert error["exception"] is not None
        assert "boom" in str(error["exception"].value)

    def test_repeated_failures_grow_the_delay(
        self, queue: WorkQueue[str], clock: FakeClock
    ) -> None:
        handle(queue, RuntimeError("boom"))
        clock.advance(1)
        assert queue.get(timeout=0) == "ns/a"
        process_one(queue, lambda _: Retry(OSError("again")), "ns/a")
        assert queue.num_requeues("ns/a") == 2
        clock.advance(1.5)
        assert queue.get(timeout=0) is None
        clock.advance(0.5)
        assert queue.get(timeout=0) == "ns/a"

    def test_retry_backs_off_and_warns(
        self, queue: WorkQueue[str], clock: FakeClock, records: list[dict[str, Any]]
    ) -> None:
        handle(queue, Retry(ConnectionError("api down")))
        assert queue.num_requeues("ns/a") == 1
        assert queue.get(timeout=0) is None
        clock.advance(1)
        assert queue.get(timeout=0) == "ns/a"
        [warning] = [r for r in records if r["level"].name == "WARNING"]
        assert warning["extra"]["key"] == "ns/a"
        assert "api down" in warning["message"]

    def test_an_unreachable_server_is_a_retry_logged_at_debug_without_traceback(
        self, queue: WorkQueue[str], clock: FakeClock, records: list[dict[str, Any]]
    ) -> None:
        handle(queue, Unavailable(0, "ConnectionError", "ConnectionRefusedError: refused", {}))
        assert queue.num_requeues("ns/a") == 1
        assert queue.get(timeout=0) is None
        clock.advance(1)
        assert queue.get(timeout=0) == "ns/a"
        [debug] = [r for r in records if "refused" in r["message"]]
        assert debug["level"].name == "DEBUG"
        assert debug["exception"] is None
        assert debug["extra"]["key"] == "ns/a"

    def test_other_unavailable_answers_warn_without_traceback(
        self, queue: WorkQueue[str], records: list[dict[str, Any]]
    ) -> None:
        handle(queue, Unavailable(429, "TooManyRequests", "slow down", {}))
        assert queue.num_requeues("ns/a") == 1
        [warning] = [r for r in records if r["level"].no >= logger.level("WARNING").no]
        assert warning["level"].name == "WARNING"
        assert "slow down" in warning["message"]
        assert warning["exception"] is None

    def test_requeue_after_forgets_back_off_and_adds_after(
        self, queue: WorkQueue[str], clock: FakeClock
    ) -> None:
        queue.add_rate_limited("ns/a")
        queue.add_rate_limited("ns/a")
        clock.advance(10)
        handle(queue, RequeueAfter(30))
        assert queue.num_requeues("ns/a") == 0
        clock.advance(29)
        assert queue.get(timeout=0) is None
        clock.advance(1)
        assert queue.get(timeout=0) == "ns/a"

    def test_done_forgets_and_schedules_nothing(
        self, queue: WorkQueue[str], clock: FakeClock
    ) -> None:
        queue.add_rate_limited("ns/a")
        clock.advance(1)
        handle(queue, Done())
        assert queue.num_requeues("ns/a") == 0
        clock.advance(3600)
        assert queue.get(timeout=0) is None

    def test_terminal_is_logged_and_not_retried(
        self, queue: WorkQueue[str], clock: FakeClock, records: list[dict[str, Any]]
    ) -> None:
        handle(queue, Terminal(ValueError("bad spec")))
        assert queue.num_requeues("ns/a") == 0
        clock.advance(3600)
        assert queue.get(timeout=0) is None
        [error] = [r for r in records if r["level"].name == "ERROR"]
        assert "bad spec" in error["message"]
        assert error["extra"]["key"] == "ns/a"

    def test_requeue_after_rejects_a_negative_delay(self) -> None:
        with pytest.raises(ValueError, match="seconds >= 0"):
            RequeueAfter(-1)


class TestRunWorkers:
    def test_every_key_is_handled_and_failures_retried(self) -> None:
        queue: WorkQueue[int] = WorkQueue(backoff_base_s=0.001, backoff_cap_s=0.01)
        lock = threading.Lock()
        calls: dict[int, int] = {}
        finished = threading.Event()
        stop = threading.Event()

        def handler(key: int) -> Outcome:
            with lock:
                calls[key] = calls.get(key, 0) + 1
                first = calls[key] == 1
                if len(calls) == 50 and all(n == 2 for k, n in calls.items() if k % 5 == 0):
                    finished.set()
            if key % 5 == 0 and first:
                raise RuntimeError(f"first attempt of {key} fails")
            return Done()

        for key in range(50):
            queue.add(key)
        runner = threading.Thread(
            target=run_workers, args=(queue, handler), kwargs={"workers": 4, "stop": stop}
        )
        runner.start()
        assert finished.wait(WAIT)
        stop.set()
        runner.join(WAIT)
        assert not runner.is_alive()
        assert calls == {key: 2 if key % 5 == 0 else 1 for key in range(50)}
        assert all(queue.num_requeues(key) == 0 for key in range(50))

    def test_workers_exit_when_the_queue_shuts_down(self) -> None:
        queue: WorkQueue[str] = WorkQueue()
        runner = threading.Thread(
            target=run_workers,
            args=(queue, lambda _: Done()),
            kwargs={"workers": 3, "stop": threading.Event(), "poll_s": 0.01},
        )
        runner.start()
        queue.shut_down()
        runner.join(WAIT)
        assert not runner.is_alive()

    def test_needs_at_least_one_worker(self) -> None:
        with pytest.raises(ValueError, match="workers must be >= 1"):
            run_workers(WorkQueue[str](), lambda _: Done(), workers=0, stop=threading.Event())
