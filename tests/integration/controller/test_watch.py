"""The informer against the embedded API server: initial sync, live events into the cache
and the handler, relist after 410, recovery after the server went away, prompt stop."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from engine.cluster import running_apiserver
from engine.cluster.apiserver.endpoints.serve import RunningApiServer, ServerOptions
from engine.kube.cache import Cache
from engine.kube.client import KubeClient
from engine.kube.informer import Informer
from engine.kube.resources import Resource
from tests.polling import eventually

CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
# Every namespace's own ConfigMap (as on any cluster), left out of what the tests count.
ROOT_CA = "kube-root-ca.crt"
HISTORY = 10
Obj = dict[str, Any]


class Recorder:
    """A handler that remembers (type, name, data.x of the newest view) per call."""

    def __init__(self, *, fail_first: bool = False) -> None:
        self.calls: list[tuple[str, str, str | None]] = []
        self.lock = threading.Lock()
        self.fail_first = fail_first
        self.release = threading.Event()
        self.release.set()

    def __call__(self, event_type: str, old: Obj | None, new: Obj | None) -> None:
        self.release.wait(60)
        view = new if new is not None else old
        assert view is not None
        if view["metadata"]["name"] == ROOT_CA:
            return
        with self.lock:
            self.calls.append((event_type, view["metadata"]["name"],
                               (view.get("data") or {}).get("x")))
            if self.fail_first and len(self.calls) == 1:
                raise RuntimeError("a handler bug")

    def seen(self) -> list[tuple[str, str, str | None]]:
        with self.lock:
            return list(self.calls)


class CountingClient(KubeClient):
    """Counts lists once answered, so a test can tell a relist from a resumed watch (and
    knows what a list already holds)."""

    lists = 0

    def list(self, *args: Any, **kwargs: Any) -> tuple[list[Obj], str]:
        answered = super().list(*args, **kwargs)
        self.lists += 1
        return answered


@pytest.fixture(scope="module")
def server() -> Iterator[RunningApiServer]:
    with running_apiserver(tls=True, options=ServerOptions(history=HISTORY)) as running:
        yield running


@pytest.fixture
def client(server: RunningApiServer) -> Iterator[CountingClient]:
    kube = CountingClient.from_kubeconfig(server.kubeconfig)
    yield kube
    kube.close()


@pytest.fixture
def start() -> Iterator[Callable[..., Informer]]:
    informers: list[Informer] = []

    def make(client: KubeClient, namespace: str, cache: Cache, handler: Recorder,
             **options: Any) -> Informer:
        informer = Informer(client, CONFIGMAPS, namespace=namespace, cache=cache,
                            handler=handler, **options)
        informers.append(informer)
        informer.start()
        return informer

    yield make
    for informer in informers:
        informer.stop()


def configmap(name: str, x: str = "1", **labels: str) -> Obj:
    return {"metadata": {"name": name, "labels": labels}, "data": {"x": x}}


def names(cache: Cache) -> set[str]:
    return {o["metadata"]["name"] for o in cache.list()} - {ROOT_CA}


def test_initial_sync_then_live_events(
    client: CountingClient, ns: str, start: Callable[..., Informer]
) -> None:
    for name in ("a", "b"):
        client.create(CONFIGMAPS, configmap(name), ns)
    cache, handler = Cache(), Recorder()
    informer = start(client, ns, cache, handler)
    assert informer.wait_synced(20) and informer.has_synced
    assert names(cache) == {"a", "b"}
    assert sorted(handler.seen()) == [("ADDED", "a", "1"), ("ADDED", "b", "1")]

    client.create(CONFIGMAPS, configmap("c"), ns)
    client.patch(CONFIGMAPS, "a", {"data": {"x": "2"}}, namespace=ns)
    client.delete(CONFIGMAPS, "b", ns)
    eventually(lambda: len(handler.seen()) == 5)
    assert handler.seen()[2:] == [("ADDED", "c", "1"), ("MODIFIED", "a", "2"),
                                  ("DELETED", "b", "1")]
    assert names(cache) == {"a", "c"}
    view = cache.get(ns, "a")
    assert view is not None and view["data"] == {"x": "2"} and view["kind"] == "ConfigMap"
    assert client.lists == 1


def test_label_selector_and_handler_failures(
    client: CountingClient, ns: str, start: Callable[..., Informer]
) -> None:
    cache, handler = Cache(), Recorder(fail_first=True)
    informer = start(client, ns, cache, handler, label_selector="app=x")
    assert informer.wait_synced(20)
    client.create(CONFIGMAPS, configmap("other", app="y"), ns)
    client.create(CONFIGMAPS, configmap("one", app="x"), ns)
    client.create(CONFIGMAPS, configmap("two", app="x"), ns)
    eventually(lambda: len(handler.seen()) == 2)
    assert handler.seen() == [("ADDED", "one", "1"), ("ADDED", "two", "1")]
    assert names(cache) == {"one", "two"}


def test_relist_after_the_resource_version_expired(
    client: CountingClient, ns: str, start: Callable[..., Informer]
) -> None:
    client.create(CONFIGMAPS, configmap("a"), ns)
    client.create(CONFIGMAPS, configmap("b"), ns)
    cache, handler = Cache(), Recorder()
    handler.release.clear()  # hold the informer inside its first list
    start(client, ns, cache, handler)
    eventually(lambda: client.lists == 1)
    client.patch(CONFIGMAPS, "a", {"data": {"x": "2"}}, namespace=ns)
    client.delete(CONFIGMAPS, "b", ns)
    for i in range(HISTORY + 5):
        client.create(CONFIGMAPS, configmap(f"n{i}"), ns)
    handler.release.set()

    expected = {"a"} | {f"n{i}" for i in range(HISTORY + 5)}
    eventually(lambda: names(cache) == expected)
    assert client.lists == 2
    calls = handler.seen()
    assert ("MODIFIED", "a", "2") in calls and ("DELETED", "b", "1") in calls
    assert sum(1 for c in calls if c[0] == "ADDED" and c[1].startswith("n")) == HISTORY + 5


def test_stop_ends_an_open_watch_promptly(
    client: CountingClient, ns: str, start: Callable[..., Informer]
) -> None:
    informer = start(client, ns, Cache(), Recorder(), watch_timeout_s=300)
    assert informer.wait_synced(20)
    informer.stop()
    assert not [t for t in threading.enumerate() if t.name == "informer-configmaps"]
    with pytest.raises(RuntimeError, match="once"):
        informer.start()


def test_resumes_after_the_server_restarts(tmp_path: Path, start: Callable[..., Informer]) -> None:
    data_dir = tmp_path / "data"
    with running_apiserver(data_dir=data_dir) as first:
        client = KubeClient.from_kubeconfig(first.kubeconfig)
        client.create(CONFIGMAPS, configmap("before"), "default")
        cache, handler = Cache(), Recorder()
        informer = start(client, "default", cache, handler)
        assert informer.wait_synced(20)
        port = urlparse(first.url).port
    try:
        assert port is not None
        with running_apiserver(data_dir=data_dir, port=port) as second:
            again = KubeClient.from_kubeconfig(second.kubeconfig)
            again.create(CONFIGMAPS, configmap("after"), "default")
            eventually(lambda: names(cache) == {"before", "after"})
            again.close()
            informer.stop()
    finally:
        client.close()
    assert ("ADDED", "after", "1") in handler.seen()
