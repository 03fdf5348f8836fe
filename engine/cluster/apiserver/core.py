"""The server's state, assembled: registry, object table, store, journal and background duties.

One place decides the start-up order that makes a restart lossless: replay
the journal, compact it, serve the stored CRDs' types, make sure the initial
namespaces, the system PriorityClasses and the default RBAC policy exist
(recreated when deleted, as kube-apiserver's post-start hooks do), give every
namespace its default ServiceAccount and its `kube-root-ca.crt`, then let the
garbage collector, namespace terminator, pod grace periods and event expiry
pick up whatever was pending when the last process died.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from loguru import logger

from engine.cluster.apiserver.auth.rbac_bootstrap import ensure_bootstrap_policy
from engine.cluster.apiserver.controllers.access_controllers import (
    ClusterRoleAggregator,
    DefaultServiceAccounts,
)
from engine.cluster.apiserver.controllers.crd_lifecycle import CrdLifecycle
from engine.cluster.apiserver.controllers.event_expiry import DEFAULT_EVENT_TTL, EventExpiry
from engine.cluster.apiserver.controllers.gc import GarbageCollector
from engine.cluster.apiserver.controllers.grace_periods import GracePeriods
from engine.cluster.apiserver.controllers.history_expiry import HistoryExpiry
from engine.cluster.apiserver.controllers.namespaces import NamespaceTerminator
from engine.cluster.apiserver.controllers.root_ca_publisher import RootCaPublisher
from engine.cluster.apiserver.patch.managed_fields import forget, share_loaded_fields
from engine.cluster.apiserver.patch.write_ownership import SERVER_MANAGER
from engine.cluster.apiserver.registry.builtins import (
    INITIAL_NAMESPACES,
    NAMESPACES,
    PRIORITY_CLASSES,
)
from engine.cluster.apiserver.registry.priority_classes import SYSTEM_CLASSES
from engine.cluster.apiserver.registry.reactor import Reactor
from engine.cluster.apiserver.registry.registry import Registry
from engine.cluster.apiserver.registry.store import Store
from engine.cluster.apiserver.storage.objects import Change, ObjectTable
from engine.cluster.apiserver.storage.persistence import Journal
from engine.cluster.apiserver.storage.watch import DEFAULT_HISTORY, DEFAULT_HISTORY_AGE

DEFAULT_COMPACTION_INTERVAL = 300.0
"""Seconds between compactions of the journal into the snapshot while serving: five
minutes, kube-apiserver's default --etcd-compaction-interval."""


@dataclass
class Core:
    """Everything a request handler needs, and the journal to wait on before answering."""

    registry: Registry
    store: Store
    journal: Journal | None
    _compaction: asyncio.Task[None] | None = field(default=None, repr=False)

    async def flushed(self) -> None:
        """Wait until every write made so far is durable (immediate when memory-only)."""
        if self.journal is not None:
            await self.journal.flushed()

    def compact_every(self, interval_s: float) -> None:
        """Compact the journal into the snapshot every `interval_s` seconds while serving
        (call on the serving loop; 0 or a memory-only server: never), so the data dir
        follows the live objects' size instead of growing with every write."""
        if self.journal is not None and interval_s > 0:
            self._compaction = asyncio.get_running_loop().create_task(
                self._compact_periodically(self.journal, interval_s))

    async def _compact_periodically(self, journal: Journal, interval_s: float) -> None:
        log = logger.bind(component="apiserver.journal")
        while True:
            await asyncio.sleep(interval_s)
            try:
                size = await journal.compact_while_serving(self.store.table)
            except OSError as exc:
                log.warning(f"compacting the journal failed ({exc}); it is tried again in "
                            f"{interval_s:g} s")
                continue
            if size:
                log.info(f"compacted {size} bytes of journal into the snapshot at "
                         f"resourceVersion {self.store.table.rv}")

    async def close(self) -> None:
        if self._compaction is not None:
            self._compaction.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._compaction
        if self.journal is not None:
            await self.journal.close()


def _forget_replaced_managed_fields(change: Change) -> None:
    """The managedFields list a write or a delete left behind is read no more."""
    if change.prev is None:
        return
    before = change.prev.obj["metadata"].get("managedFields")
    after = None if change.type == "DELETED" else change.entry.obj["metadata"].get(
        "managedFields")
    if before is not None and before is not after:
        forget(before)


def open_core(
    reactor: Reactor,
    *,
    data_dir: Path | None = None,
    history: int = DEFAULT_HISTORY,
    history_age: float = DEFAULT_HISTORY_AGE,
    event_ttl: float = DEFAULT_EVENT_TTL,
    clock: Callable[[], float] = time.time,
    root_ca: str = "",
) -> Core:
    """Build the state (from `data_dir` when given). With a data dir this must run on the
    event loop that will serve requests, since the journal flushes on it. The watch history
    keeps `history` changes per type, none older than `history_age` seconds. Events are
    deleted `event_ttl` seconds after their last write (0: kept until deleted). `root_ca` is
    the CA certificate (PEM) every namespace's `kube-root-ca.crt` publishes ("" without TLS)."""
    registry = Registry()
    table = ObjectTable()
    journal = Journal(data_dir) if data_dir is not None else None
    if journal is not None:
        journal.load(table)
        share_loaded_fields(entry.obj for key in table.type_keys()
                            for entry in table.bucket(key).entries.values())
        journal.compact(table)
    store = Store(registry, reactor, table=table, history=history, history_age=history_age,
                  clock=clock)
    if journal is not None:
        journal.attach(table)
    table.listen(_forget_replaced_managed_fields)
    crds = CrdLifecycle(store)
    collector = GarbageCollector(store)
    terminator = NamespaceTerminator(store)
    grace = GracePeriods(store)
    events = EventExpiry(store, event_ttl)
    HistoryExpiry(store)
    accounts = DefaultServiceAccounts(store)
    root_ca_publisher = RootCaPublisher(store, root_ca)
    aggregator = ClusterRoleAggregator(store)
    crds.resume()
    for name in INITIAL_NAMESPACES:
        if table.get(NAMESPACES.key, "", name) is None:
            store.create(NAMESPACES, "", {"metadata": {"name": name}}, field_manager=SERVER_MANAGER)
    for system in SYSTEM_CLASSES:
        if table.get(PRIORITY_CLASSES.key, "", system.name) is None:
            store.create(PRIORITY_CLASSES, "", system.as_object(), field_manager=SERVER_MANAGER)
    ensure_bootstrap_policy(store)
    accounts.resume()
    root_ca_publisher.resume()
    aggregator.resume()
    terminator.resume()
    grace.resume()
    events.resume()
    collector.scan()
    return Core(registry, store, journal)
