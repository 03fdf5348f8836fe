"""Expectations at their edges: a record lives exactly its TTL (five minutes unless told),
which TTLs and counts are taken, what an expiry logs, and forgetting a job that has none."""

from __future__ import annotations

from typing import Any

import pytest

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


def test_records_live_five_minutes_by_default(clock: FakeClock) -> None:
    expectations = Expectations(clock=clock)
    expectations.expect_creations(WORKER, 1)
    clock.advance(300)
    assert not expectations.satisfied(WORKER)
    clock.advance(0.5)
    assert expectations.satisfied(WORKER)


def test_any_positive_ttl_is_taken_and_none_other(clock: FakeClock) -> None:
    assert Expectations(ttl_s=0.5, clock=clock) is not None
    for ttl in (0, -1):
        with pytest.raises(ValueError, match=f"expectations TTL must be > 0, got {ttl}"):
            Expectations(ttl_s=ttl, clock=clock)


def test_expecting_no_creations_is_allowed_and_satisfied(clock: FakeClock) -> None:
    expectations = Expectations(ttl_s=300, clock=clock)
    expectations.expect_creations(WORKER, 0)
    assert expectations.satisfied(WORKER)


def test_an_expired_record_with_work_pending_is_logged_once_for_its_job_and_type(
    clock: FakeClock, records: list[dict[str, Any]]
) -> None:
    expectations = Expectations(ttl_s=300, clock=clock)
    expectations.expect_creations(WORKER, 2)
    expectations.expect_deletions(WORKER, ["a-worker-0"])
    clock.advance(301)
    assert expectations.satisfied(WORKER) and expectations.satisfied(WORKER)
    # Only the keys bound here: a logging set-up earlier in the process may add its own.
    bound = ("job", "replica_type")
    assert [(r["level"].name, {k: r["extra"].get(k) for k in bound}, r["message"])
            for r in records] == [
        ("WARNING", {"job": "ns/a", "replica_type": "Worker"},
         "expectations expired with 2 creations and 1 deletions unobserved"),
    ]
