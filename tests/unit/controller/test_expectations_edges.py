"""Expectations at their edges: a record lives exactly its TTL, and forgetting a job that has
none is a no-op."""

from __future__ import annotations

from engine.controller.runtime.expectations import ExpectationKey, Expectations

from .conftest import FakeClock

WORKER = ExpectationKey("ns/a", "Worker")


def test_a_record_still_counts_at_exactly_its_ttl(clock: FakeClock) -> None:
    expectations = Expectations(ttl_s=300, clock=clock)
    expectations.expect_creations(WORKER, 1)
    clock.advance(300)
    assert expectations.creations_unseen("ns/a") == 1
    assert not expectations.satisfied(WORKER)


def test_forgetting_a_job_without_records_does_nothing(clock: FakeClock) -> None:
    expectations = Expectations(ttl_s=300, clock=clock)
    expectations.forget("ns/none")
    expectations.expect_creations(WORKER, 1)
    expectations.forget("ns/none")
    assert expectations.creations_unseen("ns/a") == 1
