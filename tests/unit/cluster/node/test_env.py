"""Container env and command line: values, downward API fields, ConfigMap and Secret keys,
envFrom with prefixes, $(VAR) expansion, what waits and what is refused."""

from __future__ import annotations

from typing import Any

import pytest

from engine.cluster.node.config.env import (
    ContainerConfigError,
    command_line,
    container_env,
    env_from_warnings,
    expand,
    field_value,
    valid_env_name,
)
from engine.cluster.node.config.sources import MissingSourceError, SourceObject, SourceRef, Sources

POD: dict[str, Any] = {
    "metadata": {
        "name": "job-worker-0",
        "namespace": "team",
        "uid": "1234",
        "labels": {"jobmachine.dev/replica-index": "0"},
        "annotations": {"note": "hello"},
    },
    "spec": {"nodeName": "jobmachine-local"},
}


def field(path: str) -> dict[str, Any]:
    return {"valueFrom": {"fieldRef": {"fieldPath": path}}}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("metadata.name", "job-worker-0"),
        ("metadata.namespace", "team"),
        ("metadata.uid", "1234"),
        ("metadata.labels['jobmachine.dev/replica-index']", "0"),
        ("metadata.labels['absent']", ""),
        ("metadata.annotations['note']", "hello"),
        ("status.podIP", "127.0.0.1"),
        ("spec.nodeName", "jobmachine-local"),
    ],
)
def test_downward_api_fields(path: str, expected: str) -> None:
    assert field_value(POD, path) == expected


def test_env_in_order_with_references_to_earlier_variables() -> None:
    container = {"name": "main", "env": [
        {"name": "POD", **field("metadata.name")},
        {"name": "ADDR", "value": "$(POD).svc:$(PORT)"},
        {"name": "PORT", "value": "23456"},
        {"name": "LATE", "value": "$(PORT)"},
        {"name": "EMPTY"},
    ]}
    assert container_env(POD, container) == {
        "POD": "job-worker-0", "ADDR": "job-worker-0.svc:$(PORT)", "PORT": "23456",
        "LATE": "23456", "EMPTY": "",
    }


def test_expansion_rules() -> None:
    variables = {"A": "1"}
    assert expand("$(A)-$(B)-$$(A)-$A-$(", variables) == "1-$(B)-$(A)-$A-$("


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"name": "Y", **field("status.hostIPs")}, ["env Y", "status.hostIPs", "not supported"]),
        ({"name": "Z", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
         ["env Z", "resourceFieldRef"]),
    ],
)
def test_what_the_node_cannot_provide_is_a_clear_error(entry: dict[str, Any],
                                                       words: list[str]) -> None:
    with pytest.raises(ContainerConfigError) as caught:
        container_env(POD, {"name": "main", "env": [entry]})
    assert all(word in str(caught.value) for word in words)
    assert caught.value.reason == "CreateContainerConfigError"


def sources(configmaps: dict[str, dict[str, str]] | None = None,
            secrets: dict[str, dict[str, bytes]] | None = None) -> Sources:
    found = {SourceRef("configmap", name): SourceObject(data, {k: v.encode()
                                                               for k, v in data.items()})
             for name, data in (configmaps or {}).items()}
    found.update({SourceRef("secret", name): SourceObject(
        {k: v.decode(errors="surrogateescape") for k, v in data.items()}, data)
        for name, data in (secrets or {}).items()})
    return Sources(found)


def key_ref(kind: str, name: str, key: str, **extra: Any) -> dict[str, Any]:
    return {"valueFrom": {kind: {"name": name, "key": key, **extra}}}


def test_config_map_and_secret_keys() -> None:
    container = {"name": "main", "env": [
        {"name": "LEVEL", **key_ref("configMapKeyRef", "settings", "level")},
        {"name": "TOKEN", **key_ref("secretKeyRef", "creds", "token")},
        {"name": "RAW", **key_ref("secretKeyRef", "creds", "raw")},
        {"name": "BOTH", "value": "$(LEVEL):$(TOKEN)"},
    ]}
    found = sources({"settings": {"level": "3"}}, {"creds": {"token": b"s3cret", "raw": b"\xff"}})
    env = container_env(POD, container, found)
    assert env == {"LEVEL": "3", "TOKEN": "s3cret", "RAW": "\udcff", "BOTH": "3:s3cret"}
    # What execve receives: the Secret's bytes as they are.
    assert env["RAW"].encode(errors="surrogateescape") == b"\xff"


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (key_ref("configMapKeyRef", "absent", "k"), 'configmap "absent" not found'),
        (key_ref("secretKeyRef", "absent", "k"), 'secret "absent" not found'),
        (key_ref("configMapKeyRef", "settings", "nope"),
         "couldn't find key nope in ConfigMap team/settings"),
        (key_ref("secretKeyRef", "creds", "nope"), "couldn't find key nope in Secret team/creds"),
    ],
)
def test_a_missing_source_or_key_waits_with_the_kubelets_message(entry: dict[str, Any],
                                                                 message: str) -> None:
    found = sources({"settings": {"level": "3"}}, {"creds": {"token": b"t"}})
    with pytest.raises(MissingSourceError) as caught:
        container_env(POD, {"name": "main", "env": [{"name": "X", **entry}]}, found)
    assert str(caught.value) == message


