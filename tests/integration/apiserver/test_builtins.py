"""CRUD on the built-in kinds through the official client: metadata, validation, errors."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from tests.integration.apiserver.conftest import pod, raw, status_of


def test_initial_namespaces_exist(core: client.CoreV1Api) -> None:
    names = {ns.metadata.name for ns in core.list_namespace().items}
    assert {"default", "kube-system", "kube-public"} <= names
    default = core.read_namespace("default")
    assert default.status.phase == "Active"
    assert default.spec.finalizers == ["kubernetes"]
    assert default.metadata.labels["kubernetes.io/metadata.name"] == "default"


def test_create_sets_server_metadata(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_pod("default", pod("a"))
    meta = created.metadata
    assert meta.uid and meta.creation_timestamp and meta.generation is None  # v1.32 pods
    assert meta.namespace == "default"
    assert created.status.phase == "Pending"
    assert created.spec.restart_policy == "Always"
    assert created.spec.termination_grace_period_seconds == 30
    assert core.read_namespaced_pod("a", "default").metadata.uid == meta.uid


def test_resource_version_is_one_counter_for_all_types(core: client.CoreV1Api) -> None:
    first = int(core.create_namespaced_pod("default", pod("a")).metadata.resource_version)
    cm = core.create_namespaced_config_map("default", {"metadata": {"name": "c"}, "data": {}})
    second = int(cm.metadata.resource_version)
    third = int(core.create_namespace({"metadata": {"name": "other"}}).metadata.resource_version)
    assert first < second < third


def test_generate_name_gets_a_five_character_suffix(core: client.CoreV1Api) -> None:
    body = pod("")
    body["metadata"] = {"generateName": "worker-"}
    names = {core.create_namespaced_pod("default", body).metadata.name for _ in range(5)}
    assert len(names) == 5
    assert all(n.startswith("worker-") and len(n) == len("worker-") + 5 for n in names)


def test_already_exists_and_not_found(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod("a"))
    with pytest.raises(client.ApiException) as exists:
        core.create_namespaced_pod("default", pod("a"))
    assert exists.value.status == 409
    assert status_of(exists.value)["reason"] == "AlreadyExists"
    with pytest.raises(client.ApiException) as missing:
        core.read_namespaced_pod("nope", "default")
    assert missing.value.status == 404
    assert status_of(missing.value)["message"] == 'pods "nope" not found'


def test_create_in_missing_namespace_is_not_found(core: client.CoreV1Api) -> None:
    with pytest.raises(client.ApiException) as error:
        core.create_namespaced_pod("ghost", pod("a"))
    assert error.value.status == 404
    assert status_of(error.value)["message"] == 'namespaces "ghost" not found'


def test_invalid_pod_is_422_with_causes(core: client.CoreV1Api) -> None:
    body = {"metadata": {"name": "Bad_Name"}, "spec": {"containers": [{"name": "c"}]}}
    with pytest.raises(client.ApiException) as error:
        core.create_namespaced_pod("default", body)
    status = status_of(error.value)
    assert error.value.status == 422 and status["reason"] == "Invalid"
    fields = {cause["field"] for cause in status["details"]["causes"]}
    assert "metadata.name" in fields
    assert any(f.startswith("spec.containers[0].image") for f in fields)


def test_update_with_stale_resource_version_conflicts(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    created.data = {"a": "1"}
    core.replace_namespaced_config_map("c", "default", created)
    created.data = {"a": "2"}
    with pytest.raises(client.ApiException) as error:
        core.replace_namespaced_config_map("c", "default", created)
    assert error.value.status == 409
    assert "the object has been modified" in status_of(error.value)["message"]


def test_update_without_resource_version_is_unconditional(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", {"metadata": {"name": "c"}, "data": {"a": "1"}})
    body = {"metadata": {"name": "c"}, "data": {"a": "2"}}
    assert core.replace_namespaced_config_map("c", "default", body).data == {"a": "2"}


def test_no_op_update_keeps_resource_version(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_config_map(
        "default", {"metadata": {"name": "c"}, "data": {"a": "1"}}
    )
    same = core.replace_namespaced_config_map("c", "default", created)
    assert same.metadata.resource_version == created.metadata.resource_version


def test_status_subresource_is_separate(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_pod("default", pod("a"))
    created.status.phase = "Running"
    created.metadata.labels = {"x": "y"}
    updated = core.replace_namespaced_pod("a", "default", created)
    assert updated.status.phase == "Pending" and updated.metadata.labels == {"x": "y"}
    updated.status.phase = "Running"
    updated.metadata.labels = {"x": "changed"}
    status_write = core.replace_namespaced_pod_status("a", "default", updated)
    assert status_write.status.phase == "Running"
    assert status_write.metadata.labels == {"x": "y"}
    assert status_write.metadata.generation is None


def test_pods_and_configmaps_have_no_generation_even_when_changed(
    core: client.CoreV1Api,
) -> None:
    """As kube-apiserver 1.32's strategies; kind by kind: tests/unit/cluster/test_generation.py."""
    core.create_namespaced_pod("default", pod("a"))
    changed = core.patch_namespaced_pod("a", "default", {"spec": {"activeDeadlineSeconds": 30}})
    assert changed.metadata.generation is None
    core.create_namespaced_config_map("default", {"metadata": {"name": "c"}, "data": {"a": "1"}})
    cm = core.patch_namespaced_config_map("c", "default", {"data": {"a": "2"}})
    assert cm.metadata.generation is None


def test_immutable_pod_spec_fields(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod("a"))
    with pytest.raises(client.ApiException) as error:
        core.patch_namespaced_pod("a", "default", {"spec": {"restartPolicy": "Never"}})
    assert error.value.status == 422


