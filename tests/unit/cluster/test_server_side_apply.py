"""Server-side apply on the store: create on apply, ownership, conflicts, pruning, list merging
and the managedFields every write leaves, as kube-apiserver writes them."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.cluster.apiserver.core import Core
from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.patch.server_side_apply import check_options, manager_name
from engine.cluster.apiserver.registry.builtins import CONFIGMAPS, CRDS, PODS, SERVICES
from engine.cluster.apiserver.registry.resources import ResourceType
from engine.cluster.apiserver.registry.store import Written
from engine.cluster.apiserver.storage.objects import Obj
from tests.unit.cluster.store_support import ManualReactor, make_core, namespace

NOW = "2023-11-14T22:13:20Z"


@pytest.fixture
def core() -> Core:
    reactor = ManualReactor()
    made = make_core(reactor)
    namespace(made, "ns")
    return made


def apply(
    core: Core,
    doc: Obj,
    manager: str,
    *,
    rt: ResourceType = CONFIGMAPS,
    force: bool = False,
    subresource: str | None = None,
    dry_run: bool = False,
) -> Written:
    name = doc["metadata"]["name"]
    return core.store.apply(
        rt, "ns", name, orjson.dumps(doc), field_manager=manager, force=force,
        subresource=subresource, dry_run=dry_run,
    )


def configmap(name: str = "cm", labels: dict[str, str] | None = None, **data: str) -> Obj:
    metadata: dict[str, Any] = {"name": name}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


def entries(obj: Obj) -> dict[str, dict[str, Any]]:
    """managedFields by manager (and operation, when a manager has both)."""
    result = {}
    for entry in obj["metadata"].get("managedFields") or []:
        key = entry["manager"] if entry["operation"] == "Apply" else f"{entry['manager']}/Update"
        result[key] = entry
    return result


def fields(obj: Obj, key: str) -> Any:
    return entries(obj)[key]["fieldsV1"]


def stored(core: Core, rt: ResourceType = CONFIGMAPS, name: str = "cm") -> Obj:
    return core.store.get(rt, "ns", name).obj


# --- create and update on apply -------------------------------------------------------------


def test_apply_creates_a_missing_object_with_one_apply_entry(core: Core) -> None:
    written = apply(core, configmap(labels={"app": "a"}, x="1"), "tool")
    assert written.created
    obj = written.entry.obj
    assert obj["data"] == {"x": "1"} and obj["metadata"]["uid"]
    assert obj["metadata"]["managedFields"] == [
        {
            "manager": "tool",
            "operation": "Apply",
            "apiVersion": "v1",
            "time": NOW,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:x": {}}, "f:metadata": {"f:labels": {"f:app": {}}}},
        }
    ]


def test_applying_the_same_configuration_again_changes_nothing(core: Core) -> None:
    first = apply(core, configmap(x="1"), "tool").entry.obj
    again = apply(core, configmap(x="1"), "tool")
    assert not again.created
    assert again.entry.obj["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


def test_a_field_the_applier_drops_is_removed_and_released(core: Core) -> None:
    apply(core, configmap(labels={"app": "a"}, x="1", y="2"), "tool")
    obj = apply(core, configmap(x="1"), "tool").entry.obj
    assert obj["data"] == {"x": "1"} and "labels" not in obj["metadata"]
    assert fields(obj, "tool") == {"f:data": {"f:x": {}}}


def test_a_dropped_field_another_manager_owns_stays(core: Core) -> None:
    apply(core, configmap(x="1", y="2"), "tool")
    apply(core, configmap(y="2"), "other")
    obj = apply(core, configmap(x="1"), "tool").entry.obj
    assert obj["data"] == {"x": "1", "y": "2"}
    assert fields(obj, "other") == {"f:data": {"f:y": {}}}
    assert fields(obj, "tool") == {"f:data": {"f:x": {}}}


def test_a_field_set_by_an_update_is_not_pruned_by_an_applier(core: Core) -> None:
    apply(core, configmap(x="1"), "tool")
    core.store.patch(
        CONFIGMAPS, "ns", "cm", "application/merge-patch+json", b'{"data":{"z":"3"}}',
        field_manager="kubectl-patch",
    )
    obj = apply(core, configmap(x="2"), "tool").entry.obj
    assert obj["data"] == {"x": "2", "z": "3"}
    assert fields(obj, "kubectl-patch/Update") == {"f:data": {"f:z": {}}}


# --- conflicts ------------------------------------------------------------------------------


def test_changing_a_field_another_applier_owns_is_a_conflict(core: Core) -> None:
    apply(core, configmap(x="1"), "first")
    with pytest.raises(ApiError) as caught:
        apply(core, configmap(x="2"), "second")
    assert caught.value.to_status() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'Apply failed with 1 conflict: conflict with "first": .data.x',
        "reason": "Conflict",
        "details": {
            "causes": [
                {"reason": "FieldManagerConflict", "message": 'conflict with "first"',
                 "field": ".data.x"}
            ]
        },
        "code": 409,
    }
    assert stored(core)["data"] == {"x": "1"}


def test_conflicts_with_several_managers_are_listed_per_manager(core: Core) -> None:
    apply(core, configmap(x="1"), "first")
    core.store.patch(
        CONFIGMAPS, "ns", "cm", "application/merge-patch+json", b'{"data":{"y":"1"}}',
        field_manager="editor",
    )
    with pytest.raises(ApiError) as caught:
        apply(core, configmap(x="2", y="2"), "second")
    assert caught.value.message == (
        "Apply failed with 2 conflicts: conflicts with \"editor\" using v1:\n- .data.y\n"
        "conflicts with \"first\":\n- .data.x"
    )


def test_applying_the_same_value_shares_ownership_without_conflict(core: Core) -> None:
    apply(core, configmap(x="1"), "first")
    obj = apply(core, configmap(x="1"), "second").entry.obj
    assert fields(obj, "first") == fields(obj, "second") == {"f:data": {"f:x": {}}}
    assert "time" not in entries(obj)["second"]  # nothing changed, so no timestamp


def test_force_takes_the_fields_over(core: Core) -> None:
    apply(core, configmap(x="1", y="1"), "first")
    obj = apply(core, configmap(x="2"), "second", force=True).entry.obj
    assert obj["data"] == {"x": "2", "y": "1"}
    assert fields(obj, "first") == {"f:data": {"f:y": {}}}
    assert fields(obj, "second") == {"f:data": {"f:x": {}}}


def test_an_update_takes_fields_from_appliers_without_conflict(core: Core) -> None:
    apply(core, configmap(x="1", y="1"), "first")
    body = {**stored(core), "data": {"x": "9", "y": "1"}}
    obj = core.store.update(CONFIGMAPS, "ns", "cm", body, field_manager="kubectl-edit").entry.obj
    assert fields(obj, "first") == {"f:data": {"f:y": {}}}
    assert fields(obj, "kubectl-edit/Update") == {"f:data": {"f:x": {}}}


def test_kubectl_may_take_what_its_client_side_apply_set(core: Core) -> None:
    last = orjson.dumps(configmap(x="1")).decode()
    created = {**configmap(x="1"), "metadata": {
        "name": "cm", "annotations": {"kubectl.kubernetes.io/last-applied-configuration": last}
    }}
    core.store.create(CONFIGMAPS, "ns", created, field_manager="kubectl-client-side-apply")
    with pytest.raises(ApiError, match='conflict with "kubectl-client-side-apply" using v1'):
        apply(core, configmap(x="2"), "someone-else")
    obj = apply(core, configmap(x="2"), "kubectl").entry.obj
    assert obj["data"] == {"x": "2"}
    annotation = obj["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    assert orjson.loads(annotation)["data"] == {"x": "2"}


# --- lists ----------------------------------------------------------------------------------


def pod(*containers: dict[str, Any], **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": list(containers), **spec}}


def service(*ports: dict[str, Any], **spec: Any) -> Obj:
    body = {"ports": list(ports)} if ports else {}
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {**body, **spec}}


def test_list_maps_merge_by_key_and_each_applier_owns_its_items(core: Core) -> None:
    apply(core, service({"port": 80, "name": "http"}), "first", rt=SERVICES)
    obj = apply(core, service({"port": 443, "name": "https"}), "second", rt=SERVICES).entry.obj
    assert [p["port"] for p in obj["spec"]["ports"]] == [80, 443]
    assert fields(obj, "second") == {"f:spec": {"f:ports": {
        'k:{"port":443,"protocol":"TCP"}': {".": {}, "f:name": {}, "f:port": {}}
    }}}
    obj = apply(core, service({"port": 80, "name": "http"}, {"port": 81, "name": "alt"}),
                "first", rt=SERVICES).entry.obj
    assert [p["port"] for p in obj["spec"]["ports"]] == [80, 443, 81]
    obj = apply(core, service({"port": 81, "name": "alt"}), "first", rt=SERVICES).entry.obj
    assert [p["port"] for p in obj["spec"]["ports"]] == [443, 81]


def test_ports_are_keyed_by_port_and_defaulted_protocol(core: Core) -> None:
    container = {"name": "a", "image": "i", "ports": [{"containerPort": 80}]}
    obj = apply(core, pod(container), "tool", rt=PODS).entry.obj
    item = fields(obj, "tool")["f:spec"]["f:containers"]['k:{"name":"a"}']
    assert item["f:ports"] == {
        'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}
    }


def test_duplicate_keys_in_an_applied_list_are_refused(core: Core) -> None:
    with pytest.raises(ApiError) as caught:
        apply(core, pod({"name": "a", "image": "i"}, {"name": "a", "image": "j"}), "t", rt=PODS)
    assert caught.value.code == 500
    assert caught.value.message == (
        "failed to create typed patch object (/p; /v1, Kind=Pod): "
        '.spec.containers: duplicate entries for key [name="a"]'
    )


def test_atomic_lists_and_maps_are_replaced_and_sets_merged(core: Core) -> None:
    port = {"port": 80}
    apply(core, service(port, externalIPs=["1.2.3.4"], selector={"a": "1"}), "first",
          rt=SERVICES)
    with pytest.raises(ApiError, match=r'conflict with "first": \.spec\.selector$'):
        apply(core, service(selector={"b": "2"}), "second", rt=SERVICES)
    obj = apply(core, service(port, externalIPs=["5.6.7.8"], selector={"b": "2"}), "first",
                rt=SERVICES).entry.obj
    assert obj["spec"]["externalIPs"] == ["5.6.7.8"] and obj["spec"]["selector"] == {"b": "2"}
    assert set(fields(obj, "first")["f:spec"]) == {"f:externalIPs", "f:ports", "f:selector"}
    one = configmap(x="1")
    one["metadata"]["finalizers"] = ["a/one"]
    apply(core, one, "first")
    two = configmap()
    two["metadata"]["finalizers"] = ["a/two"]
    obj = apply(core, two, "second").entry.obj
    assert obj["metadata"]["finalizers"] == ["a/one", "a/two"]
    assert fields(obj, "second")["f:metadata"] == {"f:finalizers": {'v:"a/two"': {}}}


def test_custom_resource_list_maps_use_the_schema_keys(core: Core) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                "openAPIV3Schema": {"type": "object", "properties": {"spec": {
                    "type": "object", "properties": {"parts": {
                        "type": "array", "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["id"],
                        "items": {"type": "object", "properties": {
                            "id": {"type": "string"}, "n": {"type": "integer"}}},
                    }},
                }}},
            }}],
        },
    }
    core.store.create(CRDS, "", crd)
    rt = core.registry.lookup("example.com", "v1", "gadgets")
    assert rt is not None

    def gadget(*parts: dict[str, Any]) -> Obj:
        return {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"},
                "spec": {"parts": list(parts)}}

    apply(core, gadget({"id": "a", "n": 1}), "first", rt=rt)
    obj = apply(core, gadget({"id": "b", "n": 2}), "second", rt=rt).entry.obj
    assert obj["spec"]["parts"] == [{"id": "a", "n": 1}, {"id": "b", "n": 2}]
    assert fields(obj, "second") == {
        "f:spec": {"f:parts": {'k:{"id":"b"}': {".": {}, "f:id": {}, "f:n": {}}}}
    }
    with pytest.raises(ApiError, match=r"\.spec\.extra: field not declared in schema"):
        apply(core, {**gadget(), "spec": {"extra": 1}}, "first", rt=rt)


# --- managedFields of other writes ----------------------------------------------------------


def test_create_records_an_update_entry_with_markers_for_new_structs(core: Core) -> None:
    body = {"metadata": {"name": "cm", "labels": {"a": "b"}}, "data": {"k": "v"}}
    obj = core.store.create(CONFIGMAPS, "ns", body, field_manager="kubectl-create").entry.obj
    assert obj["metadata"]["managedFields"] == [{
        "manager": "kubectl-create", "operation": "Update", "apiVersion": "v1", "time": NOW,
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {".": {}, "f:k": {}},
                     "f:metadata": {"f:labels": {".": {}, "f:a": {}}}},
    }]


def test_a_pod_create_owns_its_defaults_but_not_what_the_registry_sets(core: Core) -> None:
    body = pod({"name": "a", "image": "busybox"})
    obj = core.store.create(PODS, "ns", body, field_manager="kubectl-run").entry.obj
    spec = fields(obj, "kubectl-run/Update")["f:spec"]
    assert "." not in spec and "." not in spec["f:containers"]
    assert {"f:restartPolicy", "f:dnsPolicy", "f:terminationGracePeriodSeconds"} <= set(spec)
    assert "f:priority" not in spec and "f:status" not in fields(obj, "kubectl-run/Update")


def test_a_status_write_is_recorded_with_its_subresource(core: Core) -> None:
    core.store.create(PODS, "ns", pod({"name": "a", "image": "busybox"}))
    body = {**core.store.get(PODS, "ns", "p").obj, "status": {"phase": "Running"}}
    obj = core.store.update(
        PODS, "ns", "p", body, subresource="status", field_manager="kubelet"
    ).entry.obj
    entry = entries(obj)["kubelet/Update"]
    assert entry["subresource"] == "status"
    assert entry["fieldsV1"] == {"f:status": {"f:phase": {}}}


def test_an_apply_to_status_owns_status_only(core: Core) -> None:
    core.store.create(PODS, "ns", pod({"name": "a", "image": "busybox"}))
    status = {**pod(), "status": {"phase": "Running"}}
    obj = apply(core, status, "kubelet", rt=PODS, subresource="status").entry.obj
    assert obj["status"]["phase"] == "Running"
    assert entries(obj)["kubelet"]["subresource"] == "status"
    assert fields(obj, "kubelet") == {"f:status": {"f:phase": {}}}


def test_a_client_may_clear_managed_fields(core: Core) -> None:
    apply(core, configmap(x="1"), "tool")
    patch = b'{"metadata":{"managedFields":[{}]}}'
    obj = core.store.patch(CONFIGMAPS, "ns", "cm", "application/merge-patch+json", patch).entry
    assert "managedFields" not in obj.obj["metadata"]


def test_update_managers_are_capped_at_ten(core: Core) -> None:
    core.store.create(CONFIGMAPS, "ns", configmap(), field_manager="m0")
    for index in range(1, 13):
        patch = orjson.dumps({"data": {f"k{index}": "v"}})
        core.store.patch(CONFIGMAPS, "ns", "cm", "application/merge-patch+json", patch,
                         field_manager=f"m{index}")
    managers = [e["manager"] for e in stored(core)["metadata"]["managedFields"]]
    assert len(managers) == 10 and "ancient-changes" in managers


# --- requests upstream refuses --------------------------------------------------------------


def test_another_kind_or_managed_fields_in_the_configuration_are_bad_requests(core: Core) -> None:
    with pytest.raises(ApiError, match=r"invalid object type: /v1, Kind=Secret") as caught:
        apply(core, {**configmap(), "kind": "Secret"}, "tool")
    assert caught.value.code == 400
    sent = configmap()
    sent["metadata"]["managedFields"] = []
    with pytest.raises(ApiError, match=r"metadata\.managedFields must be nil"):
        apply(core, sent, "tool")


def test_a_stale_resource_version_in_the_configuration_conflicts(core: Core) -> None:
    apply(core, configmap(x="1"), "tool")
    stale = configmap(x="2")
    stale["metadata"]["resourceVersion"] = "1"
    with pytest.raises(ApiError, match="the object has been modified") as caught:
        apply(core, stale, "tool")
    assert caught.value.code == 409


def test_dry_run_applies_nothing(core: Core) -> None:
    written = apply(core, configmap(x="1"), "tool", dry_run=True)
    assert written.created and written.entry.obj["data"] == {"x": "1"}
    with pytest.raises(ApiError, match="not found"):
        stored(core)


def test_applying_to_the_status_of_a_missing_object_is_not_found(core: Core) -> None:
    with pytest.raises(ApiError) as caught:
        apply(core, {**pod(), "status": {"phase": "Running"}}, "k", rt=PODS, subresource="status")
    assert caught.value.code == 404


# --- properties -----------------------------------------------------------------------------

_keys = st.sampled_from(["a", "b", "c", "d"])
_SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _fresh(core: Core) -> None:
    """Hypothesis reuses the fixture: start each example without the configmap."""
    if core.store.table.get(CONFIGMAPS.key, "ns", "cm") is not None:
        core.store.table.remove(CONFIGMAPS.key, "ns", "cm")
_data = st.dictionaries(_keys, st.sampled_from(["1", "2"]), max_size=4)


@_SETTINGS
@given(first=_data, second=_data)
def test_applying_twice_is_idempotent(
    core: Core, first: dict[str, str], second: dict[str, str]
) -> None:
    _fresh(core)
    apply(core, configmap(**first), "tool")
    once = apply(core, configmap(**second), "tool").entry.obj
    twice = apply(core, configmap(**second), "tool").entry.obj
    assert twice == once


@_SETTINGS
@given(before=_data, after=_data, other=_data)
def test_dropped_fields_are_released_and_removed_unless_owned(
    core: Core, before: dict[str, str], after: dict[str, str], other: dict[str, str]
) -> None:
    _fresh(core)
    apply(core, configmap(**before), "tool")
    apply(core, configmap(**other), "other", force=True)
    obj = apply(core, configmap(**after), "tool", force=True).entry.obj
    owned = {m: set(e["fieldsV1"].get("f:data", {})) for m, e in entries(obj).items()}
    assert owned.get("tool", set()) == {f"f:{k}" for k in after}
    for key in set(before) - set(after):
        if key in other:
            assert key in (obj.get("data") or {})
        else:
            assert key not in (obj.get("data") or {})
    assert set(obj.get("data") or {}) == set(after) | set(other)


# --- managers and options -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field_manager", "user_agent", "expected"),
    [
        ("mine", "kubectl/v1.32.4 (linux/amd64)", "mine"),
        ("", "kubectl/v1.32.4 (linux/amd64) kubernetes/abc", "kubectl"),
        ("", "OpenAPI-Generator/31.0.0/python", "OpenAPI-Generator"),
        ("", "odd\x00agent/1", "oddagent"),
        ("", "x" * 200, "x" * 128),
        ("", "", ""),
    ],
)
def test_the_manager_defaults_to_the_user_agent_product(
    field_manager: str, user_agent: str, expected: str
) -> None:
    assert manager_name(field_manager, user_agent) == expected


def test_field_manager_options_are_checked_as_upstream() -> None:
    with pytest.raises(ApiError) as missing:
        check_options("PatchOptions", "", apply=True, force_given=False)
    assert missing.value.code == 422
    assert missing.value.message == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
        "is required for apply patch"
    )
    with pytest.raises(ApiError, match="force: Forbidden: may not be specified"):
        check_options("PatchOptions", "m", apply=False, force_given=True)
    with pytest.raises(ApiError, match=r"invalid character U\+0007 \(at position 1\)"):
        check_options("CreateOptions", "a\x07", apply=False, force_given=False)
    with pytest.raises(ApiError, match="fieldManager: Too long"):
        check_options("UpdateOptions", "m" * 129, apply=False, force_given=False)
    check_options("PatchOptions", "m" * 128, apply=True, force_given=True)
