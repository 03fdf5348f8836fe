"""Event expiry (`--event-ttl`), stepped with a manual reactor and a fake clock: an event goes
one TTL after its last write, through the delete path, also after a restart."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from engine.cluster.apiserver.controllers.event_expiry import last_write
from engine.cluster.apiserver.core import Core
from engine.cluster.apiserver.registry.builtins import CONFIGMAPS, EVENTS
from engine.cluster.apiserver.storage.objects import Change
from tests.unit.cluster.store_support import ManualReactor, make_core

TTL = 600.0
MERGE = "application/merge-patch+json"


def _event(core: Core, name: str, **extra: Any) -> dict[str, Any]:
    body = {"metadata": {"name": name, **extra},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p"},
            "reason": "Started", "message": "Started container main", "count": 1}
    return core.store.create(EVENTS, "default", body, field_manager="node").entry.obj


def _events(core: Core) -> set[str]:
    return {name for _, name in core.store.table.bucket(EVENTS.key).entries}


def _deletions(core: Core) -> list[str]:
    seen: list[str] = []

    def record(change: Change) -> None:
        if change.type == "DELETED":
            seen.append(f"{change.key[1]}/{change.entry.obj['metadata']['name']}")

    core.store.table.listen(record)
    return seen


def test_an_event_is_deleted_one_ttl_after_it_was_created(reactor: ManualReactor) -> None:
    core = make_core(reactor, event_ttl=TTL)
    deleted = _deletions(core)
    _event(core, "a")
    reactor.advance(TTL - 1)
    assert _events(core) == {"a"}
    reactor.advance(2)
    assert (_events(core), deleted) == (set(), ["events/a"])


def test_an_update_gives_the_event_a_new_ttl(reactor: ManualReactor) -> None:
    core = make_core(reactor, event_ttl=TTL)
    _event(core, "a")
    reactor.advance(TTL / 2)
    core.store.patch(EVENTS, "default", "a", MERGE, b'{"count": 2}', field_manager="node")
    reactor.advance(TTL / 2 + 2)
    assert _events(core) == {"a"}
    reactor.advance(TTL / 2)
    assert _events(core) == set()


def test_events_expire_in_order_and_other_kinds_never(reactor: ManualReactor) -> None:
    core = make_core(reactor, event_ttl=TTL)
    deleted = _deletions(core)
    core.store.create(CONFIGMAPS, "default", {"metadata": {"name": "kept"}})
    for name in ("first", "second", "third"):
        _event(core, name)
        reactor.advance(100)
    reactor.advance(TTL - 300 + 1)
    assert deleted == ["events/first"]
    reactor.advance(TTL)
    assert deleted == ["events/first", "events/second", "events/third"]
    assert core.store.table.get(CONFIGMAPS.key, "default", "kept") is not None


def test_an_event_deleted_and_recreated_lives_from_its_new_creation(
    reactor: ManualReactor,
) -> None:
    core = make_core(reactor, event_ttl=TTL)
    _event(core, "a")
    reactor.advance(TTL / 2)
    core.store.table.remove(EVENTS.key, "default", "a")
    _event(core, "a")
    reactor.advance(TTL / 2 + 2)
    assert _events(core) == {"a"}
    reactor.advance(TTL / 2)
    assert _events(core) == set()


def test_a_ttl_of_zero_keeps_events(reactor: ManualReactor) -> None:
    core = make_core(reactor, event_ttl=0)
    _event(core, "a")
    reactor.advance(10 * 365 * 86400)
    assert _events(core) == {"a"}


def test_an_event_with_a_finalizer_waits_for_it(reactor: ManualReactor) -> None:
    core = make_core(reactor, event_ttl=TTL)
    _event(core, "held", finalizers=["example.com/keep"])
    reactor.advance(TTL + 2)
    held = core.store.table.get(EVENTS.key, "default", "held")
    assert held is not None and held.obj["metadata"].get("deletionTimestamp")
    body = b'{"metadata": {"finalizers": null}}'
    core.store.patch(EVENTS, "default", "held", MERGE, body, field_manager="someone")
    assert _events(core) == set()


def test_the_last_write_is_the_latest_server_stamp() -> None:
    obj = {"metadata": {
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "managedFields": [{"manager": "a", "time": "2026-01-01T00:05:00Z"},
                          {"manager": "b", "time": "2026-01-01T00:02:00Z"}, {"manager": "c"}]},
        "lastTimestamp": "2027-01-01T00:00:00Z"}
    assert last_write(obj) == last_write({"metadata": {
        "creationTimestamp": "2026-01-01T00:05:00Z"}})
    assert last_write({"metadata": {"creationTimestamp": "yesterday"}}) is None


def _with_data_dir(directory: Path, now: float, write: Any = None) -> set[str]:
    """Open a journaled core at `now`, let `write(core, reactor)` write, let the due duties
    run; the events left when it closes."""
    reactor = ManualReactor()
    reactor.now = now

    async def body() -> set[str]:
        core = make_core(reactor, data_dir=directory, event_ttl=TTL)
        if write is not None:
            write(core, reactor)
        reactor.run()
        await core.flushed()
        left = _events(core)
        await core.close()
        return left

    return asyncio.run(body())


def test_events_loaded_from_the_data_dir_expire_by_their_last_write(tmp_path: Path) -> None:
    start = ManualReactor().now

    def post(core: Core, reactor: ManualReactor) -> None:
        _event(core, "old")
        reactor.now += 300
        _event(core, "newer")
        reactor.now += 300
        core.store.patch(EVENTS, "default", "old", MERGE, b'{"count": 2}', field_manager="node")

    assert _with_data_dir(tmp_path, start, post) == {"old", "newer"}
    # Down meanwhile: "newer" was written at start + 300, "old" last at start + 600.
    assert _with_data_dir(tmp_path, start + 300 + TTL - 1) == {"old", "newer"}
    assert _with_data_dir(tmp_path, start + 300 + TTL + 1) == {"old"}
    assert _with_data_dir(tmp_path, start + 600 + TTL + 1) == set()
