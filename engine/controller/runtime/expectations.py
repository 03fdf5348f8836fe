"""In-flight creates and deletes per (job, replica type), so a stale cache cannot cause repeats.

The reconcile raises expectations before it creates or deletes pods and does neither while they
are unmet; the watch lowers them as it sees the results. A record expires after a TTL (5 minutes,
as upstream) so that a lost watch event cannot stall a job forever.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from loguru import logger


class ExpectationKey(NamedTuple):
    """Whose expectations: a job key ("namespace/name") and one of its replica types."""

    job: str
    replica_type: str


@dataclass
class _Record:
    raised_at: float
    creations: int = 0
    deletions: set[str] = field(default_factory=set)

    def pending(self) -> bool:
        return self.creations > 0 or bool(self.deletions)


class Expectations:
    """Thread-safe expectation records, one per (job, replica type).

    Raising adds to a live record and restarts its TTL; raising on an expired record starts a
    fresh one (its leftovers were lost events). A create or delete that failed at the API server
    will never be observed: the caller lowers it itself with the matching `*_observed` call.
    """

    def __init__(self, *, ttl_s: float = 300.0, clock: Callable[[], float] = time.monotonic):
        if ttl_s <= 0:
            raise ValueError(f"expectations TTL must be > 0, got {ttl_s}")
        self._ttl = ttl_s
        self._clock = clock
        self._lock = threading.Lock()
        self._records: dict[str, dict[str, _Record]] = {}

    def expect_creations(self, key: ExpectationKey, n: int) -> None:
        """Expect `n` more pods of this key to appear in the watch."""
        if n < 0:
            raise ValueError(f"cannot expect a negative number of creations: {n}")
        with self._lock:
            self._raise(key).creations += n

    def expect_deletions(self, key: ExpectationKey, names: Iterable[str]) -> None:
        """Expect these pods (by name, or uid: one or the other consistently) to go away."""
        with self._lock:
            self._raise(key).deletions.update(names)

    def creation_observed(self, key: ExpectationKey) -> None:
        """One expected pod appeared (or its create failed); never goes below zero."""
        with self._lock:
            record = self._records.get(key.job, {}).get(key.replica_type)
            if record is not None and record.creations > 0:
                record.creations -= 1

    def deletion_observed(self, key: ExpectationKey, name: str) -> None:
        """This pod went away (or its delete failed); a repeated observation counts once."""
        with self._lock:
            record = self._records.get(key.job, {}).get(key.replica_type)
            if record is not None:
                record.deletions.discard(name)

    def satisfied(self, key: ExpectationKey) -> bool:
        """Whether the reconcile may create or delete: nothing pending, or the record expired.

        An expired record with work still pending is dropped and logged once.
        """
        with self._lock:
            record = self._records.get(key.job, {}).get(key.replica_type)
            if record is None or not record.pending():
                return True
            if not self._expired(record):
                return False
            del self._records[key.job][key.replica_type]
            logger.bind(job=key.job, replica_type=key.replica_type).warning(
                f"expectations expired with {record.creations} creations and "
                f"{len(record.deletions)} deletions unobserved"
            )
            return True

    def creations_unseen(self, job_key: str) -> int:
        """How many pods of the job were created and not yet seen in the watch (records past
        their TTL count for nothing): pods that exist although the cache has none of them,
        so the job cannot be judged free of pods yet."""
        with self._lock:
            return sum(record.creations for record in self._records.get(job_key, {}).values()
                       if not self._expired(record))

    def forget(self, job_key: str) -> None:
        """Drop the records of every replica type of a job (the job is gone)."""
        with self._lock:
            self._records.pop(job_key, None)

    def _raise(self, key: ExpectationKey) -> _Record:
        now = self._clock()
        by_type = self._records.setdefault(key.job, {})
        record = by_type.get(key.replica_type)
        if record is None or self._expired(record):
            record = by_type[key.replica_type] = _Record(raised_at=now)
        record.raised_at = now
        return record

    def _expired(self, record: _Record) -> bool:
        return self._clock() - record.raised_at > self._ttl
