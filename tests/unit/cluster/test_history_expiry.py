"""The watch history's age bound, stepped with a manual reactor and a fake clock: beyond
the last `HISTORY_FLOOR` changes of a type, changes older than the bound are dropped even
when their type is never written again, so a watch resumed from before them is answered
410 and the versions they held are let go."""

from __future__ import annotations

import pytest

from engine.cluster.apiserver.core import Core
from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.registry.builtins import CONFIGMAPS, SECRETS
from engine.cluster.apiserver.registry.deletion import DeleteOptions, delete
from engine.cluster.apiserver.registry.registry import ResourceType
from engine.cluster.apiserver.storage.objects import ObjectTable
from engine.cluster.apiserver.storage.watch import DEFAULT_HISTORY_AGE, HISTORY_FLOOR, WatchHub
from tests.unit.cluster.store_support import ManualReactor, make_core

AGE = 60.0


def _names(core: Core, rt: ResourceType, since: int) -> list[str]:
    return [c.entry.obj["metadata"]["name"] for c in core.store.hub.changes_since(rt.key, since)]


def _create(core: Core, rt: ResourceType, names: list[str]) -> None:
    for name in names:
        core.store.create(rt, "default", {"metadata": {"name": name}})


def _expired(core: Core, rt: ResourceType, since: int) -> bool:
    try:
        core.store.hub.changes_since(rt.key, since)
    except ApiError as error:
        assert error.code == 410
        return True
    return False


def test_the_bounds_are_kube_apiservers_watch_cache_ones() -> None:
    assert (DEFAULT_HISTORY_AGE, HISTORY_FLOOR) == (75.0, 100)


def test_a_change_older_than_the_bound_is_dropped_at_the_next_write() -> None:
    now = [0.0]
    table = ObjectTable()
    hub = WatchHub(table, max_age=AGE, clock=lambda: now[0])
    for index in range(HISTORY_FLOOR):
        table.put(CONFIGMAPS.key, {"metadata": {"name": f"old-{index}", "namespace": "d"}})
    now[0] = AGE + 1
    table.put(CONFIGMAPS.key, {"metadata": {"name": "new", "namespace": "d"}})
    with pytest.raises(ApiError) as error:
        hub.changes_since(CONFIGMAPS.key, 0)
    assert error.value.code == 410 and "too old resource version: 0 (1)" in error.value.message
    assert len(hub.changes_since(CONFIGMAPS.key, 1)) == HISTORY_FLOOR


def test_a_quiet_type_drains_to_its_floor_once_its_changes_age(reactor: ManualReactor) -> None:
    core = make_core(reactor, history_age=AGE)
    start = core.store.table.rv
    names = [f"c-{index}" for index in range(HISTORY_FLOOR + 10)]
    _create(core, CONFIGMAPS, names)
    for name in names[:10]:
        delete(core.store, CONFIGMAPS, "default", name, DeleteOptions())
    # 120 changes: the 110 creations and 10 deletions.
    assert len(core.store.hub.changes_since(CONFIGMAPS.key, start)) == HISTORY_FLOOR + 20

    reactor.advance(AGE - 1)
    assert not _expired(core, CONFIGMAPS, start)
    reactor.advance(2)

    assert _expired(core, CONFIGMAPS, start)
    kept = core.store.hub.changes_since(CONFIGMAPS.key, core.store.hub.oldest(CONFIGMAPS.key))
    assert len(kept) == HISTORY_FLOOR
    assert [c.type for c in kept[-10:]] == ["DELETED"] * 10


def test_the_floor_keeps_a_quiet_clusters_last_changes_for_ever(reactor: ManualReactor) -> None:
    core = make_core(reactor, history_age=AGE)
    start = core.store.table.rv
    _create(core, CONFIGMAPS, ["only"])
    reactor.advance(24 * 3600)
    assert _names(core, CONFIGMAPS, start) == ["only"]


def test_the_sweep_follows_the_oldest_change_it_may_drop(reactor: ManualReactor) -> None:
    core = make_core(reactor, history_age=AGE)
    start = core.store.table.rv
    _create(core, CONFIGMAPS, [f"early-{index}" for index in range(HISTORY_FLOOR + 1)])
    reactor.advance(AGE / 2)
    _create(core, SECRETS, [f"late-{index}" for index in range(HISTORY_FLOOR + 1)])
    reactor.advance(AGE / 2 + 1)
    assert _expired(core, CONFIGMAPS, start)
    assert _names(core, SECRETS, start)[0] == "late-0"
    reactor.advance(AGE / 2)
    assert _expired(core, SECRETS, start)


def test_no_age_bound_keeps_changes_until_the_count_bound(reactor: ManualReactor) -> None:
    core = make_core(reactor, history_age=0)
    start = core.store.table.rv
    _create(core, CONFIGMAPS, [f"c-{index}" for index in range(HISTORY_FLOOR + 1)])
    reactor.advance(24 * 3600)
    assert len(core.store.hub.changes_since(CONFIGMAPS.key, start)) == HISTORY_FLOOR + 1


def test_a_negative_age_bound_is_refused() -> None:
    with pytest.raises(ValueError, match="age bound"):
        WatchHub(ObjectTable(), max_age=-1)
