"""Server-side apply over HTTP with the official client: create and update on apply, conflicts
and force, managedFields as upstream writes them, custom resources, and what is refused."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from tests.integration.apiserver.conftest import raw, status_of, widget

APPLY = "application/apply-patch+yaml"
CM_PATH = "/api/v1/namespaces/default/configmaps/cm"


def configmap(**data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": data}


def apply_configmap(
    core: client.CoreV1Api, body: dict[str, Any], manager: str, *, force: bool | None = None
) -> tuple[client.V1ConfigMap, int]:
    result, status, _ = core.patch_namespaced_config_map_with_http_info(
        "cm", "default", body, field_manager=manager, force=force, _content_type=APPLY
    )
    return result, status


def managers(obj: client.V1ConfigMap) -> dict[str, Any]:
    return {entry.manager: entry for entry in obj.metadata.managed_fields or []}


def test_apply_creates_then_updates_and_reapplying_changes_nothing(
    core: client.CoreV1Api,
) -> None:
    created, status = apply_configmap(core, configmap(a="1"), "tool")
    assert status == 201 and created.data == {"a": "1"}
    entry = managers(created)["tool"]
    assert (entry.operation, entry.api_version, entry.fields_type) == ("Apply", "v1", "FieldsV1")
    assert entry.fields_v1 == {"f:data": {"f:a": {}}}
    updated, status = apply_configmap(core, configmap(a="1", b="2"), "tool")
    assert status == 200 and updated.data == {"a": "1", "b": "2"}
    again, _ = apply_configmap(core, configmap(a="1", b="2"), "tool")
    assert again.metadata.resource_version == updated.metadata.resource_version


def test_a_conflict_names_the_manager_and_force_takes_the_field(core: client.CoreV1Api) -> None:
    apply_configmap(core, configmap(a="1"), "first")
    with pytest.raises(client.ApiException) as caught:
        apply_configmap(core, configmap(a="2"), "second")
    assert caught.value.status == 409
    status = status_of(caught.value)
    assert status["reason"] == "Conflict"
    assert status["message"] == 'Apply failed with 1 conflict: conflict with "first": .data.a'
    assert status["details"] == {"causes": [
        {"reason": "FieldManagerConflict", "message": 'conflict with "first"', "field": ".data.a"}
    ]}
    forced, _ = apply_configmap(core, configmap(a="2"), "second", force=True)
    assert forced.data == {"a": "2"}
    assert set(managers(forced)) == {"second"}


def test_fields_a_manager_stops_applying_are_removed(core: client.CoreV1Api) -> None:
    apply_configmap(core, configmap(a="1", b="2"), "tool")
    applied, _ = apply_configmap(core, configmap(a="1"), "tool")
    assert applied.data == {"a": "1"}


def test_other_writes_are_recorded_as_updates_by_their_manager(
    server: RunningApiServer, core: client.CoreV1Api
) -> None:
    core.create_namespaced_config_map("default", configmap(a="1"), field_manager="creator")
    core.patch_namespaced_config_map("cm", "default", {"data": {"b": "2"}})
    response = raw(server, "PATCH", CM_PATH, {"data": {"c": "3"}},
                   headers={"Content-Type": "application/merge-patch+json",
                            "User-Agent": "curl/8.5.0"})
    assert response.status == 200
    by_manager = {e["manager"]: e for e in response.json()["metadata"]["managedFields"]}
    assert set(by_manager) == {"creator", "OpenAPI-Generator", "curl"}
    assert by_manager["creator"]["fieldsV1"] == {"f:data": {".": {}, "f:a": {}}}
    assert by_manager["curl"]["operation"] == "Update"
    assert by_manager["curl"]["fieldsV1"] == {"f:data": {"f:c": {}}}


def test_custom_resources_are_applied_with_their_schema(widgets: client.CustomObjectsApi) -> None:
    body = widget("w", size=2, color="blue")
    _, status, _ = widgets.patch_namespaced_custom_object_with_http_info(
        "example.com", "v1", "default", "widgets", "w", body, field_manager="tool",
        _content_type=APPLY,
    )
    assert status == 201  # (the client reads no body from a 201 to a PATCH)
    created = widgets.get_namespaced_custom_object("example.com", "v1", "default", "widgets", "w")
    assert created["spec"] == {"size": 2, "color": "blue"}
    [entry] = created["metadata"]["managedFields"]
    assert entry["fieldsV1"] == {"f:spec": {"f:color": {}, "f:size": {}}}
    with pytest.raises(client.ApiException) as caught:
        widgets.patch_namespaced_custom_object(
            "example.com", "v1", "default", "widgets", "w", widget("w", size=3),
            field_manager="other", _content_type=APPLY,
        )
    assert status_of(caught.value)["message"] == (
        'Apply failed with 1 conflict: conflict with "tool": .spec.size'
    )
    with pytest.raises(client.ApiException) as invalid:
        widgets.patch_namespaced_custom_object(
            "example.com", "v1", "default", "widgets", "w", widget("w", size=99),
            field_manager="tool", _content_type=APPLY,
        )
    assert invalid.value.status == 422


def test_apply_needs_a_field_manager_and_force_needs_apply(server: RunningApiServer) -> None:
    missing = raw(server, "PATCH", CM_PATH, configmap(a="1"), headers={"Content-Type": APPLY})
    assert missing.status == 422
    assert missing.json()["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
        "is required for apply patch"
    )
    raw(server, "PATCH", CM_PATH + "?fieldManager=t", configmap(a="1"),
        headers={"Content-Type": APPLY})
    forced = raw(server, "PATCH", CM_PATH + "?force=true", {"data": {}},
                 headers={"Content-Type": "application/merge-patch+json"})
    assert forced.status == 422
    assert "force: Forbidden: may not be specified for non-apply patch" in forced.json()["message"]


def test_dry_run_apply_creates_nothing(server: RunningApiServer) -> None:
    response = raw(server, "PATCH", CM_PATH + "?fieldManager=t&dryRun=All", configmap(a="1"),
                   headers={"Content-Type": APPLY})
    assert response.status == 201
    assert raw(server, "GET", CM_PATH).status == 404


def test_already_exists_has_no_empty_group(
    server: RunningApiServer, widgets: client.CustomObjectsApi
) -> None:
    raw(server, "POST", "/api/v1/namespaces/default/configmaps", configmap())
    again = raw(server, "POST", "/api/v1/namespaces/default/configmaps", configmap())
    assert again.json() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'configmaps "cm" already exists', "reason": "AlreadyExists",
        "details": {"name": "cm", "kind": "configmaps"}, "code": 409,
    }
    path = "/apis/example.com/v1/namespaces/default/widgets"
    raw(server, "POST", path, widget("w"))
    details = raw(server, "POST", path, widget("w")).json()["details"]
    assert details == {"name": "w", "group": "example.com", "kind": "widgets"}


def test_openapi_v2_is_served_as_protobuf_when_asked(server: RunningApiServer) -> None:
    accept = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
    response = raw(server, "GET", "/openapi/v2", headers={"Accept": accept})
    assert response.status == 200
    assert response.headers["Content-Type"] == (
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    )
    assert response.body.startswith(b"\n\x032.0")  # field 1 (swagger) = "2.0"
    assert raw(server, "GET", "/openapi/v2").json()["swagger"] == "2.0"


def test_what_admission_adds_to_a_pod_is_no_managers(core: client.CoreV1Api) -> None:
    # kube-apiserver's create handler runs the field manager before the mutating admission
    # plugins: the creator owns what it sent and what defaulting filled in, not the service
    # account, its token volume or the mounts (nor the priority) the plugins add.
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "owned"},
           "spec": {"containers": [{"name": "main", "image": "busybox:1"}]}}
    created = core.create_namespaced_pod("default", pod, field_manager="creator")
    try:
        assert created.spec.service_account_name == "default"
        assert created.spec.volumes[0].name.startswith("kube-api-access-")
        entry = managers(created)["creator"]
        assert entry.fields_v1 == {"f:spec": {
            "f:containers": {'k:{"name":"main"}': {
                ".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
                "f:resources": {}, "f:terminationMessagePath": {},
                "f:terminationMessagePolicy": {}}},
            "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {},
            "f:schedulerName": {}, "f:securityContext": {}, "f:terminationGracePeriodSeconds": {},
        }}
        labelled = core.patch_namespaced_pod("owned", "default",
                                             {"metadata": {"labels": {"a": "b"}}},
                                             field_manager="labeller")
        assert managers(labelled)["labeller"].fields_v1 == {
            "f:metadata": {"f:labels": {".": {}, "f:a": {}}}}
    finally:
        core.delete_namespaced_pod("owned", "default", grace_period_seconds=0)
