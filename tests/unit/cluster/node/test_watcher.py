"""The watcher: initial list, watch events, relist on 410 Expired and after failures, with the
relist reported as ordinary events (against a scripted API, no server)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any, cast

from engine.cluster.node.api import ApiError, NodeApi
from engine.cluster.node.watcher import Watcher


def obj(name: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"namespace": "ns", "name": name, "resourceVersion": rv}}


class Stream:
    def __init__(self, events: list[dict[str, Any]], closed: threading.Event) -> None:
        self._events = events
        self._closed = closed

    def __iter__(self) -> Iterator[dict[str, Any]]:
        yield from self._events
        self._closed.wait()

    def close(self) -> None:
        self._closed.set()


class ScriptedApi:
    """Answers lists and watches from scripts; the last watch blocks until closed."""

    def __init__(self, lists: list[dict[str, Any]], watches: list[Any]) -> None:
        self.lists = lists
        self.watches = watches
        self.watch_versions: list[str] = []
        self.idle = threading.Event()

    def get(self, path: str) -> dict[str, Any]:
        return self.lists.pop(0)

    def watch(self, path: str, query: dict[str, str]) -> Stream:
        self.watch_versions.append(query["resourceVersion"])
        script = self.watches.pop(0)
        if isinstance(script, Exception):
            raise script
        if not self.watches:
            self.idle.set()
            return Stream(script, threading.Event())
        done = threading.Event()
        done.set()
        return Stream(script, done)


def run(api: ScriptedApi) -> tuple[list[tuple[str, str, str]], Watcher]:
    seen: queue.Queue[tuple[str, str, str]] = queue.Queue()

    def handler(kind: str, item: dict[str, Any]) -> None:
        seen.put((kind, item["metadata"]["name"], item["metadata"]["resourceVersion"]))

    watcher = Watcher(cast(NodeApi, api), "/api/v1/pods", handler, name="test watcher")
    watcher.start()
    assert api.idle.wait(10)
    watcher.stop()
    return list(seen.queue), watcher


def test_relist_after_410_reports_what_changed_meanwhile() -> None:
    api = ScriptedApi(
        lists=[
            {"metadata": {"resourceVersion": "5"}, "items": [obj("a", "1"), obj("b", "2")]},
            {"metadata": {"resourceVersion": "20"}, "items": [obj("b", "9"), obj("c", "10")]},
        ],
        watches=[
            [{"type": "MODIFIED", "object": obj("a", "6")},
             {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "8"}}}],
            [{"type": "ERROR", "object": {"code": 410, "reason": "Expired"}}],
            [],
        ],
    )
    seen, watcher = run(api)
    assert seen == [
        ("ADDED", "a", "1"), ("ADDED", "b", "2"), ("MODIFIED", "a", "6"),
        ("DELETED", "a", "6"), ("MODIFIED", "b", "9"), ("ADDED", "c", "10"),
    ]
    assert api.watch_versions == ["5", "8", "20"]
    assert sorted(o["metadata"]["name"] for o in watcher.objects()) == ["b", "c"]


def test_a_failed_watch_relists_and_a_failing_handler_does_not_stop_it() -> None:
    api = ScriptedApi(
        lists=[{"metadata": {"resourceVersion": "1"}, "items": [obj("a", "1")]},
               {"metadata": {"resourceVersion": "3"}, "items": [obj("a", "1"), obj("b", "3")]}],
        watches=[ApiError(0, "Unreachable", "connection refused"), []],
    )
    calls: list[str] = []

    def handler(kind: str, item: dict[str, Any]) -> None:
        calls.append(item["metadata"]["name"])
        raise RuntimeError("handler bug")

    watcher = Watcher(cast(NodeApi, api), "/api/v1/pods", handler, name="test watcher")
    watcher.start()
    assert api.idle.wait(10)
    watcher.stop()
    assert calls == ["a", "b"]
    assert api.watch_versions == ["1", "3"]


def test_keep_decides_what_is_cached_and_handed_on_and_can_be_applied_again() -> None:
    api = ScriptedApi(
        lists=[{"metadata": {"resourceVersion": "1"}, "items": [obj("a", "1")]}],
        watches=[[{"type": "ADDED", "object": {**obj("b", "2"), "bulky": "x" * 100}}], []],
    )
    slim = {"a"}
    handed: list[dict[str, Any]] = []

    def keep(item: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": item["metadata"]} if item["metadata"]["name"] in slim else item

    watcher = Watcher(cast(NodeApi, api), "/api/v1/pods", lambda _, item: handed.append(item),
                      name="test watcher", keep=keep)
    assert not watcher.listed
    watcher.start()
    assert api.idle.wait(10)
    assert watcher.listed
    assert [sorted(item) for item in handed] == [["metadata"], ["bulky", "metadata"]]
    slim.add("b")
    watcher.keep_again(("ns", "b"))
    watcher.stop()
    assert all(sorted(item) == ["metadata"] for item in watcher.objects())
