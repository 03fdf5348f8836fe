"""CustomResourceDefinitions: established at once, schemas enforced, deletion cascades."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from tests.integration.apiserver.conftest import raw, status_of, widget, widget_crd
from tests.polling import eventually

GROUP, VERSION, PLURAL = "example.com", "v1", "widgets"


def test_crd_is_established_and_served_at_once(api: client.ApiClient) -> None:
    extensions = client.ApiextensionsV1Api(api)
    created = extensions.create_custom_resource_definition(widget_crd())
    conditions = {c.type: c.status for c in created.status.conditions}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    assert created.status.accepted_names.kind == "Widget"
    assert created.status.stored_versions == ["v1"]
    resources = client.CustomObjectsApi(api).get_api_resources(GROUP, VERSION)
    assert [r.name for r in resources.resources] == ["widgets", "widgets/status"]
    assert resources.resources[0].short_names == ["wd"]


def test_invalid_crd_is_rejected(api: client.ApiClient) -> None:
    crd = widget_crd()
    crd["metadata"]["name"] = "wrong.example.com"
    with pytest.raises(client.ApiException) as error:
        client.ApiextensionsV1Api(api).create_custom_resource_definition(crd)
    assert error.value.status == 422
    assert "metadata.name" in status_of(error.value)["message"]


def test_custom_resource_crud(widgets: client.CustomObjectsApi) -> None:
    created = widgets.create_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, widget("w")
    )
    assert created["spec"] == {"size": 3, "color": "red"}
    assert created["metadata"]["generation"] == 1
    patched = widgets.patch_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, "w", {"spec": {"size": 4}}
    )
    assert patched["spec"]["size"] == 4 and patched["metadata"]["generation"] == 2
    listed = widgets.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)
    assert listed["kind"] == "WidgetList" and listed["apiVersion"] == "example.com/v1"
    assert [w["metadata"]["name"] for w in listed["items"]] == ["w"]
    widgets.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w")
    with pytest.raises(client.ApiException) as error:
        widgets.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "w")
    assert error.value.status == 404


def test_status_is_ignored_on_create_and_main_endpoint(widgets: client.CustomObjectsApi) -> None:
    body = {**widget("w"), "status": {"ready": True}}
    created = widgets.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, body)
    assert "status" not in created
    status = widgets.patch_namespaced_custom_object_status(
        GROUP, VERSION, "default", PLURAL, "w", {"status": {"ready": True}, "spec": {"size": 9}}
    )
    assert status["status"] == {"ready": True} and status["spec"]["size"] == 3
    assert status["metadata"]["generation"] == 1


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"size": 0}, "spec.size"),
        ({"size": "big"}, "spec.size"),
        ({"size": 3, "color": "green"}, "spec.color"),
        ({"size": 3, "tag": "UPPER"}, "spec.tag"),
        ({"color": "red"}, "spec.size"),
        ({"size": 7}, "spec"),
    ],
)
def test_schema_violations_are_422_naming_the_field(
    widgets: client.CustomObjectsApi, spec: dict[str, object], field: str
) -> None:
    body = {**widget("w"), "spec": spec}
    with pytest.raises(client.ApiException) as error:
        widgets.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, body)
    status = status_of(error.value)
    assert error.value.status == 422 and status["reason"] == "Invalid"
    assert field in {c["field"] for c in status["details"]["causes"]}


def test_transition_rule_uses_old_self(widgets: client.CustomObjectsApi) -> None:
    widgets.create_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, widget("w", tag="first")
    )
    with pytest.raises(client.ApiException) as error:
        widgets.patch_namespaced_custom_object(
            GROUP, VERSION, "default", PLURAL, "w", {"spec": {"tag": "second"}}
        )
    assert "tag is immutable" in status_of(error.value)["message"]


def test_unknown_fields_strict_warn_and_pruned(
    widgets: client.CustomObjectsApi, api: client.ApiClient
) -> None:
    body = widget("w", bogus=1)
    with pytest.raises(client.ApiException) as error:
        widgets.create_namespaced_custom_object(
            GROUP, VERSION, "default", PLURAL, body, field_validation="Strict"
        )
    assert error.value.status == 400
    assert 'strict decoding error: unknown field "spec.bogus"' in status_of(error.value)["message"]
    response = widgets.create_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, body, field_validation="Warn", _preload_content=False
    )
    assert 'unknown field \\"spec.bogus\\"' in response.headers["Warning"]
    stored = json.loads(response.data)
    assert "bogus" not in stored["spec"]
    kept = widget("k", extra={"anything": {"goes": 1}})
    created = widgets.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, kept)
    assert created["spec"]["extra"] == {"anything": {"goes": 1}}


def test_strategic_merge_patch_is_415_for_custom_resources(
    widgets: client.CustomObjectsApi, server: RunningApiServer
) -> None:
    widgets.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("w"))
    response = raw(
        server,
        "PATCH",
        "/apis/example.com/v1/namespaces/default/widgets/w",
        {"spec": {"size": 4}},
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    )
    assert response.status == 415
    assert response.json()["reason"] == "UnsupportedMediaType"


def test_printer_columns_served_as_table(
    widgets: client.CustomObjectsApi, server: RunningApiServer
) -> None:
    widgets.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("w", 4))
    response = raw(
        server,
        "GET",
        "/apis/example.com/v1/namespaces/default/widgets",
        headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
    )
    table = response.json()
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]][:3] == ["Name", "Size", "Color"]
    assert table["rows"][0]["cells"][:3] == ["w", 4, "red"]


def test_deleting_the_crd_removes_its_objects_and_types(
    widgets: client.CustomObjectsApi, api: client.ApiClient
) -> None:
    widgets.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, widget("w"))
    client.ApiextensionsV1Api(api).delete_custom_resource_definition("widgets.example.com")

    def gone() -> bool:
        try:
            widgets.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)
        except client.ApiException as exc:
            return exc.status == 404
        return False

    eventually(gone)
    extensions = client.ApiextensionsV1Api(api)
    assert extensions.list_custom_resource_definition().items == []
    extensions.create_custom_resource_definition(widget_crd())
    listed = widgets.list_namespaced_custom_object(GROUP, VERSION, "default", PLURAL)
    assert listed["items"] == []


def test_cluster_scoped_custom_resources(api: client.ApiClient) -> None:
    client.ApiextensionsV1Api(api).create_custom_resource_definition(widget_crd(scope="Cluster"))
    objects = client.CustomObjectsApi(api)
    created = objects.create_cluster_custom_object(GROUP, VERSION, PLURAL, widget("w"))
    assert "namespace" not in created["metadata"]
    assert objects.get_cluster_custom_object(GROUP, VERSION, PLURAL, "w")["spec"]["size"] == 3
