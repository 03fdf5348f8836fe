"""ControllerRevisions (apps/v1): any JSON as data, a non-negative revision, data frozen.

As kube-apiserver: `data` is a RawExtension kept as sent but required,
`revision` is an int64 that reads 0 when absent, must not be negative and may
change (only data is immutable), and the group shows in discovery, OpenAPI
and Tables exactly as a real server shows it.
"""

from __future__ import annotations

import asyncio
import datetime
from pathlib import Path
from typing import Any

import pytest

from engine.cluster.apiserver.admission.typed_decoding import decode_typed
from engine.cluster.apiserver.core import Core
from engine.cluster.apiserver.encoding.protobuf import decode_request
from engine.cluster.apiserver.endpoints.discovery import api_group_list, api_resource_list
from engine.cluster.apiserver.endpoints.openapi import openapi_v2, openapi_v3_document
from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.printing.tables import to_table
from engine.cluster.apiserver.registry.builtins import (
    BUILTIN_TYPES,
    CONFIGMAPS,
    CONTROLLER_REVISIONS,
)
from engine.cluster.apiserver.registry.deletion import DeleteOptions, delete
from engine.cluster.apiserver.storage.objects import ObjectTable
from engine.cluster.apiserver.storage.persistence import Journal
from engine.cluster.apiserver.validation.builtin_validation import validate_builtin
from tests.unit.cluster.store_support import ManualReactor, make_core
from tests.unit.cluster.test_protobuf import envelope, ld, num

NOW = datetime.datetime(2025, 6, 1, 12, 0, 0, tzinfo=datetime.UTC)
SCHEMA = "io.k8s.api.apps.v1.ControllerRevision"


def revision(name: str = "web-1", **fields: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}, **fields}


def messages(obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    return [f"{c.field}: {c.message}" for c in validate_builtin("ControllerRevision", obj, old)]


# --- decoding and validation -------------------------------------------------------------------


@pytest.mark.parametrize("data", [{"spec": {"x": 1}}, {}, "a string", [1, 2], 0, False])
def test_data_may_hold_any_json_and_is_kept_as_sent(data: Any) -> None:
    obj = decode_typed(CONTROLLER_REVISIONS, revision(data=data, revision=1))
    assert obj["data"] == data
    assert messages(obj) == []


@pytest.mark.parametrize("fields", [{}, {"data": None}])
def test_data_is_mandatory(fields: dict[str, Any]) -> None:
    assert messages(revision(revision=1, **fields)) == ["data: Required value: data is mandatory"]


def test_revision_reads_zero_when_absent_as_go_writes_it() -> None:
    assert decode_typed(CONTROLLER_REVISIONS, revision(data={}))["revision"] == 0
    assert decode_typed(CONTROLLER_REVISIONS, revision(data={}, revision=None))["revision"] == 0


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, []),
        ((1 << 63) - 1, []),
        (-1, ["revision: Invalid value: -1: must be greater than or equal to 0"]),
    ],
)
def test_revision_is_never_negative(value: int, expected: list[str]) -> None:
    decoded = decode_typed(CONTROLLER_REVISIONS, revision(data={}, revision=value))
    assert messages(decoded) == expected


@pytest.mark.parametrize(
    ("value", "kind"),
    [("1", "string"), (True, "bool"), (1.5, "number"), (1 << 63, "number"), ([1], "array")],
)
def test_a_revision_that_is_no_int64_is_a_400(value: Any, kind: str) -> None:
    with pytest.raises(ApiError) as caught:
        decode_typed(CONTROLLER_REVISIONS, revision(data={}, revision=value))
    assert caught.value.code == 400
    assert caught.value.message == (
        'ControllerRevision in version "v1" cannot be handled as a ControllerRevision: json: '
        f"cannot unmarshal {kind} into Go struct field ControllerRevision.revision of type int64"
    )


def test_only_data_is_immutable() -> None:
    old = revision(data={"spec": 1}, revision=1)
    assert messages({**old, "revision": 7}, old) == []
    relabelled = {**old, "metadata": {**old["metadata"], "labels": {"app": "web"}}}
    assert messages(relabelled, old) == []
    assert messages({**old, "data": {"spec": 2}}, old) == [
        'data: Invalid value: {"spec":2}: field is immutable'
    ]


def test_the_store_keeps_revision_zero_and_refuses_data_changes(core: Core) -> None:
    created = core.store.create(CONTROLLER_REVISIONS, "default", revision(data={"a": 1}))
    assert created.entry.obj["revision"] == 0
    assert created.entry.obj["apiVersion"] == "apps/v1"
    patch = b'{"data": {"a": 2}}'
    with pytest.raises(ApiError) as caught:
        core.store.patch(
            CONTROLLER_REVISIONS, "default", "web-1", "application/merge-patch+json", patch
        )
    assert caught.value.code == 422
    assert caught.value.message.startswith('ControllerRevision.apps "web-1" is invalid: data:')
    core.store.patch(
        CONTROLLER_REVISIONS, "default", "web-1", "application/merge-patch+json", b'{"revision":3}'
    )
    entry = core.store.table.get(CONTROLLER_REVISIONS.key, "default", "web-1")
    assert entry is not None and entry.obj["revision"] == 3


def test_unknown_top_level_fields_are_refused_under_strict(core: Core) -> None:
    body = revision(data={}, revision=1, spec={})
    with pytest.raises(ApiError, match='strict decoding error: unknown field "spec"'):
        core.store.create(CONTROLLER_REVISIONS, "default", body, field_validation="Strict")


