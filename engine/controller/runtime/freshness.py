"""Read-your-writes for the job cache: do not reconcile a job from a copy older than our write.

After the engine writes a job (its status, its finalizer), the watch cache
shows the old copy until the event arrives. A reconcile from that copy would
replay the state it had left (e.g. delete the pod it just re-created), so the
reconcile waits until the cache holds the version it wrote. Entries expire, so
a lost watch event cannot stall a job.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

_RECENT = 8
"""Versions of a job remembered as seen, for a watch event that beats the write's reply."""


class WrittenVersions:
    """The resourceVersion of the engine's last write per job, until the cache shows it."""

    def __init__(self, *, ttl_s: float = 10.0, clock: Callable[[], float] = time.monotonic):
        self._ttl = ttl_s
        self._clock = clock
        self._lock = threading.Lock()
        self._versions: dict[str, tuple[str, float]] = {}
        self._recently_seen: dict[str, deque[str]] = {}
        self._waiting: set[str] = set()
        """Jobs a reconcile was put off for, until the cache shows the engine's write: the
        watch event then queues the job (as work in progress, ahead of new arrivals)."""

    def wrote(self, job_id: str, resource_version: str) -> None:
        """Remember that the engine's write of this job produced `resource_version`."""
        with self._lock:
            if resource_version in self._recently_seen.get(job_id, ()):
                return  # its watch event came before the write call returned
            self._versions[job_id] = (resource_version, self._clock())

    def seen(self, job_id: str, resource_version: str) -> bool:
        """The cache now holds this version of the job (called by the watch handler); whether
        it is the engine's own last write and no reconcile waits for it (the reconcile that
        wrote it already acted on it, so it needs no reconcile of its own)."""
        with self._lock:
            recent = self._recently_seen.setdefault(job_id, deque(maxlen=_RECENT))
            recent.append(resource_version)
            entry = self._versions.get(job_id)
            waited = job_id in self._waiting
            self._waiting.discard(job_id)
            if entry is not None and entry[0] == resource_version:
                del self._versions[job_id]
                return not waited
            return False

    def caught_up(self, job_id: str, cached_version: str) -> bool:
        """Whether the cached copy is (at least) what the engine last wrote; when not, the
        watch event of the write is owed a reconcile (see `seen`)."""
        with self._lock:
            entry = self._versions.get(job_id)
            if entry is None or entry[0] == cached_version:
                self._versions.pop(job_id, None)
                return True
            if self._clock() - entry[1] > self._ttl:
                del self._versions[job_id]
                return True
            self._waiting.add(job_id)
            return False

    def forget(self, job_id: str) -> None:
        """The job is gone."""
        with self._lock:
            self._versions.pop(job_id, None)
            self._recently_seen.pop(job_id, None)
            self._waiting.discard(job_id)


class ReleasedFinalizers:
    """Finalizers the engine removed, until the cache shows the object without them.

    A reconcile right after a release reads the cached copy from before it and would
    send the same removal again, which the server refuses (its `test` no longer holds).
    Entries expire, so a lost watch event costs one refused request, not a stuck object.
    """

    def __init__(self, *, ttl_s: float = 30.0, clock: Callable[[], float] = time.monotonic):
        self._ttl = ttl_s
        self._clock = clock
        self._lock = threading.Lock()
        self._released: dict[tuple[str, str], tuple[str, float]] = {}

    def released(self, uid: str, finalizer: str, resource_version: str) -> None:
        """The engine's patch removed `finalizer` from the object; the answer had this version."""
        now = self._clock()
        with self._lock:
            if len(self._released) > 1024:
                self._released = {key: entry for key, entry in self._released.items()
                                  if now - entry[1] <= self._ttl}
            self._released[(uid, finalizer)] = (resource_version, now)

    def pending(self, uid: str, finalizer: str, cached_version: str) -> bool:
        """Whether the cached copy (at `cached_version`) predates our removal of `finalizer`."""
        with self._lock:
            entry = self._released.get((uid, finalizer))
            if entry is None:
                return False
            if entry[0] == cached_version or self._clock() - entry[1] > self._ttl:
                del self._released[(uid, finalizer)]
                return False
            return True
