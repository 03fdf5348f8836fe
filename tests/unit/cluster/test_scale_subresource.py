"""The scale subresource's pieces: reading paths, decoding Scales, checks, ownership, documents."""

from __future__ import annotations

from typing import Any

import pytest

from engine.cluster.apiserver.endpoints.discovery import api_resource_list
from engine.cluster.apiserver.endpoints.openapi import openapi_v2, openapi_v3_document
from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.registry.crds import crd_types
from engine.cluster.apiserver.registry.resources import ResourceType, ScalePaths
from engine.cluster.apiserver.registry.scale import (
    UNSET,
    ScaleWriter,
    applied,
    current_scale,
    requested_replicas,
    scale_causes,
    scale_of,
    scaled,
    unknown_fields,
    updated,
)

PATHS = ScalePaths(".spec.size.count", ".status.count", ".status.selector")
GADGETS = ResourceType(
    "example.com", "v1", "Gadget", "gadgets", "gadget", True,
    subresources=frozenset({"status", "scale"}), schema={"type": "object"},
    strategic_merge=False, scale=PATHS,
)
CREATOR = {
    "manager": "creator", "operation": "Update", "apiVersion": "example.com/v1",
    "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
    "fieldsV1": {"f:spec": {".": {}, "f:size": {".": {}, "f:count": {}}, "f:color": {}}},
}


def gadget(
    replicas: Any = 2, *, managed: list[dict[str, Any]] | None = None, **status: Any
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": "g", "namespace": "default", "uid": "u-1", "resourceVersion": "7",
        "creationTimestamp": "2026-01-01T00:00:00Z", "generation": 1,
        "labels": {"not": "shown"},
    }
    if managed is not None:
        metadata["managedFields"] = managed
    spec: dict[str, Any] = {"color": "red"}
    if replicas is not None:
        spec["size"] = {"count": replicas}
    return {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": metadata,
            "spec": spec, **({"status": status} if status else {})}


def test_a_scale_shows_identity_counts_and_selector_as_go_encodes_them() -> None:
    assert scale_of(GADGETS, gadget(3, count=1, selector="app=g")) == {
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {"name": "g", "namespace": "default", "uid": "u-1", "resourceVersion": "7",
                     "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"replicas": 3},
        "status": {"replicas": 1, "selector": "app=g"},
    }
    zero = scale_of(GADGETS, gadget(0))
    assert zero["spec"] == {} and zero["status"] == {"replicas": 0}


def test_reading_a_scale_without_spec_replicas() -> None:
    with pytest.raises(ApiError) as error:
        scale_of(GADGETS, gadget(None))
    assert (error.value.code, error.value.reason) == (500, "InternalError")
    assert current_scale(GADGETS, gadget(None))["spec"] == {"replicas": UNSET}


def test_a_wrong_type_on_a_path_is_an_accessor_error() -> None:
    with pytest.raises(ApiError) as error:
        scale_of(GADGETS, gadget("two"))
    assert error.value.code == 500
    assert error.value.message == (
        ".spec.size.count accessor error: two is of the type string, expected int64"
    )
    causes = scale_causes(PATHS, gadget(2, count=True, selector=5), spec=True)
    assert [(c.field, c.message) for c in causes] == [
        (".status.count",
         "Invalid value: 0: .status.count accessor error: true is of the type bool, "
         "expected int64"),
        (".status.selector",
         'Invalid value: "": .status.selector accessor error: 5 is of the type int64, expected '
         "string"),
    ]


@pytest.mark.parametrize(
    ("count", "spec", "expected"),
    [
        (-1, True, [(".spec.size.count", "Invalid value: -1: should be a non-negative integer")]),
        (2**31, True, [(".spec.size.count",
                        "Invalid value: 2147483648: should be less than or equal to 2147483647")]),
        (-1, False, []),  # a /status write does not check the spec
        (2**31 - 1, True, []),
        (None, True, []),
    ],
)
def test_every_write_keeps_the_counts_in_int32_range(
    count: int | None, spec: bool, expected: list[tuple[str, str]]
) -> None:
    causes = scale_causes(PATHS, gadget(count), spec=spec)
    assert [(c.field, c.message) for c in causes] == expected


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"spec": {"replicas": "2"}}, "json: cannot unmarshal string into Go struct field "
                                      "ScaleSpec.spec.replicas of type int32"),
        ({"spec": {"replicas": 1.5}}, "json: cannot unmarshal number 1.5 into Go struct field "
                                      "ScaleSpec.spec.replicas of type int32"),
        ({"spec": {"replicas": 2**31}}, "json: cannot unmarshal number 2147483648 into Go "
                                        "struct field ScaleSpec.spec.replicas of type int32"),
        ({"spec": []}, "json: cannot unmarshal array into Go struct field Scale.spec of type "
                       "v1.ScaleSpec"),
    ],
)
def test_a_scale_body_decodes_as_the_go_type(body: dict[str, Any], message: str) -> None:
    with pytest.raises(ApiError) as error:
        requested_replicas(GADGETS, body)
    assert error.value.code == 400
    assert error.value.message == f'Scale in version "v1" cannot be handled as a Scale: {message}'


