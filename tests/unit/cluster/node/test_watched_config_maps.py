"""The ConfigMaps the node's containers read, from a watch-fed cache as a kubelet at its
default keeps them: only their data is kept, and nothing is answered before the first
list (the caller then reads the server, so a container still waits for a ConfigMap that
is missing). The informer is a fake the test fills: no thread runs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from engine.cluster.node.config import watched_config_maps
from engine.cluster.node.config.watched_config_maps import WatchedConfigMaps
from engine.kube.cache import Cache
from engine.kube.resources import CONFIGMAPS, Resource


class FakeInformer:
    made: list[FakeInformer] = []

    def __init__(self, api: Any, resource: Resource, *, cache: Cache, handler: Any,
                 name: str) -> None:
        self.resource, self.cache, self.name = resource, cache, name
        self.has_synced = False
        self.running = False
        FakeInformer.made.append(self)

    def start(self) -> None:
        self.running = True

    def stop(self) -> None:
        self.running = False


@pytest.fixture
def informer(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[WatchedConfigMaps,
                                                                 FakeInformer]]:
    made: list[FakeInformer] = []
    monkeypatch.setattr(FakeInformer, "made", made)
    monkeypatch.setattr(watched_config_maps, "Informer", FakeInformer)
    watched = WatchedConfigMaps(object(), "local")  # type: ignore[arg-type]
    yield watched, made[0]


ROOT_CA = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "kube-root-ca.crt", "namespace": "team", "uid": "u",
                        "resourceVersion": "5", "labels": {"a": "b"},
                        "managedFields": [{"manager": "x"}]},
           "data": {"ca.crt": "PEM"}}


def test_one_informer_of_the_nodes_own_watches_every_config_map(
    informer: tuple[WatchedConfigMaps, FakeInformer]
) -> None:
    watched, fake = informer
    assert (fake.resource, fake.name) == (CONFIGMAPS, "local configmaps")
    watched.start()
    assert fake.running
    watched.stop()
    assert not fake.running


def test_nothing_is_answered_before_the_first_list(
    informer: tuple[WatchedConfigMaps, FakeInformer]
) -> None:
    watched, fake = informer
    fake.cache.replace([ROOT_CA])
    assert watched.get("team", "kube-root-ca.crt") is None
    fake.has_synced = True
    assert watched.get("team", "kube-root-ca.crt") is not None
    assert watched.get("team", "missing") is None


def test_only_what_a_container_reads_is_kept(
    informer: tuple[WatchedConfigMaps, FakeInformer]
) -> None:
    watched, fake = informer
    fake.has_synced = True
    fake.cache.replace([ROOT_CA, {"metadata": {"name": "bin", "namespace": "team"},
                                  "binaryData": {"k": "AA=="}}])
    assert watched.get("team", "kube-root-ca.crt") == {
        "metadata": {"namespace": "team", "name": "kube-root-ca.crt", "resourceVersion": "5"},
        "data": {"ca.crt": "PEM"}}
    assert watched.get("team", "bin") == {"metadata": {"namespace": "team", "name": "bin"},
                                          "binaryData": {"k": "AA=="}}
