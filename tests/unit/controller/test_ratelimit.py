"""The client's token bucket: a burst goes at once, then one request per 1/qps, and
concurrent callers queue up behind each other's reservations."""

from __future__ import annotations

import pytest

from engine.kube.ratelimit import TokenBucket
from tests.unit.controller.conftest import FakeClock


def test_burst_then_qps_when_callers_wait_in_turn(clock: FakeClock) -> None:
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock.advance(seconds)

    bucket = TokenBucket(2, 3, clock=clock, sleep=sleep)
    for _ in range(5):
        bucket.take()
    assert slept == [0.5, 0.5]


def test_reservations_queue_up_when_nobody_has_slept_yet(clock: FakeClock) -> None:
    slept: list[float] = []
    bucket = TokenBucket(2, 3, clock=clock, sleep=slept.append)
    for _ in range(6):
        bucket.take()
    assert slept == [0.5, 1.0, 1.5]


def test_idle_time_refills_up_to_the_burst_only(clock: FakeClock) -> None:
    slept: list[float] = []
    bucket = TokenBucket(10, 2, clock=clock, sleep=slept.append)
    bucket.take()
    bucket.take()
    clock.advance(60)
    for _ in range(3):
        bucket.take()
    assert slept == [0.1]


@pytest.mark.parametrize(("qps", "burst"), [(0, 1), (-1, 1), (1, 0)])
def test_rejects_a_bucket_that_could_never_serve(qps: float, burst: int) -> None:
    with pytest.raises(ValueError, match="qps must be positive"):
        TokenBucket(qps, burst)


def test_infinite_qps_never_waits(clock: FakeClock) -> None:
    slept: list[float] = []
    bucket = TokenBucket(float("inf"), 1, clock=clock, sleep=slept.append)
    for _ in range(1000):
        bucket.take()
    assert slept == []