def test_absent_replicas_read_as_zero_and_the_unset_marker_is_refused() -> None:
    assert requested_replicas(GADGETS, {"spec": {}}) == 0
    assert requested_replicas(GADGETS, {"apiVersion": "apps/v1beta2", "kind": "Scale"}) == 0
    with pytest.raises(ApiError) as error:
        requested_replicas(GADGETS, {"spec": {"replicas": UNSET}})
    assert error.value.message == 'the spec replicas field ".spec.size.count" cannot be empty'
    with pytest.raises(ApiError) as wrong_kind:
        requested_replicas(GADGETS, {"apiVersion": "example.com/v1", "kind": "Gadget"})
    assert wrong_kind.value.message == (
        'Gadget in version "v1" cannot be handled as a Scale: no kind "Gadget" is registered for '
        'version "example.com/v1"'
    )


def test_unknown_scale_fields_are_named_with_their_path() -> None:
    body = {"spec": {"replicas": 1, "size": 2}, "metadata": {"name": "g", "nmae": "x"},
            "extra": True, "status": {"replicas": 0}}
    assert unknown_fields(body) == [
        'unknown field "extra"', 'unknown field "metadata.nmae"', 'unknown field "spec.size"',
    ]


def test_setting_replicas_creates_missing_maps_and_leaves_the_old_object_alone() -> None:
    old = gadget(None)
    new = scaled(GADGETS, old, 4)
    assert new["spec"] == {"color": "red", "size": {"count": 4}}
    assert "size" not in old["spec"]
    blocked = {**old, "spec": {"size": 3}}
    with pytest.raises(ApiError) as error:
        scaled(GADGETS, blocked, 4)
    assert error.value.message == (
        "value cannot be set because .spec.size is not a map[string]interface{}"
    )


def test_an_update_through_scale_moves_ownership_of_the_replicas_only() -> None:
    change = updated(GADGETS, gadget(2, managed=[CREATOR]), {"spec": {"replicas": 3}},
                     ScaleWriter("hpa"), field_validation="Warn", uid_precondition=False)
    assert change.obj["spec"]["size"] == {"count": 3}
    assert change.managed == [
        {"manager": "hpa", "operation": "Update", "apiVersion": "example.com/v1",
         "fieldsType": "FieldsV1",
         "fieldsV1": {"f:spec": {"f:size": {"f:count": {}}}}, "subresource": "scale"},
        {**CREATOR, "fieldsV1": {"f:spec": {".": {}, "f:color": {}, "f:size": {}}}},
    ]


def test_an_update_that_changes_nothing_keeps_the_managed_fields() -> None:
    old = gadget(2, managed=[CREATOR])
    change = updated(GADGETS, old, {"spec": {"replicas": 2}}, ScaleWriter("hpa"),
                     field_validation="Warn", uid_precondition=False)
    assert change.managed == [CREATOR]
    untracked = updated(GADGETS, gadget(2), {"spec": {"replicas": 3}}, ScaleWriter("hpa"),
                        field_validation="Warn", uid_precondition=False)
    assert untracked.managed is None  # an object nobody tracked is not tracked from here