def test_an_optional_missing_source_or_key_leaves_the_variable_out() -> None:
    container = {"name": "main", "envFrom": [{"configMapRef": {"name": "settings"}}], "env": [
        {"name": "level", **key_ref("configMapKeyRef", "settings", "nope", optional=True)},
        {"name": "GONE", **key_ref("secretKeyRef", "absent", "k", optional=True)},
        {"name": "ALSO", **key_ref("configMapKeyRef", "absent", "k", optional=True)},
    ]}
    # The optional key does not erase what envFrom set under the same name.
    assert container_env(POD, container, sources({"settings": {"level": "3"}})) == {"level": "3"}


def test_env_from_with_prefixes_then_env_overrides_and_refers_to_it() -> None:
    container = {"name": "main", "envFrom": [
        {"configMapRef": {"name": "base"}},
        {"secretRef": {"name": "creds"}, "prefix": "DB_"},
        {"configMapRef": {"name": "override"}},
        {"configMapRef": {"name": "absent", "optional": True}},
    ], "env": [
        {"name": "MODE", "value": "env-wins"},
        {"name": "URL", "value": "$(DB_USER)@$(HOST)"},
    ]}
    found = sources({"base": {"HOST": "a", "MODE": "base"}, "override": {"HOST": "b"}},
                    {"creds": {"USER": b"me"}})
    assert container_env(POD, container, found) == {
        "HOST": "b", "MODE": "env-wins", "DB_USER": "me", "URL": "me@b"}


def test_env_from_a_missing_source_waits() -> None:
    container = {"name": "main", "envFrom": [{"secretRef": {"name": "absent"}}]}
    with pytest.raises(MissingSourceError, match='secret "absent" not found'):
        container_env(POD, container, sources())


def test_env_from_takes_configmap_data_not_binary_data() -> None:
    found = Sources({SourceRef("configmap", "c"): SourceObject({"text": "t"},
                                                               {"text": b"t", "blob": b"\0"})})
    container = {"name": "main", "envFrom": [{"configMapRef": {"name": "c"}}]}
    assert container_env(POD, container, found) == {"text": "t"}


@pytest.mark.parametrize(
    ("name", "valid"),
    [("HOST", True), ("1st", True), ("app.properties", True), ("a-b c~", True),
     ("", False), ("A=B", False), ("tab\tname", False), ("caf\u00e9", False),
     ("del\x7f", False)],
)
def test_names_follow_the_relaxed_rule_of_kubernetes_1_32(name: str, valid: bool) -> None:
    assert valid_env_name(name) is valid


def test_env_from_skips_invalid_names_with_the_kubelets_warning() -> None:
    container = {"name": "main", "envFrom": [
        {"configMapRef": {"name": "settings"}, "prefix": "P="},
        {"secretRef": {"name": "creds"}, "prefix": "S_"},
    ]}
    found = sources({"settings": {"b": "1", "a": "2"}}, {"creds": {"k": b"v"}})
    assert container_env(POD, container, found) == {"S_k": "v"}
    assert env_from_warnings(POD, container, found) == [
        "Keys [P=a, P=b] from the EnvFrom configMap team/settings were skipped since they are "
        "considered invalid environment variable names."]


def test_env_from_without_a_reference_is_refused() -> None:
    with pytest.raises(ContainerConfigError, match="configMapRef and secretRef"):
        container_env(POD, {"name": "main", "envFrom": [{"prefix": "X_"}]}, sources())


def test_command_line_is_command_then_args_expanded() -> None:
    container = {"name": "main", "command": ["python", "-c"], "args": ["print('$(WHO)')"]}
    assert command_line(container, {"WHO": "me"}) == ["python", "-c", "print('me')"]
    assert command_line({"name": "main", "args": ["echo", "hi"]}, {}) == ["echo", "hi"]


def test_a_container_with_nothing_to_run_fails_with_no_command() -> None:
    with pytest.raises(ContainerConfigError, match="neither command nor args") as caught:
        command_line({"name": "main", "image": "busybox"}, {})
    assert caught.value.reason == "NoCommand"
