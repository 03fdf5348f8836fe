"""Watch: a bounded history of changes per resource type, and the watchers that follow it.

A watch may resume from any resourceVersion whose later changes are all still
in the history; older ones are answered `410 Expired` so the client relists,
as a real API server does once etcd has compacted. The bound is a number of
changes per resource type (`DEFAULT_HISTORY`, configurable per server). The
same history lets a paginated list stay consistent across its pages.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterable

from engine.cluster.apiserver.errors import gone
from engine.cluster.apiserver.storage.objects import Change, Entry, Obj, ObjectTable, TypeKey

DEFAULT_HISTORY = 10_000

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
    __slots__ = ("changes", "start_rv", "watchers")

    def __init__(self, start_rv: int) -> None:
        self.changes: deque[Change] = deque()
        self.start_rv = start_rv  # every change after this resourceVersion is in `changes`
        self.watchers: set[Watcher] = set()


class WatchHub:
    """The change history of every type and the watchers subscribed to it."""

    def __init__(self, table: ObjectTable, *, capacity: int = DEFAULT_HISTORY) -> None:
        if capacity < 1:
            raise ValueError("the watch history must keep at least one change per type")
        self._table = table
        self._capacity = capacity
        self._birth_rv = table.rv
        self._histories: dict[TypeKey, _History] = {}
        self._subscribe_hooks: list[Callable[[Watcher], None]] = []
        table.listen(self._on_change)

    def _history(self, key: TypeKey) -> _History:
        history = self._histories.get(key)
        if history is None:
            history = self._histories[key] = _History(self._birth_rv)
        return history

    def _on_change(self, change: Change) -> None:
        history = self._history(change.key)
        if len(history.changes) >= self._capacity:
            history.start_rv = history.changes.popleft().rv
        history.changes.append(change)
        for watcher in list(history.watchers):
            watcher.offer(change)

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
            history.changes.clear()
            history.start_rv = rv

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
