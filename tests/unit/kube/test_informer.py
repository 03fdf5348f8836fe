"""The informer against a scripted client (no server): the resume point bookmarks advance, a
410 relists and reports what changed meanwhile as ordinary events, a failed watch resumes
where it stopped, a failing handler stops nothing, and a projected cache whose projection
is applied again."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from typing import Any, cast

from engine.kube.cache import Cache
from engine.kube.client import KubeClient
from engine.kube.errors import Gone, unavailable
from engine.kube.informer import Informer
from engine.kube.resources import PODS, Resource

Obj = dict[str, Any]


def obj(name: str, rv: str) -> Obj:
    return {"metadata": {"namespace": "ns", "name": name, "resourceVersion": rv}}


class Stream:
    """A watch's events; an exception in the script is raised where it stands (as the client's
    stream raises an ERROR event); the last stream stays open until closed."""

    def __init__(self, script: list[Any], open_until_closed: bool) -> None:
        self._script = script
        self._closed = threading.Event()
        if not open_until_closed:
            self._closed.set()

    def __iter__(self) -> Iterator[Obj]:
        for step in self._script:
            if isinstance(step, Exception):
                raise step
            yield step
        self._closed.wait(10)

    def close(self) -> None:
        self._closed.set()


class ScriptedClient:
    """Answers lists and watches from scripts; `idle` is set once the last watch is open."""

    def __init__(self, lists: list[tuple[list[Obj], str]], watches: list[Any]) -> None:
        self.lists = lists
        self.watches = watches
        self.listed = 0
        self.watch_versions: list[str] = []
        self.idle = threading.Event()

    def list(self, res: Resource, namespace: str | None = None, *,
             transform: Any = None, **_: Any) -> tuple[list[Obj], str]:
        """The next scripted list, each object made into what is kept of it as KubeClient's
        list does."""
        self.listed += 1
        items, rv = self.lists.pop(0)
        return [item if transform is None else transform(item) for item in items], rv

    def watch(self, res: Resource, namespace: str | None = None, *, resource_version: str,
              **_: Any) -> Stream:
        self.watch_versions.append(resource_version)
        script = self.watches.pop(0)
        if isinstance(script, Exception):
            raise script
        last = not self.watches
        if last:
            self.idle.set()
        return Stream(script, open_until_closed=last)


def informer(client: ScriptedClient, cache: Cache, handler: Any) -> Informer:
    return Informer(cast(KubeClient, client), PODS, cache=cache, handler=handler,
                    name="test informer")


def run(client: ScriptedClient, cache: Cache | None = None
        ) -> tuple[list[tuple[str, str, str]], Cache]:
    seen: queue.Queue[tuple[str, str, str]] = queue.Queue()

    def handler(kind: str, old: Obj | None, new: Obj | None) -> None:
        view = new if new is not None else old
        assert view is not None
        seen.put((kind, view["metadata"]["name"], view["metadata"]["resourceVersion"]))

    cache = cache or Cache()
    running = informer(client, cache, handler)
    running.start()
    assert client.idle.wait(10)
    running.stop()
    return list(seen.queue), cache


def test_relist_after_410_reports_what_changed_meanwhile_and_bookmarks_move_on() -> None:
    client = ScriptedClient(
        lists=[([obj("a", "1"), obj("b", "2")], "5"), ([obj("b", "9"), obj("c", "10")], "20")],
        watches=[
            [{"type": "MODIFIED", "object": obj("a", "6")},
             {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "8"}}}],
            [Gone(410, "Expired", "too old resource version", {})],
            [],
        ],
    )
    seen, cache = run(client)
    assert seen == [
        ("ADDED", "a", "1"), ("ADDED", "b", "2"), ("MODIFIED", "a", "6"),
        ("DELETED", "a", "6"), ("MODIFIED", "b", "9"), ("ADDED", "c", "10"),
    ]
    assert client.watch_versions == ["5", "8", "20"]
    assert sorted(o["metadata"]["name"] for o in cache.list()) == ["b", "c"]


def test_a_failed_watch_resumes_where_it_stopped_and_a_failing_handler_stops_nothing() -> None:
    client = ScriptedClient(
        lists=[([obj("a", "1")], "1")],
        watches=[unavailable(ConnectionRefusedError("connection refused")),
                 [{"type": "ADDED", "object": obj("b", "3")}]],
    )
    calls: list[str] = []
    delivered = threading.Event()

    def handler(kind: str, old: Obj | None, new: Obj | None) -> None:
        assert new is not None
        calls.append(new["metadata"]["name"])
        if len(calls) == 2:
            delivered.set()
        raise RuntimeError("handler bug")

    running = informer(client, Cache(), handler)
    running.start()
    assert delivered.wait(10)
    running.stop()
    assert calls == ["a", "b"]
    assert client.watch_versions == ["1", "1"]
    assert client.listed == 1


def test_the_projection_decides_what_is_cached_and_handed_on_and_can_be_applied_again() -> None:
    client = ScriptedClient(
        lists=[([obj("a", "1")], "1")],
        watches=[[{"type": "ADDED", "object": {**obj("b", "2"), "bulky": "x" * 100}}]],
    )
    slim = {"a"}
    handed: list[Obj] = []
    delivered = threading.Event()

    def keep(item: Obj) -> Obj:
        return {"metadata": item["metadata"]} if item["metadata"]["name"] in slim else item

    def handler(kind: str, old: Obj | None, new: Obj | None) -> None:
        assert new is not None
        handed.append(new)
        if len(handed) == 2:
            delivered.set()

    cache = Cache(keep)
    running = informer(client, cache, handler)
    assert not running.has_synced
    running.start()
    assert delivered.wait(10)
    assert running.has_synced
    assert [sorted(item) for item in handed] == [["metadata"], ["bulky", "metadata"]]
    slim.add("b")
    assert cache.reproject("ns", "b") == {"metadata": obj("b", "2")["metadata"]}
    assert cache.reproject("ns", "gone") is None
    running.stop()
    assert all(sorted(item) == ["metadata"] for item in cache.list())
    assert not [t for t in threading.enumerate() if t.name == "test informer"]


class PagedClient(ScriptedClient):
    """Tells the list's page callback of each page, as KubeClient.list does."""

    def list(self, res: Resource, namespace: str | None = None, **kwargs: Any
             ) -> tuple[list[Obj], str]:
        items, rv = super().list(res, namespace, transform=kwargs.get("transform"))
        for count in range(1, len(items) + 1):
            kwargs["on_page"](count)
        return items, rv


def test_each_page_of_the_first_list_counts_as_progress() -> None:
    """The engine's start waits for a cache while its list brings pages (cache_sync.py)."""
    client = PagedClient(lists=[([obj("a", "1"), obj("b", "2")], "2")], watches=[[]])
    running = informer(client, Cache(), lambda *_: None)
    assert running.progressed_at is None
    before = time.monotonic()
    running.start()
    assert client.idle.wait(10)
    running.stop()
    assert running.progressed_at is not None and running.progressed_at >= before
