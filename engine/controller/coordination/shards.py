"""Shards: which replica of the engine runs which jobs.

Jobs are split into a fixed number of shards by a stable hash of their namespace and name, the
same in every replica and every release (CRC-32, not Python's salted `hash`), and known from a
queue key alone: a pod event for a job another replica runs costs no lookup. A replica works on
a job only while it holds the job's shard; the gate below lets a reconcile start only then, and
a shard given up admits no new reconcile, and its lease is released only once the reconciles
already in it have finished, so no write of ours overlaps the next holder's (field notes,
story 9, per shard).
"""

from __future__ import annotations

import threading
import zlib
from collections import Counter
from collections.abc import Iterable

from engine.controller.reconcile.children import JobKey


def shard_of(namespace: str, name: str, count: int) -> int:
    """The shard of the job `namespace/name` among `count` shards."""
    return zlib.crc32(f"{namespace}/{name}".encode()) % count


class ShardGate:
    """The shards this replica holds, and the reconciles in flight in each."""

    def __init__(self, count: int) -> None:
        if count < 1:
            raise ValueError(f"the number of shards must be at least 1, got {count}")
        self.count = count
        self._held: set[int] = set()
        self._busy: Counter[int] = Counter()
        self._cond = threading.Condition()

    def shard(self, key: JobKey) -> int:
        """The shard of a job key."""
        return shard_of(key.namespace, key.name, self.count)

    def holds(self, shard: int) -> bool:
        """Whether this replica holds `shard` now."""
        with self._cond:
            return shard in self._held

    @property
    def held(self) -> frozenset[int]:
        """The shards held now."""
        with self._cond:
            return frozenset(self._held)

    def enter(self, key: JobKey) -> int | None:
        """Begin work on `key`: its shard if held (call `leave` with it when done), else None."""
        shard = self.shard(key)
        with self._cond:
            if shard not in self._held:
                return None
            self._busy[shard] += 1
            return shard

    def leave(self, shard: int) -> None:
        """End work begun by `enter`."""
        with self._cond:
            self._busy[shard] -= 1
            if self._busy[shard] <= 0:
                del self._busy[shard]
                self._cond.notify_all()

    def grant(self, shard: int) -> None:
        """This replica now holds `shard`."""
        if not 0 <= shard < self.count:
            raise ValueError(f"shard {shard} is not one of 0..{self.count - 1}")
        with self._cond:
            self._held.add(shard)

    def close(self, shard: int) -> None:
        """Admit no new reconcile into `shard`; those already in it go on (see `busy`)."""
        with self._cond:
            self._held.discard(shard)

    def busy(self, shard: int) -> bool:
        """Whether reconciles are still in `shard`."""
        with self._cond:
            return self._busy[shard] > 0

    def wait_idle(self, shards: Iterable[int], timeout_s: float) -> bool:
        """Wait up to `timeout_s` until no reconcile is in any of `shards`; whether none is."""
        wanted = set(shards)
        with self._cond:
            return self._cond.wait_for(lambda: not any(self._busy[s] > 0 for s in wanted),
                                       timeout_s)
