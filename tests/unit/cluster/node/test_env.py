"""Container env and command line: values, downward API fields, $(VAR) expansion, errors."""

from __future__ import annotations

from typing import Any

import pytest

from engine.cluster.node.env import (
    ContainerConfigError,
    command_line,
    container_env,
    expand,
    field_value,
)

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
        ({"name": "X", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
         ["env X", "valueFrom.secretKeyRef", "not supported"]),
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


def test_env_from_is_refused() -> None:
    with pytest.raises(ContainerConfigError, match="envFrom"):
        container_env(POD, {"name": "main", "envFrom": [{"configMapRef": {"name": "c"}}]})


def test_command_line_is_command_then_args_expanded() -> None:
    container = {"name": "main", "command": ["python", "-c"], "args": ["print('$(WHO)')"]}
    assert command_line(container, {"WHO": "me"}) == ["python", "-c", "print('me')"]
    assert command_line({"name": "main", "args": ["echo", "hi"]}, {}) == ["echo", "hi"]


def test_a_container_with_nothing_to_run_fails_with_no_command() -> None:
    with pytest.raises(ContainerConfigError, match="neither command nor args") as caught:
        command_line({"name": "main", "image": "busybox"}, {})
    assert caught.value.reason == "NoCommand"
