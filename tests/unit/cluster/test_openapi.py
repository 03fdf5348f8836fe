"""OpenAPI documents: what kubectl's field-validation check, apply and explain read."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from engine.cluster.apiserver.endpoints.openapi import (
    openapi_v2,
    openapi_v3_document,
    openapi_v3_paths,
)
from engine.cluster.apiserver.registry.builtins import CONFIGMAPS, NAMESPACES, PODS
from engine.cluster.apiserver.registry.resources import ResourceType
from engine.cluster.apiserver.schema.openapi_schemas import builtin_fields

JOB_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "description": "What to run.",
            "properties": {
                "replicas": {"type": "integer", "minimum": 0},
                "image": {"type": "string", "nullable": True},
            },
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}
JOBS = ResourceType(
    "jobmachine.dev",
    "v1alpha1",
    "MachineJob",
    "machinejobs",
    "machinejob",
    True,
    ("mjob",),
    subresources=frozenset({"status"}),
    schema=JOB_SCHEMA,
    strategic_merge=False,
)
TYPES = [PODS, NAMESPACES, CONFIGMAPS, JOBS]


def supports_query_param(doc: dict[str, Any], gvk: dict[str, str], param: str) -> bool:
    """kubectl's supportsQueryParamV3: the first PATCH operation of the kind must take `param`."""
    for item in doc["paths"].values():
        patch = item.get("patch")
        if patch is None or patch.get("x-kubernetes-group-version-kind") != gvk:
            continue
        return any(p["name"] == param and p["in"] == "query" for p in patch.get("parameters", []))
    raise AssertionError(f"no PATCH operation for {gvk}")


def operations(
    doc: dict[str, Any], gvk: dict[str, str]
) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            if method != "parameters" and operation["x-kubernetes-group-version-kind"] == gvk:
                yield path, method, operation


def refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from refs(value)


def test_index_lists_each_group_version_with_a_content_hash() -> None:
    index = openapi_v3_paths(TYPES)["paths"]
    assert set(index) == {"api/v1", "apis/jobmachine.dev/v1alpha1"}
    url = index["apis/jobmachine.dev/v1alpha1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/jobmachine.dev/v1alpha1?hash=")
    changed = replace(JOBS, schema={"type": "object"})
    changed_index = openapi_v3_paths([PODS, NAMESPACES, CONFIGMAPS, changed])["paths"]
    assert changed_index["apis/jobmachine.dev/v1alpha1"] != index["apis/jobmachine.dev/v1alpha1"]
    assert changed_index["api/v1"] == index["api/v1"]


def test_unknown_group_version_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        openapi_v3_document("batch", "v1", TYPES)


@pytest.mark.parametrize(
    ("group", "version", "kind"),
    [
        ("", "v1", "Pod"),
        ("", "v1", "ConfigMap"),
        ("", "v1", "Namespace"),
        ("jobmachine.dev", "v1alpha1", "MachineJob"),
    ],
)
def test_every_kind_tells_kubectl_the_server_validates_fields(
    group: str, version: str, kind: str
) -> None:
    doc = openapi_v3_document(group, version, TYPES)
    gvk = {"group": group, "version": version, "kind": kind}
    assert supports_query_param(doc, gvk, "fieldValidation")
    # kubectl takes whichever PATCH of the kind it meets first: the status one must agree.
    for _, method, operation in operations(doc, gvk):
        names = {p["name"] for p in operation["parameters"]}
        if method in ("post", "put", "patch"):
            assert {"fieldValidation", "dryRun", "fieldManager"} <= names


def test_paths_follow_the_resource_scope_and_verbs() -> None:
    core = openapi_v3_document("", "v1", TYPES)["paths"]
    assert set(core["/api/v1/namespaces/{namespace}/pods"]) == {
        "parameters",
        "get",
        "post",
        "delete",
    }
    assert set(core["/api/v1/namespaces/{namespace}/pods/{name}"]) == {
        "parameters",
        "get",
        "put",
        "patch",
        "delete",
    }
    assert set(core["/api/v1/namespaces/{namespace}/pods/{name}/status"]) == {
        "parameters",
        "get",
        "put",
        "patch",
    }
    assert core["/api/v1/pods"]["get"]["operationId"] == "listCoreV1PodForAllNamespaces"
    assert set(core["/api/v1/namespaces"]) == {"parameters", "get", "post"}  # no deletecollection
    assert "/api/v1/namespaces/{name}/status" in core
    item_parameters = core["/api/v1/namespaces/{namespace}/pods/{name}"]["parameters"]
    assert [(p["name"], p["in"]) for p in item_parameters] == [
        ("name", "path"),
        ("namespace", "path"),
        ("pretty", "query"),
    ]
    jobs = openapi_v3_document("jobmachine.dev", "v1alpha1", TYPES)["paths"]
    item = jobs["/apis/jobmachine.dev/v1alpha1/namespaces/{namespace}/machinejobs/{name}"]
    assert item["patch"]["operationId"] == "patchJobmachineDevV1alpha1NamespacedMachineJob"
    assert item["get"]["x-kubernetes-action"] == "get"


