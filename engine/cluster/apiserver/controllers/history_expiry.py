"""History expiry: the watch history drains once the cluster goes quiet.

The watch hub drops a type's aged changes when that type is written again; a type
nobody writes any more would keep its last burst of changes (and the old and deleted
versions they hold alive) for ever. This sweeper arms one timer for the moment the
oldest change left ages out, at most once a second, and has the hub prune every
type then. A quiet server with an empty history arms nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.cluster.apiserver.storage.objects import Change

if TYPE_CHECKING:
    from engine.cluster.apiserver.registry.store import Store

# A burst of changes ages out in one sweep, not one timer each.
_SWEEP_INTERVAL = 1.0


class HistoryExpiry:
    """Prunes the watch history of every type as its changes pass the age bound."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._armed = False
        self._last_sweep = float("-inf")
        store.table.listen(self._on_change)

    def _on_change(self, _change: Change) -> None:
        if not self._armed:
            self._arm(self._store.clock() + self._store.hub.max_age)

    def _arm(self, at: float) -> None:
        if not self._store.hub.max_age:
            return
        self._armed = True
        at = max(at, self._last_sweep + _SWEEP_INTERVAL)
        self._store.reactor.later(at - self._store.clock(), self._sweep)

    def _sweep(self) -> None:
        self._armed = False
        self._last_sweep = self._store.clock()
        due = self._store.hub.prune()
        if due is not None:
            self._arm(due)