def test_preconditions_of_a_put() -> None:
    old = gadget(2)
    with pytest.raises(ApiError) as stale:
        updated(GADGETS, old, {"metadata": {"resourceVersion": "6"}, "spec": {"replicas": 1}},
                ScaleWriter("me"), field_validation="Warn", uid_precondition=True)
    with pytest.raises(ApiError) as uid:
        updated(GADGETS, old, {"metadata": {"uid": "u-2"}, "spec": {"replicas": 1}},
                ScaleWriter("me"), field_validation="Warn", uid_precondition=True)
    with pytest.raises(ApiError) as name:
        updated(GADGETS, old, {"metadata": {"name": "h"}, "spec": {"replicas": 1}},
                ScaleWriter("me"), field_validation="Warn", uid_precondition=True)
    assert (stale.value.code, uid.value.code, name.value.code) == (409, 409, 400)
    assert uid.value.message == (
        'Operation cannot be fulfilled on gadgets.example.com "g": StorageError: invalid object, '
        "Code: 4, Key: /registry/example.com/gadgets/default/g, ResourceVersion: 0, "
        "AdditionalErrorMsg: Precondition failed: UID in precondition: u-2, UID in object meta: "
        "u-1"
    )


def test_an_apply_through_scale_conflicts_unless_forced_and_prunes_what_it_left() -> None:
    config = {"apiVersion": "autoscaling/v1", "kind": "Scale", "spec": {"replicas": 5}}
    with pytest.raises(ApiError) as conflict:
        applied(GADGETS, gadget(2, managed=[CREATOR]), config, ScaleWriter("hpa", applied=True))
    assert conflict.value.code == 409
    same = applied(GADGETS, gadget(5, managed=[CREATOR]), config,
                   ScaleWriter("hpa", applied=True))
    assert [e["manager"] for e in same.managed or []] == ["hpa", "creator"]  # shared, no conflict
    forced = applied(GADGETS, gadget(2, managed=[CREATOR]), config,
                     ScaleWriter("hpa", applied=True, force=True))
    assert forced.obj["spec"]["size"] == {"count": 5}
    mine = forced.managed or []
    assert mine[0]["operation"] == "Apply" and "time" not in mine[0]
    dropped = {"apiVersion": "autoscaling/v1", "kind": "Scale", "spec": {}}
    after = applied(GADGETS, {**forced.obj, "metadata": {**forced.obj["metadata"],
                                                          "managedFields": mine}},
                    dropped, ScaleWriter("hpa", applied=True))
    assert after.obj["spec"]["size"] == {"count": 0}
    assert [e["manager"] for e in after.managed or []] == ["creator"]


def test_a_crd_version_serves_scale_only_when_it_declares_it() -> None:
    version = {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {}},
               "subresources": {"status": {}, "scale": {
                   "specReplicasPath": ".spec.size.count", "statusReplicasPath": ".status.count"}}}
    plain = {**version, "name": "v2", "storage": False, "subresources": {"status": {}}}
    crd = {"metadata": {"name": "gadgets.example.com"}, "spec": {
        "group": "example.com", "names": {"plural": "gadgets", "kind": "Gadget"},
        "versions": [version, plain]}}
    served, _ = crd_types(crd)
    assert served[0].scale == ScalePaths(".spec.size.count", ".status.count")
    assert served[0].subresources == {"status", "scale"}
    assert served[1].scale is None and served[1].subresources == {"status"}
    entries = api_resource_list("example.com", "v1", served)["resources"]
    assert entries[1] == {"name": "gadgets/scale", "singularName": "", "namespaced": True,
                          "kind": "Scale", "verbs": ["get", "patch", "update"],
                          "group": "autoscaling", "version": "v1"}


def test_openapi_scale_paths_read_and_write_an_autoscaling_scale() -> None:
    document = openapi_v3_document("example.com", "v1", [GADGETS])
    item = document["paths"]["/apis/example.com/v1/namespaces/{namespace}/gadgets/{name}/scale"]
    scale_ref = {"$ref": "#/components/schemas/io.k8s.api.autoscaling.v1.Scale"}
    assert item["get"]["responses"]["200"]["content"]["application/json"]["schema"] == scale_ref
    assert item["put"]["requestBody"]["content"]["*/*"]["schema"] == scale_ref
    assert item["get"]["operationId"] == "readExampleComV1NamespacedGadgetScale"
    schemas = document["components"]["schemas"]
    assert schemas["io.k8s.api.autoscaling.v1.Scale"]["x-kubernetes-group-version-kind"] == [
        {"group": "autoscaling", "version": "v1", "kind": "Scale"}]
    spec = schemas["io.k8s.api.autoscaling.v1.ScaleSpec"]["properties"]["replicas"]
    assert (spec["type"], spec["format"]) == ("integer", "int32")
    v2 = openapi_v2([GADGETS])
    assert "io.k8s.api.autoscaling.v1.ScaleStatus" in v2["definitions"]
