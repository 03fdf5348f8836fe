"""Secrets over HTTP with the official client: stringData, base64 errors, types, restarts."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from engine.cluster import running_apiserver
from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from tests.integration.apiserver.conftest import raw, status_of

SECRETS_PATH = "/api/v1/namespaces/default/secrets"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def secret(name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, **fields}


def test_string_data_is_merged_into_data_and_never_returned(core: client.CoreV1Api) -> None:
    body = client.V1Secret(
        metadata=client.V1ObjectMeta(name="creds"),
        data={"user": b64("old"), "host": b64("db")},
        string_data={"user": "admin"},
    )
    created = core.create_namespaced_secret("default", body)
    assert created.data == {"user": b64("admin"), "host": b64("db")}
    assert created.string_data is None
    assert created.type == "Opaque"
    read = core.read_namespaced_secret("creds", "default")
    assert read.data == created.data and read.string_data is None


def test_a_strategic_patch_with_string_data_updates_data(
    core: client.CoreV1Api, server: RunningApiServer
) -> None:
    core.create_namespaced_secret("default", secret("creds", stringData={"a": "1", "b": "2"}))
    patched = core.patch_namespaced_secret("creds", "default", {"stringData": {"b": "3"}})
    assert patched.data == {"a": b64("1"), "b": b64("3")}
    stored = raw(server, "GET", f"{SECRETS_PATH}/creds").json()
    assert "stringData" not in stored
    assert stored["data"] == {"a": b64("1"), "b": b64("3")}


def test_invalid_base64_is_a_bad_request_naming_the_key(server: RunningApiServer) -> None:
    response = raw(server, "POST", SECRETS_PATH, secret("bad", data={"token": "not base64!"}))
    assert response.status == 400
    status = response.json()
    assert status["reason"] == "BadRequest"
    assert status["message"] == (
        'Secret in version "v1" cannot be handled as a Secret: '
        "data[token]: illegal base64 data at input byte 3"
    )
    assert raw(server, "GET", f"{SECRETS_PATH}/bad").status == 404


def test_a_tls_secret_without_its_key_is_invalid(core: client.CoreV1Api) -> None:
    body = secret("web-tls", type="kubernetes.io/tls", data={"tls.crt": b64("cert")})
    with pytest.raises(client.ApiException) as caught:
        core.create_namespaced_secret("default", body)
    assert caught.value.status == 422
    status = status_of(caught.value)
    assert status["reason"] == "Invalid"
    assert status["message"] == 'Secret "web-tls" is invalid: data[tls.key]: Required value'
    assert status["details"]["causes"] == [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "data[tls.key]"}
    ]


def test_type_and_immutable_data_cannot_change(core: client.CoreV1Api) -> None:
    core.create_namespaced_secret(
        "default", secret("frozen", immutable=True, stringData={"a": "1"})
    )
    with pytest.raises(client.ApiException) as retyped:
        core.patch_namespaced_secret("frozen", "default", {"type": "example.com/other"})
    assert retyped.value.status == 422
    assert "type: Invalid value" in status_of(retyped.value)["message"]
    with pytest.raises(client.ApiException) as changed:
        core.patch_namespaced_secret("frozen", "default", {"stringData": {"a": "2"}})
    assert changed.value.status == 422
    assert [c["field"] for c in status_of(changed.value)["details"]["causes"]] == ["data"]
    relabelled = core.patch_namespaced_secret(
        "frozen", "default", {"metadata": {"labels": {"x": "y"}}}
    )
    assert relabelled.metadata.labels == {"x": "y"}


def test_lists_select_by_type_and_print_the_real_columns(
    core: client.CoreV1Api, server: RunningApiServer
) -> None:
    core.create_namespaced_secret("default", secret("plain", stringData={"a": "1"}))
    tls = {"tls.crt": b64("c"), "tls.key": b64("k")}
    core.create_namespaced_secret("default", secret("web-tls", type="kubernetes.io/tls", data=tls))
    selected = core.list_namespaced_secret("default", field_selector="type=kubernetes.io/tls")
    assert [s.metadata.name for s in selected.items] == ["web-tls"]
    table = raw(server, "GET", SECRETS_PATH, headers={"Accept": TABLE}).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Type", "Data", "Age"]
    assert [row["cells"][:3] for row in table["rows"]] == [
        ["plain", "Opaque", 1],
        ["web-tls", "kubernetes.io/tls", 2],
    ]


def test_secrets_survive_a_restart_with_a_data_dir(tmp_path: Path) -> None:
    with (
        running_apiserver(data_dir=tmp_path) as first,
        config.new_client_from_config(config_file=str(first.kubeconfig)) as api,
    ):
        body = secret("kept", stringData={"token": "t0k3n"})
        client.CoreV1Api(api).create_namespaced_secret("default", body)
    with (
        running_apiserver(data_dir=tmp_path) as second,
        config.new_client_from_config(config_file=str(second.kubeconfig)) as api,
    ):
        kept = client.CoreV1Api(api).read_namespaced_secret("kept", "default")
    assert kept.data == {"token": b64("t0k3n")}
    assert kept.type == "Opaque"
