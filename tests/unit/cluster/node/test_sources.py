"""Which ConfigMaps and Secrets a pod refers to, and their data as env and volumes see it."""

from __future__ import annotations

import base64

from engine.cluster.node.config.sources import (
    RESOURCES,
    SourceRef,
    env_references,
    source_object,
    volume_references,
)


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
