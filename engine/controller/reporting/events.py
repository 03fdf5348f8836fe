"""Events on jobs, posted by a background thread and aggregated the way Kubernetes does.

Reconcile must never wait for, or fail because of, an Event: `record` only enqueues. Repeats
are folded like client-go's EventCorrelator (an identical event bumps the count of the one
already posted; a burst of distinct messages for one reason collapses into a combined event),
so a flapping job cannot flood the API server or the output of `kubectl describe`.
While the API server cannot be reached, the event being posted is retried with back-off
until it can (quietly: the client's `ApiHealth` says so once) and the rest wait in the
queue; only a full queue or stopping drops events, counted and said. `POSTERS` threads
post, each for its share of the objects.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, Literal, Protocol, TypeVar

from loguru import logger

from engine.kube.errors import (
    AlreadyExists,
    ApiError,
    Conflict,
    Forbidden,
    NotFound,
    Unavailable,
)
from engine.kube.outage import unreachable
from engine.kube.refusals import RefusalKind, classify
from engine.kube.resources import EVENTS, Resource
from engine.kube.timestamps import format_time

MAX_DISTINCT_MESSAGES = 10
"""Distinct messages of one (object, type, reason) that get their own Event within the window."""

COMBINED_PREFIX = "(combined from similar events): "

_CACHE_SIZE = 4096
"""Event series remembered at most (client-go's LRU size); the least recently used go first."""

_TRIES = 3
_TRANSIENT_TRIES = 10
"""Tries of a post the server answered 429 or 5xx (client-go retries such a request up to
10 times); a name clash or a conflict gets `_TRIES`."""
_RETRY_DELAY_S = 0.25
"""First wait before retrying a post the server could not take (doubles per try)."""
_RETRY_CAP_S = 5.0
"""Longest wait between posts to a server that cannot be reached (tried until it can)."""

POSTERS = 4
"""Threads posting events at once. An object's events always go through the same one, so
they are posted (and counted) in order; one object's slow or retried post holds up only
the objects that share its thread, and the queue drains several times faster (what is
still queued when the process is killed is lost)."""

_DROP_LOG_EVERY = 1000
"""A full queue logs its first drop and then every this many, not every single one."""

EventType = Literal["Normal", "Warning"]

K = TypeVar("K")
V = TypeVar("V")


class EventClient(Protocol):
    """The part of `KubeClient` the recorder uses."""

    def create(
        self, res: Resource, body: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]: ...

    def patch(
        self, res: Resource, name: str, body: Any, *, namespace: str | None = None,
        patch_type: Literal["merge", "json", "strategic"] = "merge",
        subresource: str | None = None,
    ) -> dict[str, Any]: ...


@dataclass(frozen=True)
class EventStats:
    """The recorder's counters, for the metrics module to export."""

    recorded: int
    """Events accepted into the queue."""
    created: int
    """Event objects created on the server."""
    aggregated: int
    """Events folded into an existing Event object (a count/lastTimestamp patch)."""
    dropped: int
    """Events dropped unposted: queue full, recorder stopped, or not a valid event."""
    failed: int
    """Events the server refused or that still failed after every retry."""


@dataclass(frozen=True)
class RecordedEvent:
    """An event as it was recorded, for listeners (e.g. `up`'s live lines)."""

    kind: str
    namespace: str
    name: str
    type: EventType
    reason: str
    message: str
    replica: str | None
    """The replica it is about (`Worker-1`), None for the object as a whole."""


EventListener = Callable[[RecordedEvent], None]
"""Called in the recording thread for every valid event: it must return at once."""


@dataclass(frozen=True)
class _Involved:
    api_version: str
    kind: str
    name: str
    namespace: str
    uid: str


@dataclass(frozen=True)
class _Pending:
    involved: _Involved
    type: EventType
    reason: str
    message: str
    at: float


@dataclass
class _Series:
    """One Event object on the server and how often it has been counted."""

    namespace: str
    name: str
    count: int
    first_timestamp: str


@dataclass
class _Group:
    """Distinct messages seen recently for one (object, type, reason)."""

    messages: set[str] = field(default_factory=set)


class _RecentCache(Generic[K, V]):
    """Entries used within the last `ttl` seconds, at most `maxsize` (least recent go first)."""

    def __init__(self, ttl: float, maxsize: int) -> None:
        self._ttl = ttl
        self._maxsize = maxsize
        self._entries: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def get(self, key: K, now: float) -> V | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if now - entry[0] > self._ttl:
            del self._entries[key]
            return None
        return entry[1]

    def put(self, key: K, value: V, now: float) -> None:
        self._entries[key] = (now, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self._maxsize:
            self._entries.popitem(last=False)


SeriesKey = tuple[str, str, str, str | None]
"""(object uid, type, reason, message); message None is the combined series."""


class EventRecorder:
    """Posts Events for objects from a background thread; `record` never blocks or raises."""

    def __init__(
        self,
        client: EventClient,
        *,
        component: str = "jobmachine",
        host: str | None = None,
        aggregation_window_s: float = 600,
        queue_size: int = 10000,
        posters: int = POSTERS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`queue_size`: events waiting to be posted at most (more are dropped)."""
        if aggregation_window_s <= 0 or queue_size < 1 or posters < 1:
            raise ValueError("aggregation_window_s must be positive, queue_size and posters "
                             "at least 1")
        self._client = client
        self._component = component
        self._host = host
        self._clock = clock
        self._queue_size = queue_size
        self._queues: list[queue.Queue[_Pending | None]] = [
            queue.Queue() for _ in range(posters)]
        self._state = threading.Lock()
        """Guards the series and group caches and the name counter, shared by the posters."""
        self._groups: _RecentCache[tuple[str, str, str], _Group] = _RecentCache(
            aggregation_window_s, _CACHE_SIZE
        )
        self._series: _RecentCache[SeriesKey, _Series] = _RecentCache(
            aggregation_window_s, _CACHE_SIZE
        )
        self._last_name_ns = 0
        self._progress = threading.Condition()
        self._enqueued = 0
        self._handled = 0
        self._counts = dict.fromkeys(("created", "aggregated", "dropped", "failed"), 0)
        self._closed = False
        self._abandon = threading.Event()
        self._threads: list[threading.Thread] = []
        self._listeners: list[EventListener] = []
        self._log = logger.bind(component=component)

    def add_listener(self, listener: EventListener) -> None:
        """Have `listener` told of every valid event recorded from now on (posted or not)."""
        self._listeners.append(listener)

    def record(
        self, involved: Mapping[str, Any], *, type: EventType, reason: str, message: str,
        replica: str | None = None,
    ) -> None:
        """Queue an Event about `involved` (a whole object); dropped with a log when full.

        `replica` names the replica it is about, for listeners only (the Event's message
        names it for people).
        """
        try:
            pending = _Pending(_involved(involved), type, reason, message, self._clock())
            if type not in ("Normal", "Warning"):
                raise ValueError(f"event type must be Normal or Warning, not {type!r}")
            if not reason:
                raise ValueError("an event needs a reason")
        except Exception as exc:
            self._log.error("dropping an event that cannot be posted: {}", exc)
            self._count("dropped")
            return
        self._tell_listeners(pending, replica)
        with self._progress:
            if self._closed:
                self._count_locked("dropped")
                return
            if self._enqueued - self._handled >= self._queue_size:
                self._count_locked("dropped")
                if self._counts["dropped"] % _DROP_LOG_EVERY == 1:
                    self._log.bind(namespace=pending.involved.namespace).warning(
                        "event queue full: dropped {} {} on {} ({} dropped so far)",
                        type, reason, pending.involved.name, self._counts["dropped"],
                    )
                return
            self._queues[hash(pending.involved.uid) % len(self._queues)].put_nowait(pending)
            self._enqueued += 1

    def tell(
        self, involved: Mapping[str, Any], *, type: EventType, reason: str, message: str
    ) -> None:
        """Tell the listeners of what happened to `involved` without posting an Event (a
        state change its kind's controller would not announce)."""
        if reason and type in ("Normal", "Warning"):
            self._tell_listeners(
                _Pending(_involved(involved), type, reason, message, self._clock()), None)

    def _tell_listeners(self, pending: _Pending, replica: str | None) -> None:
        if not self._listeners:
            return
        involved = pending.involved
        event = RecordedEvent(involved.kind, involved.namespace, involved.name, pending.type,
                              pending.reason, pending.message, replica)
        for listener in self._listeners:
            try:
                listener(event)
            except Exception:
                self._log.exception("an event listener failed")

    def start(self) -> None:
        """Start the threads that post queued events."""
        if self._threads:
            raise RuntimeError("the event recorder was already started")
        self._threads = [
            threading.Thread(target=self._run, args=(posting,), daemon=True,
                             name=f"event-recorder-{number}")
            for number, posting in enumerate(self._queues)]
        for thread in self._threads:
            thread.start()

    @property
    def pending(self) -> int:
        """Events recorded and not yet handled (posted, folded or dropped)."""
        with self._progress:
            return self._enqueued - self._handled

    def stop(self, *, flush_timeout_s: float = 5, flush_client: EventClient | None = None
             ) -> None:
        """Post what is queued (for up to `flush_timeout_s`), then stop; later events drop.

        `flush_client` posts what is left instead of the recorder's own client: at shutdown
        the steady-state rate limit may be too slow to post the queue within the grace.
        """
        with self._progress:
            if flush_client is not None:
                self._client = flush_client
            self._closed = True
        if not self._threads:
            return
        deadline = time.monotonic() + flush_timeout_s
        for posting in self._queues:
            posting.put(None)
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        if any(thread.is_alive() for thread in self._threads):
            self._abandon.set()
            with self._progress:
                left = self._enqueued - self._handled
            self._log.error(
                "event recorder stopping: {} events not posted within {:g}s (is the API server "
                "reachable?); they are dropped", left, flush_timeout_s)
            for thread in self._threads:
                thread.join(flush_timeout_s)

    def flush(self, timeout_s: float) -> bool:
        """Wait until every event recorded so far was handled (posted or given up)."""
        with self._progress:
            target = self._enqueued
            return self._progress.wait_for(lambda: self._handled >= target, timeout_s)

    def stats(self) -> EventStats:
        """A snapshot of the counters."""
        with self._progress:
            return EventStats(recorded=self._enqueued, **self._counts)

    def _run(self, posting: queue.Queue[_Pending | None]) -> None:
        while True:
            pending = posting.get()
            if pending is None:
                return
            batch, last = [pending], False
            if self._closed:
                batch, last = self._drained(posting, batch)
            for one, repeats in _folded(batch):
                try:
                    if self._abandon.is_set():
                        self._count("dropped")
                    else:
                        self._post(one, repeats)
                except Exception:
                    self._log.exception("posting an event failed unexpectedly")
                    self._count("failed")
            with self._progress:
                self._handled += len(batch)
                self._progress.notify_all()
            if last:
                return

    def _drained(self, posting: queue.Queue[_Pending | None], batch: list[_Pending]
                 ) -> tuple[list[_Pending], bool]:
        """Stopping: everything queued after `batch`, so identical events are posted once with
        their count (fewer requests fit the grace period); whether the queue's end was met."""
        while True:
            try:
                pending = posting.get_nowait()
            except queue.Empty:
                return batch, False
            if pending is None:
                return batch, True
            batch.append(pending)

    def _post(self, pending: _Pending, repeats: int = 1) -> None:
        with self._state:
            key, message = self._correlate(pending)
            series = self._series.get(key, pending.at)
        timestamp = format_time(datetime.fromtimestamp(pending.at, UTC))
        try:
            if series is not None and self._patch(series, message, timestamp, repeats):
                series.count += repeats
                with self._state:
                    self._series.put(key, series, pending.at)
                self._count("aggregated")
                return
            count = repeats if series is None else series.count + repeats
            first = timestamp if series is None else series.first_timestamp
            created = self._create(pending, message, count, first, timestamp)
        except ApiError as exc:
            self._log.bind(
                namespace=pending.involved.namespace, name=pending.involved.name
            ).log("DEBUG" if _expected(exc) else "WARNING",
                  "could not post event {} ({}): {}", pending.reason, message, exc)
            self._count("failed")
            return
        with self._state:
            self._series.put(key, created, pending.at)
        self._count("created")

    def _correlate(self, pending: _Pending) -> tuple[SeriesKey, str]:
        """Which series the event belongs to, and the message it is posted with."""
        involved = pending.involved
        group_key = (involved.uid, pending.type, pending.reason)
        group = self._groups.get(group_key, pending.at) or _Group()
        self._groups.put(group_key, group, pending.at)
        if pending.message in group.messages or len(group.messages) < MAX_DISTINCT_MESSAGES:
            group.messages.add(pending.message)
            return (*group_key, pending.message), pending.message
        return (*group_key, None), COMBINED_PREFIX + pending.message

    def _patch(self, series: _Series, message: str, timestamp: str, repeats: int) -> bool:
        """Count `repeats` more occurrences on the existing Event; False if it is gone."""
        body = {"count": series.count + repeats, "lastTimestamp": timestamp, "message": message}
        try:
            self._with_retries(
                lambda: self._client.patch(
                    EVENTS, series.name, body, namespace=series.namespace
                )
            )
        except NotFound:
            return False
        return True

    def _create(
        self, pending: _Pending, message: str, count: int, first: str, last: str
    ) -> _Series:
        involved = pending.involved
        namespace = involved.namespace or "default"
        reference = {
            "apiVersion": involved.api_version, "kind": involved.kind, "name": involved.name,
            "uid": involved.uid,
        }
        if involved.namespace:
            reference["namespace"] = involved.namespace
        source = {"component": self._component}
        if self._host:
            source["host"] = self._host
        body: dict[str, Any] = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"namespace": namespace},
            "involvedObject": reference, "reason": pending.reason, "message": message,
            "type": pending.type, "source": source, "count": count,
            "firstTimestamp": first, "lastTimestamp": last,
            "reportingComponent": self._component, "reportingInstance": self._host or "",
        }

        def attempt() -> dict[str, Any]:
            body["metadata"]["name"] = self._new_name(involved.name, pending.at)
            return self._client.create(EVENTS, body, namespace)

        self._with_retries(attempt)
        return _Series(namespace, body["metadata"]["name"], count, first)

    def _with_retries(self, call: Callable[[], dict[str, Any]]) -> None:
        """Run `call`; again after a pause on transient errors, at once on a name clash.

        A server that cannot be reached is tried until it can be (or the recorder gives up
        at `stop`); other transient errors (429, 5xx) get `_TRANSIENT_TRIES` tries, conflicts
        and name clashes `_TRIES`.
        (A count bump is a patch without a precondition, so a 409 on it is the server's own
        transient conflict: the same patch is right again.)
        """
        delay = _RETRY_DELAY_S
        for attempt in itertools.count(1):
            try:
                call()
                return
            except AlreadyExists:
                if attempt >= _TRIES:
                    raise
            except Conflict:
                if attempt >= _TRIES or self._abandon.wait(delay):
                    raise
            except Unavailable as exc:
                if (attempt >= _TRANSIENT_TRIES and not unreachable(exc)) or \
                        self._abandon.wait(delay):
                    raise
                delay = min(delay * 2, _RETRY_CAP_S)

    def _new_name(self, object_name: str, at: float) -> str:
        """`<object>.<hex nanoseconds>`, as client-go names events; unique per recorder."""
        with self._state:
            self._last_name_ns = max(self._last_name_ns + 1, int(at * 1e9))
            return f"{object_name}.{self._last_name_ns:x}"

    def _count(self, what: str) -> None:
        with self._progress:
            self._count_locked(what)

    def _count_locked(self, what: str) -> None:
        self._counts[what] += 1


def _expected(exc: ApiError) -> bool:
    """A failed post worth no warning: the server is unreachable (said once elsewhere), or
    the namespace is being deleted (its events go with it; client-go's recorder is as quiet)."""
    return unreachable(exc) or (
        isinstance(exc, Forbidden) and classify(exc).kind is RefusalKind.NAMESPACE_TERMINATING)


def _folded(batch: list[_Pending]) -> list[tuple[_Pending, int]]:
    """Identical events (same object, type, reason and message) as one, the latest, with how
    often it happened; in the order each first happened."""
    found: dict[tuple[str, str, str, str], tuple[_Pending, int]] = {}
    for pending in batch:
        key = (pending.involved.uid, pending.type, pending.reason, pending.message)
        seen = found.get(key)
        found[key] = (pending, 1 if seen is None else seen[1] + 1)
    return list(found.values())


def _involved(obj: Mapping[str, Any]) -> _Involved:
    metadata = obj["metadata"]
    name = metadata["name"]
    if not name:
        raise ValueError("the involved object has no name")
    return _Involved(
        api_version=str(obj.get("apiVersion") or ""),
        kind=str(obj.get("kind") or ""),
        name=str(name),
        namespace=str(metadata.get("namespace") or ""),
        uid=str(metadata.get("uid") or ""),
    )
