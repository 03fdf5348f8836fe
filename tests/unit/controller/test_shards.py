"""Shards: the stable hash that splits jobs among shards, and the gate that lets a reconcile
run only in a shard this replica holds (and tells when a shard given up has no work left).
"""

from __future__ import annotations

import threading
import zlib
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.controller.coordination.shards import ShardGate, shard_of
from engine.controller.reconcile.children import JobKey
from tests.polling import eventually

WAIT = 10.0  # generous bound for a thread to finish; never asserted as a duration


def key_in(gate: ShardGate, shard: int, *, avoid: frozenset[JobKey] = frozenset()) -> JobKey:
    """A job key whose shard is `shard` (and not one of `avoid`)."""
    for i in range(10_000):
        key = JobKey("TrainJob", "default", f"job-{i}")
        if gate.shard(key) == shard and key not in avoid:
            return key
    raise AssertionError(f"no key found for shard {shard}")


def revoking(gate: ShardGate, shard: int, done: threading.Event) -> threading.Thread:
    """A started thread that closes `shard`, waits until it is idle, then sets `done` (what
    the coordinator does before releasing a shard's lease)."""

    def revoke() -> None:
        gate.close(shard)
        if gate.wait_idle([shard], WAIT):
            done.set()

    thread = threading.Thread(target=revoke, daemon=True)
    thread.start()
    return thread


class TestShardOf:
    def test_is_crc32_of_namespace_slash_name(self) -> None:
        """The hash is pinned: every replica and every release must put a job in the same
        shard, so a change of hash (or of the `namespace/name` text hashed) fails here."""
        assert zlib.crc32(b"default/train-1") == 1286938066
        assert zlib.crc32(b"team-a/resnet-50") == 3474479392
        assert shard_of("default", "train-1", 8) == 2
        assert shard_of("default", "train-1", 1000) == 66
        assert shard_of("team-a", "resnet-50", 8) == 0
        assert shard_of("ns", "x", 1000) == 3771222086 % 1000 == 86

    def test_namespace_and_name_are_not_interchangeable(self) -> None:
        """The separator keeps `a/bc` and `ab/c` apart from a plain concatenation."""
        assert shard_of("a", "bc", 1000) == zlib.crc32(b"a/bc") % 1000
        assert shard_of("ab", "c", 1000) == zlib.crc32(b"ab/c") % 1000
        assert shard_of("a", "bc", 1000) != shard_of("ab", "c", 1000)

    def test_one_shard_holds_every_job(self) -> None:
        """With a single shard every job is in shard 0."""
        assert {shard_of("ns", f"job-{i}", 1) for i in range(100)} == {0}

    def test_spreads_jobs_evenly(self) -> None:
        """10,000 jobs over 8 shards: every shard gets within 20% of the mean."""
        counts = Counter(
            shard_of(f"team-{i % 13}", f"train-{i}", 8) for i in range(10_000)
        )
        assert set(counts) == set(range(8))
        mean = 10_000 / 8
        for shard, n in counts.items():
            assert 0.8 * mean <= n <= 1.2 * mean, (shard, n)

    @given(namespace=st.text(), name=st.text(), count=st.integers(min_value=1, max_value=4096))
    def test_in_range_and_deterministic(self, namespace: str, name: str, count: int) -> None:
        """For any text and any count, the shard is one of 0..count-1 and always the same."""
        shard = shard_of(namespace, name, count)
        assert 0 <= shard < count
        assert shard_of(namespace, name, count) == shard
        assert shard == zlib.crc32(f"{namespace}/{name}".encode()) % count


