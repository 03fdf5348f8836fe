"""The watch hub: bounded history per type, resumption, 410, selective watchers."""

from __future__ import annotations

import pytest

from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.storage.objects import ObjectTable
from engine.cluster.apiserver.storage.watch import WatchHub

KEY = ("", "configmaps")
OTHER = ("", "pods")


def _obj(name: str, **labels: str) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": "default", "labels": labels}}


def test_history_is_bounded_per_type() -> None:
    table = ObjectTable()
    hub = WatchHub(table, capacity=2)
    for name in ("a", "b", "c"):
        table.put(KEY, _obj(name))
    table.put(OTHER, _obj("p"))
    assert hub.oldest(KEY) == 1
    assert [c.entry.obj["metadata"]["name"] for c in hub.changes_since(KEY, 1)] == ["b", "c"]
    with pytest.raises(ApiError) as error:
        hub.changes_since(KEY, 0)
    assert error.value.code == 410 and "too old resource version: 0 (1)" in error.value.message
    assert [c.rv for c in hub.changes_since(OTHER, 0)] == [4]


def test_subscriber_gets_replay_then_live_changes() -> None:
    table = ObjectTable()
    hub = WatchHub(table)
    table.put(KEY, _obj("a"))
    watcher = hub.subscribe(KEY, since=0, matcher=None)
    table.put(KEY, _obj("a"))
    table.remove(KEY, "default", "a")
    assert [(t, e.obj["metadata"]["resourceVersion"]) for t, e in watcher.take()] == [
        ("ADDED", "1"),
        ("MODIFIED", "2"),
        ("DELETED", "3"),
    ]
    watcher.close()
    table.put(KEY, _obj("b"))
    assert watcher.take() == []


def test_selective_watcher_sees_entering_and_leaving() -> None:
    table = ObjectTable()
    hub = WatchHub(table)
    watcher = hub.subscribe(
        KEY, since=0, matcher=lambda obj: obj["metadata"]["labels"].get("team") == "x"
    )
    table.put(KEY, _obj("a", team="y"))
    table.put(KEY, _obj("a", team="x"))
    table.put(KEY, _obj("a", team="x"))
    table.put(KEY, _obj("a", team="y"))
    assert [t for t, _ in watcher.take()] == ["ADDED", "MODIFIED", "DELETED"]


def test_slow_watcher_is_closed_when_its_backlog_exceeds_the_history() -> None:
    table = ObjectTable()
    hub = WatchHub(table, capacity=3)
    watcher = hub.subscribe(KEY, since=None, matcher=None)
    for name in "abcd":
        table.put(KEY, _obj(name))
    assert watcher.closed and watcher.overflowed