def test_strategic_merge_is_not_advertised_so_kubectl_uses_its_own_patch_metadata() -> None:
    for group, version, kind in (("", "v1", "Pod"), ("jobmachine.dev", "v1alpha1", "MachineJob")):
        doc = openapi_v3_document(group, version, TYPES)
        for _, method, operation in operations(
            doc, {"group": group, "version": version, "kind": kind}
        ):
            if method == "patch":
                assert set(operation["requestBody"]["content"]) == {
                    "application/json-patch+json",
                    "application/merge-patch+json",
                    "application/apply-patch+yaml",
                }


def test_custom_resource_schema_is_the_crd_schema_plus_object_fields() -> None:
    schemas = openapi_v3_document("jobmachine.dev", "v1alpha1", TYPES)["components"]["schemas"]
    job = schemas["dev.jobmachine.v1alpha1.MachineJob"]
    assert job["x-kubernetes-group-version-kind"] == [
        {"group": "jobmachine.dev", "version": "v1alpha1", "kind": "MachineJob"}
    ]
    assert job["properties"]["spec"] == JOB_SCHEMA["properties"]["spec"]
    assert {"apiVersion", "kind", "metadata", "spec", "status"} == set(job["properties"])
    assert job["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
    ]
    assert "properties" in JOB_SCHEMA and "metadata" not in JOB_SCHEMA["properties"]  # not mutated
    listing = schemas["dev.jobmachine.v1alpha1.MachineJobList"]
    assert listing["x-kubernetes-group-version-kind"][0]["kind"] == "MachineJobList"


def test_builtin_schemas_name_their_top_level_fields() -> None:
    schemas = openapi_v3_document("", "v1", TYPES)["components"]["schemas"]
    assert set(schemas["io.k8s.api.core.v1.Pod"]["properties"]) == {
        "apiVersion",
        "kind",
        "metadata",
        "spec",
        "status",
    }
    assert set(schemas["io.k8s.api.core.v1.ConfigMap"]["properties"]) == {
        "apiVersion",
        "kind",
        "metadata",
        "data",
        "binaryData",
        "immutable",
    }
    assert schemas["io.k8s.api.core.v1.Pod"]["x-kubernetes-group-version-kind"] == [
        {"group": "", "version": "v1", "kind": "Pod"}
    ]


def test_every_reference_resolves() -> None:
    for group, version in (("", "v1"), ("jobmachine.dev", "v1alpha1")):
        doc = openapi_v3_document(group, version, TYPES)
        for target in refs(doc):
            assert target.removeprefix("#/components/schemas/") in doc["components"]["schemas"], (
                target
            )
    v2 = openapi_v2(TYPES)
    for target in refs(v2):
        assert target.removeprefix("#/definitions/") in v2["definitions"], target


def test_swagger2_document() -> None:
    doc = openapi_v2(TYPES)
    assert doc["swagger"] == "2.0"
    job = doc["definitions"]["dev.jobmachine.v1alpha1.MachineJob"]
    assert job["x-kubernetes-group-version-kind"][0]["kind"] == "MachineJob"
    assert "nullable" not in job["properties"]["spec"]["properties"]["image"]
    patch = doc["paths"]["/apis/jobmachine.dev/v1alpha1/namespaces/{namespace}/machinejobs/{name}"][
        "patch"
    ]
    assert any(p["name"] == "fieldValidation" and p["in"] == "query" for p in patch["parameters"])
    assert "application/strategic-merge-patch+json" not in patch["consumes"]
    assert patch["parameters"][0] == {
        "name": "body",
        "in": "body",
        "required": True,
        "schema": {"type": "object"},
    }


def test_builtin_top_level_fields_for_strict_validation() -> None:
    assert builtin_fields("", "ConfigMap") == frozenset(
        {
            "apiVersion",
            "kind",
            "metadata",
            "data",
            "binaryData",
            "immutable",
        }
    )
    assert builtin_fields("", "Pod") == frozenset(
        {"apiVersion", "kind", "metadata", "spec", "status"}
    )
    assert builtin_fields("apps", "Deployment") is None