class TestShardGate:
    def test_needs_at_least_one_shard(self) -> None:
        """A gate of zero (or fewer) shards is refused."""
        with pytest.raises(ValueError):
            ShardGate(0)
        with pytest.raises(ValueError):
            ShardGate(-3)

    def test_shard_of_a_key_uses_the_gates_count(self) -> None:
        """A key's shard is shard_of its namespace and name (the kind does not matter)."""
        gate = ShardGate(8)
        assert gate.shard(JobKey("TrainJob", "default", "train-1")) == 2
        assert gate.shard(JobKey("OtherJob", "default", "train-1")) == 2

    def test_nothing_is_held_at_first(self) -> None:
        """A new gate holds no shard, so no reconcile may start."""
        gate = ShardGate(4)
        assert gate.held == frozenset()
        assert gate.enter(JobKey("TrainJob", "default", "train-1")) is None

    def test_enter_in_a_shard_not_held_is_refused(self) -> None:
        """Holding some shards admits only the jobs of those shards."""
        gate = ShardGate(4)
        key = key_in(gate, 1)
        gate.grant(0)
        gate.grant(2)
        assert gate.enter(key) is None
        assert not gate.holds(1)

    def test_grant_then_enter_gives_the_shard(self) -> None:
        """After a grant a job of that shard may enter, and `enter` says which shard."""
        gate = ShardGate(4)
        key = key_in(gate, 3)
        gate.grant(3)
        assert gate.holds(3)
        assert gate.held == frozenset({3})
        assert gate.enter(key) == 3
        gate.leave(3)
        assert gate.enter(key) == 3  # still held: leaving does not give the shard up
        gate.leave(3)

    @pytest.mark.parametrize("shard", [-1, 4, 100])
    def test_grant_out_of_range_is_refused(self, shard: int) -> None:
        """Only shards 0..count-1 can be granted."""
        gate = ShardGate(4)
        with pytest.raises(ValueError):
            gate.grant(shard)
        assert gate.held == frozenset()

    def test_closing_an_idle_shard_leaves_nothing_to_wait_for(self) -> None:
        """An idle (or not held) shard closed is idle at once."""
        gate = ShardGate(4)
        gate.grant(1)
        gate.close(1)
        gate.close(2)
        assert gate.held == frozenset()
        assert not gate.busy(1)
        assert gate.wait_idle([1, 2], 0)

    def test_busy_while_a_reconcile_is_in_the_shard(self) -> None:
        """`busy` tells a closed shard still has work; `wait_idle` times out on it."""
        gate = ShardGate(4)
        key = key_in(gate, 2)
        gate.grant(2)
        assert gate.enter(key) == 2
        gate.close(2)
        assert gate.busy(2)
        assert not gate.wait_idle([2], 0.01)
        gate.leave(2)
        assert not gate.busy(2)

    def test_a_closed_shard_is_idle_once_the_reconcile_in_flight_left(self) -> None:
        """A closed shard is idle only once the reconcile already in it has left, and from
        the moment it is closed no new reconcile enters it."""
        gate = ShardGate(4)
        key = key_in(gate, 2)
        other = key_in(gate, 2, avoid=frozenset({key}))
        gate.grant(2)
        entered, finish, revoked = threading.Event(), threading.Event(), threading.Event()
        admitted_after_revoke: list[int | None] = []

        def reconcile() -> None:
            shard = gate.enter(key)
            assert shard == 2
            entered.set()
            finish.wait(WAIT)
            gate.leave(shard)

        worker = threading.Thread(target=reconcile, daemon=True)
        worker.start()
        revoker: threading.Thread | None = None
        try:
            assert entered.wait(WAIT)
            revoker = revoking(gate, 2, revoked)
            eventually(lambda: not gate.holds(2))  # the revoke has begun
            admitted_after_revoke.append(gate.enter(other))
            admitted_after_revoke.append(gate.enter(key))
            assert admitted_after_revoke == [None, None]
            assert not revoked.is_set()  # the reconcile is still in the shard
            assert revoker.is_alive()
        finally:
            finish.set()
            worker.join(WAIT)
            if revoker is not None:
                revoker.join(WAIT)
        assert not worker.is_alive()
        assert revoker is not None
        assert not revoker.is_alive()
        assert revoked.is_set()
        assert gate.held == frozenset()

    def test_a_closed_shard_is_idle_once_every_reconcile_left(self) -> None:
        """With two reconciles in the shard, it is idle only after both left."""
        gate = ShardGate(4)
        key = key_in(gate, 0)
        gate.grant(0)
        first, second = gate.enter(key), gate.enter(key)
        assert first == second == 0
        revoked = threading.Event()
        revoker = revoking(gate, 0, revoked)
        try:
            eventually(lambda: not gate.holds(0))
            gate.leave(0)
            assert not revoked.is_set()  # one reconcile is still in the shard
            assert revoker.is_alive()
        finally:
            gate.leave(0)
            revoker.join(WAIT)
        assert not revoker.is_alive()
        assert revoked.is_set()

    def test_work_in_other_shards_does_not_keep_a_shard_busy(self) -> None:
        """Work in another shard does not hold up giving this one up."""
        gate = ShardGate(4)
        busy = key_in(gate, 1)
        gate.grant(1)
        gate.grant(3)
        assert gate.enter(busy) == 1
        done = threading.Event()
        revoker = revoking(gate, 3, done)
        try:
            revoker.join(WAIT)
            assert done.is_set()
            assert gate.held == frozenset({1})
        finally:
            gate.leave(1)
            revoker.join(WAIT)

    def test_a_revoked_shard_can_be_granted_again(self) -> None:
        """A shard given up and later taken again admits work again."""
        gate = ShardGate(4)
        key = key_in(gate, 2)
        gate.grant(2)
        gate.close(2)
        assert gate.enter(key) is None
        gate.grant(2)
        assert gate.enter(key) == 2
        gate.leave(2)
