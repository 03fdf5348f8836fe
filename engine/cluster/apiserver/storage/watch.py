"""Watch: a bounded history of changes per resource type, and the watchers that follow it.

A watch may resume from any resourceVersion whose later changes are all still
in the history; older ones are answered `410 Expired` so the client relists,
as a real API server does once etcd has compacted. The history is bounded twice:
by a number of changes per resource type (`DEFAULT_HISTORY`) and by age
(`DEFAULT_HISTORY_AGE`, kube-apiserver's watch cache freshness of 75 s), both
configurable per server, except that the last `HISTORY_FLOOR` changes of a type
are kept whatever their age, as kube-apiserver's watch cache keeps its last 100
events (so a client resuming on a quiet cluster is not sent to relist). The count
alone bounds memory only by the size of the objects: a change keeps the version
it wrote alive after the object moved on or was deleted, so a burst of large
objects would be held until 10,000 newer changes of the type pushed it out,
which on a quiet cluster is never. The age lets the history drain to its floor
once the work is done (`HistoryExpiry` sweeps it). The same history lets a
paginated list stay consistent across its pages.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Iterable

from engine.cluster.apiserver.errors import gone
from engine.cluster.apiserver.storage.objects import Change, Entry, Obj, ObjectTable, TypeKey

DEFAULT_HISTORY = 10_000
DEFAULT_HISTORY_AGE = 75.0
"""Seconds a change stays in the history: kube-apiserver's watch cache keeps 75 s of
events (eventFreshDuration); a watch resumed from an older version is answered 410."""
HISTORY_FLOOR = 100
"""Changes per type kept whatever their age (kube-apiserver's watch cache lower bound)."""

Matcher = Callable[[Obj], bool]
Delivery = tuple[str, Entry]  # (event type, object)


def too_old(rv: int, oldest: int) -> Exception:
    return gone(f"too old resource version: {rv} ({oldest})")


def filtered(change: Change, matcher: Matcher) -> Delivery | None:
    """The event a selective watcher sees: objects entering or leaving the selection
    show up as ADDED or DELETED, as with a real API server."""
    now = matcher(change.entry.obj)
    if change.type == "DELETED":
        return ("DELETED", change.entry) if now else None
    before = change.prev is not None and matcher(change.prev.obj)
    if now:
        return ("MODIFIED" if before else "ADDED", change.entry)
    return ("DELETED", change.entry) if before else None


class Watcher:
    """One client's subscription: pending deliveries and a wake-up for the streamer."""

    def __init__(self, hub: WatchHub, key: TypeKey, matcher: Matcher | None, limit: int) -> None:
        self._hub = hub
        self.key = key
        self._matcher = matcher
        self._limit = limit
        self._pending: deque[Delivery] = deque()
        self._wake = asyncio.Event()
        self.closed = False
        self.overflowed = False
        # When set, the watcher closes once this many more events were taken (a fault
        # injected into the stream: the client sees the watch end and resumes).
        self.events_left: int | None = None

    def offer(self, change: Change) -> None:
        if self.closed:
            return
        delivery = (
            (change.type, change.entry)
            if self._matcher is None
            else filtered(change, self._matcher)
        )
        if delivery is None:
            return
        if len(self._pending) >= self._limit:
            self.overflowed = True
            self.close()
            return
        self._pending.append(delivery)
        self._wake.set()

    def prime(self, deliveries: Iterable[Delivery]) -> None:
        self._pending.extend(deliveries)
        if self._pending:
            self._wake.set()

    def take(self) -> list[Delivery]:
        items = list(self._pending)
        self._pending.clear()
        self._wake.clear()
        if self.events_left is not None:
            items = items[: self.events_left]
            self.events_left -= len(items)
            if self.events_left <= 0:
                self.close()
        return items

    async def wait(self, timeout: float) -> None:
        """Return when something is pending, the watcher closed, or `timeout` passed."""
        if self._pending or self.closed:
            return
        try:
            await asyncio.wait_for(self._wake.wait(), timeout)
        except TimeoutError:
            return

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._hub.unsubscribe(self)
            self._wake.set()


class _History:
    __slots__ = ("changes", "stamps", "start_rv", "watchers")

    def __init__(self, start_rv: int) -> None:
        self.changes: deque[Change] = deque()
        self.stamps: deque[float] = deque()  # when each change of `changes` was made
        self.start_rv = start_rv  # every change after this resourceVersion is in `changes`
        self.watchers: set[Watcher] = set()

    def drop_oldest(self) -> None:
        self.start_rv = self.changes.popleft().rv
        self.stamps.popleft()

    def drop_older_than(self, moment: float, floor: int) -> None:
        """Drop the changes made before `moment`, down to the last `floor` ones."""
        while len(self.stamps) > floor and self.stamps[0] < moment:
            self.drop_oldest()

    def next_drop(self, max_age: float, floor: int) -> float | None:
        """When the oldest change may be dropped for its age (None: the floor holds it)."""
        return self.stamps[0] + max_age if len(self.stamps) > floor else None

    def clear(self, rv: int) -> None:
        self.changes.clear()
        self.stamps.clear()
        self.start_rv = rv


class WatchHub:
    """The change history of every type and the watchers subscribed to it."""

    def __init__(
        self,
        table: ObjectTable,
        *,
        capacity: int = DEFAULT_HISTORY,
        max_age: float = DEFAULT_HISTORY_AGE,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`capacity` changes at most per type, none older than `max_age` seconds by
        `clock` (0: no age bound)."""
        if capacity < 1:
            raise ValueError("the watch history must keep at least one change per type")
        if max_age < 0:
            raise ValueError("the watch history's age bound cannot be negative")
        self._table = table
        self._capacity = capacity
        self._max_age = max_age
        self._floor = min(HISTORY_FLOOR, capacity)
        self._clock = clock
        self._birth_rv = table.rv
        self._histories: dict[TypeKey, _History] = {}
        self._subscribe_hooks: list[Callable[[Watcher], None]] = []
        table.listen(self._on_change)

    @property
    def max_age(self) -> float:
        """Seconds a change is kept at most (0: no age bound)."""
        return self._max_age

    def _history(self, key: TypeKey) -> _History:
        history = self._histories.get(key)
        if history is None:
            history = self._histories[key] = _History(self._birth_rv)
        return history

    def _on_change(self, change: Change) -> None:
        history = self._history(change.key)
        now = self._clock()
        if len(history.changes) >= self._capacity:
            history.drop_oldest()
        history.changes.append(change)
        history.stamps.append(now)
        if self._max_age:
            history.drop_older_than(now - self._max_age, self._floor)
        for watcher in list(history.watchers):
            watcher.offer(change)

    def prune(self) -> float | None:
        """Drop every change older than the age bound, of every type, down to each type's
        floor; return when the next one may be dropped (None: none may, or no age bound)."""
        if not self._max_age:
            return None
        now = self._clock()
        due: float | None = None
        for history in self._histories.values():
            history.drop_older_than(now - self._max_age, self._floor)
            expires = history.next_drop(self._max_age, self._floor)
            if expires is not None:
                due = expires if due is None else min(due, expires)
        return due

    def oldest(self, key: TypeKey) -> int:
        """The oldest resourceVersion a watch or a continued list of this type may start from."""
        return self._history(key).start_rv

    def changes_since(self, key: TypeKey, rv: int) -> list[Change]:
        """Every change of the type after `rv`, oldest first; 410 when some were dropped."""
        history = self._history(key)
        if rv < history.start_rv:
            raise too_old(rv, history.start_rv)
        newer: list[Change] = []
        for change in reversed(history.changes):
            if change.rv <= rv:
                break
            newer.append(change)
        newer.reverse()
        return newer

    def subscribe(
        self,
        key: TypeKey,
        *,
        since: int | None,
        matcher: Matcher | None,
        initial: Iterable[Entry] = (),
    ) -> Watcher:
        """A watcher primed with `initial` (as ADDED) or the changes after `since`, then live."""
        watcher = Watcher(self, key, matcher, self._capacity)
        if since is None:
            watcher.prime(("ADDED", entry) for entry in initial)
        else:
            for change in self.changes_since(key, since):
                watcher.offer(change)
        self._history(key).watchers.add(watcher)
        for hook in self._subscribe_hooks:
            hook(watcher)
        return watcher

    def on_subscribe(self, hook: Callable[[Watcher], None]) -> None:
        """Call `hook` with every new watcher (fault injection cuts some of them)."""
        self._subscribe_hooks.append(hook)

    def compact(self) -> None:
        """Forget every stored change, as etcd compaction does: a watch resumed (or a list
        continued) from any earlier resourceVersion is answered 410 Expired."""
        rv = self._table.rv
        self._birth_rv = rv
        for history in self._histories.values():
            history.clear(rv)

    def unsubscribe(self, watcher: Watcher) -> None:
        self._history(watcher.key).watchers.discard(watcher)

    def close_all(self) -> None:
        """End every watch (the server is stopping)."""
        for history in self._histories.values():
            for watcher in list(history.watchers):
                watcher.close()

    def close_type(self, key: TypeKey) -> None:
        """End every watch of a type that stops being served (a deleted CRD)."""
        for watcher in list(self._history(key).watchers):
            watcher.close()
