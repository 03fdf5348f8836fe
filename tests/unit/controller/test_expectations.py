"""Expectations: raised before acting, lowered by the watch, expiring, forgotten per job."""

from __future__ import annotations

import threading

import pytest

from engine.controller.runtime.expectations import ExpectationKey, Expectations

from .conftest import FakeClock

WORKER = ExpectationKey("ns/a", "Worker")
MASTER = ExpectationKey("ns/a", "Master")
OTHER = ExpectationKey("ns/b", "Worker")


@pytest.fixture
def expectations(clock: FakeClock) -> Expectations:
    return Expectations(ttl_s=300, clock=clock)


class TestCreations:
    def test_unknown_keys_are_satisfied(self, expectations: Expectations) -> None:
        assert expectations.satisfied(WORKER)

    def test_raised_then_lowered_one_by_one(self, expectations: Expectations) -> None:
        expectations.expect_creations(WORKER, 2)
        assert not expectations.satisfied(WORKER)
        expectations.creation_observed(WORKER)
        assert not expectations.satisfied(WORKER)
        expectations.creation_observed(WORKER)
        assert expectations.satisfied(WORKER)

    def test_surplus_observations_do_not_pre_pay_later_creations(
        self, expectations: Expectations
    ) -> None:
        expectations.creation_observed(WORKER)
        expectations.expect_creations(WORKER, 1)
        expectations.creation_observed(WORKER)
        expectations.creation_observed(WORKER)
        expectations.expect_creations(WORKER, 1)
        assert not expectations.satisfied(WORKER)

    def test_raising_adds_to_a_live_record(self, expectations: Expectations) -> None:
        expectations.expect_creations(WORKER, 1)
        expectations.expect_creations(WORKER, 1)
        expectations.creation_observed(WORKER)
        assert not expectations.satisfied(WORKER)

    def test_negative_counts_are_rejected(self, expectations: Expectations) -> None:
        with pytest.raises(ValueError, match="negative"):
            expectations.expect_creations(WORKER, -1)


class TestDeletions:
    def test_a_deletion_observed_twice_counts_once(self, expectations: Expectations) -> None:
        expectations.expect_deletions(WORKER, ["a-worker-0", "a-worker-1"])
        expectations.deletion_observed(WORKER, "a-worker-0")
        expectations.deletion_observed(WORKER, "a-worker-0")
        assert not expectations.satisfied(WORKER)
        expectations.deletion_observed(WORKER, "a-worker-1")
        assert expectations.satisfied(WORKER)

    def test_unexpected_deletions_are_ignored(self, expectations: Expectations) -> None:
        expectations.deletion_observed(WORKER, "stranger")
        expectations.expect_deletions(WORKER, ["a-worker-0"])
        expectations.deletion_observed(WORKER, "stranger")
        assert not expectations.satisfied(WORKER)

    def test_creations_and_deletions_must_both_be_met(self, expectations: Expectations) -> None:
        expectations.expect_creations(WORKER, 1)
        expectations.expect_deletions(WORKER, ["a-worker-3"])
        expectations.creation_observed(WORKER)
        assert not expectations.satisfied(WORKER)
        expectations.deletion_observed(WORKER, "a-worker-3")
        assert expectations.satisfied(WORKER)


class TestScope:
    def test_replica_types_and_jobs_are_independent(self, expectations: Expectations) -> None:
        expectations.expect_creations(WORKER, 1)
        assert expectations.satisfied(MASTER)
        assert expectations.satisfied(OTHER)
        expectations.creation_observed(MASTER)
        assert not expectations.satisfied(WORKER)

    def test_forget_drops_every_replica_type_of_one_job(self, expectations: Expectations) -> None:
        expectations.expect_creations(WORKER, 1)
        expectations.expect_deletions(MASTER, ["a-master-0"])
        expectations.expect_creations(OTHER, 1)
        expectations.forget("ns/a")
        assert expectations.satisfied(WORKER)
        assert expectations.satisfied(MASTER)
        assert not expectations.satisfied(OTHER)


class TestCreationsUnseen:
    def test_counts_every_replica_type_of_the_job_and_no_other(
        self, expectations: Expectations
    ) -> None:
        expectations.expect_creations(WORKER, 2)
        expectations.expect_creations(MASTER, 1)
        expectations.expect_creations(OTHER, 5)
        expectations.creation_observed(WORKER)
        assert expectations.creations_unseen("ns/a") == 2
        assert expectations.creations_unseen("ns/c") == 0

    def test_expired_records_count_for_nothing(
        self, expectations: Expectations, clock: FakeClock
    ) -> None:
        expectations.expect_creations(WORKER, 1)
        clock.advance(301)
        assert expectations.creations_unseen("ns/a") == 0


class TestExpiry:
    def test_unmet_expectations_expire_after_the_ttl(
        self, expectations: Expectations, clock: FakeClock
    ) -> None:
        expectations.expect_creations(WORKER, 1)
        clock.advance(299)
        assert not expectations.satisfied(WORKER)
        clock.advance(2)
        assert expectations.satisfied(WORKER)

    def test_a_raise_after_expiry_starts_fresh(
        self, expectations: Expectations, clock: FakeClock
    ) -> None:
        expectations.expect_creations(WORKER, 3)
        clock.advance(301)
        expectations.expect_creations(WORKER, 1)
        expectations.creation_observed(WORKER)
        assert expectations.satisfied(WORKER)

    def test_raising_restarts_the_ttl(self, expectations: Expectations, clock: FakeClock) -> None:
        expectations.expect_creations(WORKER, 1)
        clock.advance(200)
        expectations.expect_deletions(WORKER, ["a-worker-0"])
        clock.advance(200)
        assert not expectations.satisfied(WORKER)

    def test_ttl_must_be_positive(self) -> None:
        with pytest.raises(ValueError, match="TTL"):
            Expectations(ttl_s=0)


def test_concurrent_raises_and_observations_balance(expectations: Expectations) -> None:
    keys = [ExpectationKey(f"ns/{index}", "Worker") for index in range(4)]

    def churn(key: ExpectationKey) -> None:
        for index in range(500):
            expectations.expect_creations(key, 1)
            expectations.expect_deletions(key, [f"pod-{index}"])
            expectations.creation_observed(key)
            expectations.deletion_observed(key, f"pod-{index}")

    threads = [threading.Thread(target=churn, args=(key,)) for key in keys for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10.0)
    assert all(expectations.satisfied(key) for key in keys)
