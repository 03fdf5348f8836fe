"""Which ConfigMaps and Secrets a pod refers to, and their data as env and volumes see it."""

from __future__ import annotations

import base64

from engine.cluster.node.config.sources import (
    RESOURCES,
    SourceRef,
    env_references,
    fetch_sources,
    source_object,
    volume_references,
)
from engine.kube.errors import NotFound


def test_every_volume_is_referenced_mounted_or_not() -> None:
    pod = {"spec": {"volumes": [
        {"name": "a", "configMap": {"name": "cm"}},
        {"name": "b", "secret": {"secretName": "s"}},
        {"name": "c", "emptyDir": {}},
        {"name": "d", "downwardAPI": {"items": []}},
    ]}}
    assert volume_references(pod) == [SourceRef("configmap", "cm"), SourceRef("secret", "s")]


def test_env_and_env_from_references() -> None:
    container = {"envFrom": [{"configMapRef": {"name": "base"}}, {"secretRef": {"name": "s"}}],
                 "env": [{"name": "A", "value": "1"},
                         {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}},
                         {"name": "C", "valueFrom": {"secretKeyRef": {"name": "t", "key": "k"}}},
                         {"name": "D", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}
    assert env_references(container) == [
        SourceRef("configmap", "base"), SourceRef("secret", "s"),
        SourceRef("configmap", "c"), SourceRef("secret", "t")]


def test_config_map_data_and_binary_data() -> None:
    obj = {"data": {"text": "héllo"}, "binaryData": {"blob": base64.b64encode(b"\0\1").decode()}}
    found = source_object("configmap", obj)
    assert found.strings == {"text": "héllo"}
    assert found.files == {"text": "héllo".encode(), "blob": b"\0\1"}


def test_secret_data_is_base64_and_string_data_is_taken_as_it_is() -> None:
    obj = {"data": {"token": base64.b64encode(b"s3cret").decode()}, "stringData": {"user": "me"}}
    found = source_object("secret", obj)
    assert found.files == {"token": b"s3cret", "user": b"me"}
    assert found.strings == {"token": "s3cret", "user": "me"}


def test_paths() -> None:
    assert RESOURCES["secret"].path("team", "a b") == "/api/v1/namespaces/team/secrets/a b"
    assert RESOURCES["configmap"].path("team", "c") == "/api/v1/namespaces/team/configmaps/c"


class _Server:
    """The API server's side of fetch_sources: what it holds, and the reads it was sent."""

    def __init__(self, objects: dict[str, dict[str, object]]) -> None:
        self.objects = objects
        self.reads: list[str] = []

    def get(self, resource: object, name: str, namespace: str) -> dict[str, object]:
        self.reads.append(name)
        if name not in self.objects:
            raise NotFound(404, "NotFound", f"{name} not found", {})
        return self.objects[name]


def test_config_maps_come_from_the_watch_when_it_holds_them() -> None:
    """A ConfigMap the watch holds is not read from the server; one it lacks is (and absent
    when the server lacks it too); a Secret is always read."""
    server = _Server({"late": {"data": {"a": "server"}},
                      "s": {"data": {"k": base64.b64encode(b"v").decode()}}})
    watched = {("team", "held"): {"data": {"a": "watch"}}}
    refs = [SourceRef("configmap", "held"), SourceRef("configmap", "late"),
            SourceRef("configmap", "gone"), SourceRef("secret", "s")]
    found = fetch_sources(server, "team", refs,  # type: ignore[arg-type]
                          lambda ns, name: watched.get((ns, name)))
    assert server.reads == ["late", "gone", "s"]
    assert found.get("configmap", "held") == source_object("configmap", {"data": {"a": "watch"}})
    assert found.get("configmap", "late") == source_object("configmap",
                                                           {"data": {"a": "server"}})
    assert found.get("configmap", "gone") is None
    assert found.get("secret", "s") is not None