def test_label_and_field_selectors(core: client.CoreV1Api) -> None:
    for name, role in (("a", "x"), ("b", "y"), ("c", "x")):
        body = pod(name)
        body["metadata"]["labels"] = {"role": role}
        core.create_namespaced_pod("default", body)
    names = [
        p.metadata.name for p in core.list_namespaced_pod("default", label_selector="role=x").items
    ]
    assert names == ["a", "c"]
    by_name = core.list_namespaced_pod("default", field_selector="metadata.name=b").items
    assert [p.metadata.name for p in by_name] == ["b"]
    pending = core.list_namespaced_pod("default", field_selector="status.phase=Pending")
    assert len(pending.items) == 3
    with pytest.raises(client.ApiException) as error:
        core.list_namespaced_pod("default", field_selector="spec.bogus=1")
    assert error.value.status == 400


def test_list_metadata_kind_and_all_namespaces(core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "other"}})
    core.create_namespaced_pod("default", pod("a"))
    core.create_namespaced_pod("other", pod("b"))
    everywhere = core.list_pod_for_all_namespaces()
    assert {(p.metadata.namespace, p.metadata.name) for p in everywhere.items} == {
        ("default", "a"),
        ("other", "b"),
    }
    raw = json.loads(core.list_pod_for_all_namespaces(_preload_content=False).data)
    assert raw["kind"] == "PodList" and raw["apiVersion"] == "v1"
    assert raw["metadata"]["resourceVersion"] == everywhere.metadata.resource_version


def test_pagination_is_a_consistent_snapshot(core: client.CoreV1Api) -> None:
    for index in range(7):
        core.create_namespaced_config_map("default", {"metadata": {"name": f"c{index}"}})
    first = core.list_namespaced_config_map("default", limit=3)
    assert [c.metadata.name for c in first.items] == ["c0", "c1", "c2"]
    # The namespace's kube-root-ca.crt (as on any cluster) sorts last.
    assert first.metadata._continue and first.metadata.remaining_item_count == 5
    core.delete_namespaced_config_map("c4", "default")
    core.create_namespaced_config_map("default", {"metadata": {"name": "c35"}})
    second = core.list_namespaced_config_map("default", limit=3, _continue=first.metadata._continue)
    assert [c.metadata.name for c in second.items] == ["c3", "c4", "c5"]
    assert second.metadata.resource_version == first.metadata.resource_version
    third = core.list_namespaced_config_map("default", limit=3, _continue=second.metadata._continue)
    assert [c.metadata.name for c in third.items] == ["c6", "kube-root-ca.crt"]
    assert not third.metadata._continue


def test_dry_run_does_not_store(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_pod("default", pod("a"), dry_run="All")
    assert created.metadata.uid
    with pytest.raises(client.ApiException):
        core.read_namespaced_pod("a", "default")
    core.create_namespaced_pod("default", pod("a"))
    core.delete_namespaced_pod("a", "default", dry_run="All")
    assert core.read_namespaced_pod("a", "default").metadata.name == "a"


def test_binding_assigns_a_node_once(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod("a"))
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "a"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"},
    }
    core.create_namespaced_pod_binding("a", "default", binding, _preload_content=False)
    bound = core.read_namespaced_pod("a", "default")
    assert bound.spec.node_name == "node-1"
    assert any(c.type == "PodScheduled" and c.status == "True" for c in bound.status.conditions)
    with pytest.raises(client.ApiException) as error:
        core.create_namespaced_pod_binding("a", "default", binding, _preload_content=False)
    assert error.value.status == 409


def test_service_gets_a_cluster_ip(core: client.CoreV1Api) -> None:
    body = {"metadata": {"name": "s"}, "spec": {"selector": {"a": "b"}, "ports": [{"port": 80}]}}
    service = core.create_namespaced_service("default", body)
    assert service.spec.cluster_ip.startswith("10.")
    assert service.spec.ports[0].protocol == "TCP" and service.spec.ports[0].target_port == 80
    headless = {"metadata": {"name": "h"}, "spec": {"clusterIP": "None", "ports": [{"port": 1}]}}
    assert core.create_namespaced_service("default", headless).spec.cluster_ip == "None"


def test_events_and_nodes_and_leases(api: client.ApiClient, core: client.CoreV1Api) -> None:
    event = {
        "metadata": {"name": "e1"},
        "involvedObject": {"kind": "Pod", "name": "a", "namespace": "default", "uid": "u1"},
        "reason": "Started",
        "message": "hello",
        "type": "Normal",
    }
    core.create_namespaced_event("default", event)
    found = core.list_namespaced_event(
        "default", field_selector="involvedObject.name=a,involvedObject.kind=Pod"
    )
    assert [e.reason for e in found.items] == ["Started"]
    node = {
        "metadata": {"name": "n1"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    assert core.create_node(node).status.conditions[0].type == "Ready"
    leases = client.CoordinationV1Api(api)
    lease = {"metadata": {"name": "leader"}, "spec": {"holderIdentity": "me"}}
    leases.create_namespaced_lease("default", lease)
    assert leases.read_namespaced_lease("leader", "default").spec.holder_identity == "me"


def test_a_verb_the_resource_does_not_declare_is_405(server: RunningApiServer) -> None:
    response = raw(server, "DELETE", "/api/v1/namespaces")  # namespaces: no deletecollection
    assert response.status == 405
    assert response.json()["reason"] == "MethodNotAllowed"
    assert raw(server, "GET", "/api/v1/namespaces/default").status == 200
