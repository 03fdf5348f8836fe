"""Event expiry: kube-apiserver's `--event-ttl` (one hour by default).

Upstream stores each Event under an etcd lease granted at every write, so an
event goes one TTL after its last create or update; nothing else removes
events (they are not owned by the object they name), so without this every
event ever posted would stay. Here each event write queues its deadline; one
timer, armed for the earliest deadline and at most once a second, deletes the
events that were not written again since, through the ordinary delete path
(watchers see DELETED, the journal records the deletion). A write costs one
heap push; a sweep touches only the events that are due.
"""

from __future__ import annotations

import heapq
import itertools
from typing import TYPE_CHECKING

from loguru import logger

from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.registry.builtins import EVENTS
from engine.cluster.apiserver.registry.deletion import DeleteOptions, delete
from engine.cluster.apiserver.registry.writes import parse_timestamp
from engine.cluster.apiserver.storage.objects import Change, Obj

if TYPE_CHECKING:
    from engine.cluster.apiserver.registry.store import Store

DEFAULT_EVENT_TTL = 3600.0
"""Seconds an event lives after its last write (kube-apiserver's `--event-ttl` default)."""

# A burst of events posted together expires in one sweep, not one timer each.
_SWEEP_INTERVAL = 1.0

# (deadline, resourceVersion of the write it times, namespace, name)
_Due = tuple[float, int, str, str]


def last_write(obj: Obj) -> float | None:
    """When a stored event was last written, as far as the object itself records it: the
    latest of its creationTimestamp and its managedFields times, all set from the server's
    clock at the write (an update by a manager stamps its entry). lastTimestamp, eventTime
    and series are left out: the reporting client sets them, from its own clock and not
    necessarily at the write. None when no time can be read."""
    metadata = obj.get("metadata") or {}
    stamps = [metadata.get("creationTimestamp")]
    stamps += [entry.get("time") for entry in metadata.get("managedFields") or ()
               if isinstance(entry, dict)]
    moments = []
    for stamp in stamps:
        try:
            moments.append(parse_timestamp(str(stamp)))
        except ValueError:
            continue
    return max(moments, default=None)


class EventExpiry:
    """Deletes each event `ttl` seconds after its last write; a `ttl` of 0 keeps them."""

    def __init__(self, store: Store, ttl: float) -> None:
        self._store = store
        self._ttl = ttl
        self._due: list[_Due] = []
        self._armed_at: float | None = None
        self._last_sweep = float("-inf")
        self._timers = itertools.count()
        self._timer = -1
        self._log = logger.bind(component="apiserver.events")
        if ttl > 0:
            store.table.listen(self._on_change)

    def resume(self) -> None:
        """Time the events loaded from the data dir from their recorded last write (a server
        that was down does not give them a new lease), or from now when none is recorded."""
        if self._ttl <= 0:
            return
        now = self._store.clock()
        for (namespace, name), entry in self._store.table.bucket(EVENTS.key).entries.items():
            written = last_write(entry.obj)
            deadline = (now if written is None else written) + self._ttl
            rv = int(entry.obj["metadata"]["resourceVersion"])
            self._due.append((deadline, rv, namespace, name))
        heapq.heapify(self._due)
        self._arm()

    def _on_change(self, change: Change) -> None:
        if change.key != EVENTS.key or change.type == "DELETED":
            return
        metadata = change.entry.obj["metadata"]
        deadline = self._store.clock() + self._ttl
        heapq.heappush(self._due, (deadline, change.rv, metadata["namespace"], metadata["name"]))
        self._arm()

    def _arm(self) -> None:
        """Make sure a sweep runs at the earliest deadline (or the next allowed sweep)."""
        if not self._due:
            return
        at = max(self._due[0][0], self._last_sweep + _SWEEP_INTERVAL)
        if self._armed_at is not None and self._armed_at <= at:
            return
        self._armed_at = at
        self._timer = timer = next(self._timers)
        self._store.reactor.later(at - self._store.clock(), lambda: self._sweep(timer))

    def _sweep(self, timer: int) -> None:
        if timer != self._timer:
            return  # replaced by a timer armed for an earlier moment
        self._armed_at = None
        now = self._last_sweep = self._store.clock()
        expired = 0
        while self._due and self._due[0][0] <= now:
            _, rv, namespace, name = heapq.heappop(self._due)
            if self._expire(rv, namespace, name):
                expired += 1
        if expired:
            self._log.debug("{} events expired", expired)
        self._arm()

    def _expire(self, rv: int, namespace: str, name: str) -> bool:
        """Delete the event if it is still at the version this deadline was set for (a later
        write queued a later deadline)."""
        entry = self._store.table.get(EVENTS.key, namespace, name)
        version = str(rv)
        if entry is None or entry.obj["metadata"]["resourceVersion"] != version:
            return False
        try:
            delete(self._store, EVENTS, namespace, name, DeleteOptions(resource_version=version))
        except ApiError as exc:
            self._log.warning("could not delete expired event {}/{}: {}", namespace, name, exc)
            return False
        return True