def test_owned_revisions_are_collected_with_their_owner(core: Core, reactor: ManualReactor) -> None:
    owner = core.store.create(CONFIGMAPS, "default", {"metadata": {"name": "owner"}}).entry.obj
    uid = owner["metadata"]["uid"]
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid, "controller": True}
    body = revision(data={}, revision=1)
    body["metadata"]["ownerReferences"] = [ref]
    core.store.create(CONTROLLER_REVISIONS, "default", body)
    delete(core.store, CONFIGMAPS, "default", "owner", DeleteOptions())
    reactor.run()
    assert core.store.table.get(CONTROLLER_REVISIONS.key, "default", "web-1") is None


def test_revisions_survive_a_restart(tmp_path: Path) -> None:
    async def write() -> None:
        journaled = make_core(ManualReactor(), data_dir=tmp_path)
        journaled.store.create(CONTROLLER_REVISIONS, "default", revision(data=[1], revision=2))
        await journaled.flushed()
        await journaled.close()

    asyncio.run(write())
    table = ObjectTable()
    Journal(tmp_path).load(table)
    entry = table.get(CONTROLLER_REVISIONS.key, "default", "web-1")
    assert entry is not None
    assert (entry.obj["data"], entry.obj["revision"]) == ([1], 2)


def test_a_protobuf_body_keeps_its_raw_extension_and_a_zero_revision() -> None:
    meta = ld(1, ld(1, "web-1"))
    body = envelope("apps/v1", "ControllerRevision", meta + ld(2, ld(1, '{"a":[1]}')) + num(3, 0))
    assert decode_request(body) == {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {"name": "web-1"},
        "data": {"a": [1]},
        "revision": 0,
    }
    empty = envelope("apps/v1", "ControllerRevision", meta + ld(2, ld(1, "{}")))
    assert decode_request(empty)["data"] == {}


# --- printing ----------------------------------------------------------------------------------


def _owned(*refs: dict[str, Any]) -> dict[str, Any]:
    obj = revision(data={}, revision=4)
    obj["metadata"].update(ownerReferences=list(refs), creationTimestamp="2025-06-01T11:58:00Z")
    return obj


@pytest.mark.parametrize(
    ("refs", "controller"),
    [
        ((), "<none>"),
        (({"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web"},), "<none>"),
        (
            (
                {"apiVersion": "v1", "kind": "Pod", "name": "other", "controller": False},
                {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "controller": True},
            ),
            "statefulset.apps/web",
        ),
        (
            (
                {
                    "apiVersion": "jobmachine.dev/v1alpha1",
                    "kind": "MachineJob",
                    "name": "train",
                    "controller": True,
                },
            ),
            "machinejob.jobmachine.dev/train",
        ),
        (({"apiVersion": "v1", "kind": "Pod", "name": "p", "controller": True},), "pod/p"),
    ],
)
def test_kubectl_get_columns_name_the_controlling_owner(
    refs: tuple[dict[str, Any], ...], controller: str
) -> None:
    table = to_table(CONTROLLER_REVISIONS, [_owned(*refs)], list_metadata={}, now=NOW)
    columns = [c["name"] for c in table["columnDefinitions"]]
    assert columns == ["Name", "Controller", "Revision", "Age"]
    assert table["rows"][0]["cells"] == ["web-1", controller, 4, "2m"]


# --- discovery and OpenAPI ---------------------------------------------------------------------


def test_discovery_lists_the_apps_group_with_upstream_verbs() -> None:
    groups = {g["name"]: g for g in api_group_list(BUILTIN_TYPES)["groups"]}
    assert groups["apps"]["preferredVersion"] == {"groupVersion": "apps/v1", "version": "v1"}
    assert next(iter(groups)) == "apps"  # listed before the other named groups, as upstream
    resources = api_resource_list("apps", "v1", BUILTIN_TYPES)
    assert resources["groupVersion"] == "apps/v1"
    [entry] = [r for r in resources["resources"] if r["name"] == "controllerrevisions"]
    assert {k: v for k, v in entry.items() if k != "storageVersionHash"} == {
        "name": "controllerrevisions",
        "singularName": "controllerrevision",
        "namespaced": True,
        "kind": "ControllerRevision",
        "verbs": [
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ],
    }
    core = {r["name"]: r for r in api_resource_list("", "v1", BUILTIN_TYPES)["resources"]}
    assert core["secrets"]["kind"] == "Secret"
    assert "shortNames" not in core["secrets"]
    assert core["secrets"]["verbs"] == entry["verbs"]


def test_openapi_describes_the_kind_for_explain_and_strict_apply() -> None:
    doc = openapi_v3_document("apps", "v1", BUILTIN_TYPES)
    schema = doc["components"]["schemas"][SCHEMA]
    assert schema["required"] == ["revision"]
    assert set(schema["properties"]) == {"apiVersion", "kind", "metadata", "data", "revision"}
    assert schema["properties"]["revision"]["format"] == "int64"
    assert schema["properties"]["data"]["type"] == "object"
    assert schema["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "version": "v1", "kind": "ControllerRevision"}
    ]
    item = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/controllerrevisions/{name}"]
    assert item["patch"]["operationId"] == "patchAppsV1NamespacedControllerRevision"
    assert any(p["name"] == "fieldValidation" for p in item["patch"]["parameters"])
    assert "/apis/apps/v1/controllerrevisions" in doc["paths"]  # every namespace
    assert SCHEMA in openapi_v2(BUILTIN_TYPES)["definitions"]
