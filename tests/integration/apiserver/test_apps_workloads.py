"""apps/v1 Deployments and ReplicaSets and v1 ReplicationControllers over HTTP, through the
official client's AppsV1Api and CoreV1Api, answered as kube-apiserver answers.

Defaults, validation (422 with upstream's causes), generation on spec changes only (and a
Deployment's annotations), /scale (get, replace, patch; the selector as text; a negative
count refused as a Scale), /status, the Table, the status.replicas field selector, and
discovery. No controller runs: nothing here starts a pod.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from kubernetes import client

from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from tests.integration.apiserver.conftest import raw, status_of

NS = "default"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
TEMPLATE = {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}


@pytest.fixture
def apps(api: client.ApiClient) -> client.AppsV1Api:
    return client.AppsV1Api(api)


def deployment(name: str = "web", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                     "template": copy.deepcopy(TEMPLATE), **spec}}


def replica_set(name: str = "cache", **spec: Any) -> dict[str, Any]:
    body = deployment(name, **spec)
    return {**body, "kind": "ReplicaSet"}


def as_json(api: client.ApiClient, model: Any) -> dict[str, Any]:
    result: dict[str, Any] = api.sanitize_for_serialization(model)
    return result


def test_create_read_list_and_defaults(apps: client.AppsV1Api, api: client.ApiClient) -> None:
    created = as_json(api, apps.create_namespaced_deployment(NS, deployment()))
    assert created["spec"]["replicas"] == 1
    assert created["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": "25%",
                                                            "maxUnavailable": "25%"}
    assert created["metadata"]["generation"] == 1
    listed = apps.list_namespaced_deployment(NS)
    assert [d.metadata.name for d in listed.items] == ["web"]
    rs = as_json(api, apps.create_namespaced_replica_set(NS, replica_set(replicas=2)))
    assert (rs["spec"]["replicas"], rs["status"]["replicas"]) == (2, 0)


def test_invalid_objects_are_refused_with_upstreams_causes(apps: client.AppsV1Api) -> None:
    body = deployment(replicas=-1, strategy={"type": "RollingUpdate", "rollingUpdate": {
        "maxSurge": 0, "maxUnavailable": 0}})
    with pytest.raises(client.ApiException) as caught:
        apps.create_namespaced_deployment(NS, body)
    status = status_of(caught.value)
    assert caught.value.status == 422
    assert [c["field"] for c in status["details"]["causes"]] == [
        "spec.replicas", "spec.strategy.rollingUpdate.maxUnavailable"]
    assert status["message"].startswith('Deployment.apps "web" is invalid: [spec.replicas: '
                                        "Invalid value: -1: must be greater than or equal to 0")


def test_generation_moves_with_the_spec_and_a_deployments_annotations(
        apps: client.AppsV1Api, api: client.ApiClient) -> None:
    apps.create_namespaced_deployment(NS, deployment())
    apps.create_namespaced_replica_set(NS, replica_set())
    labelled = apps.patch_namespaced_deployment("web", NS, {"metadata": {"labels": {"a": "b"}}})
    assert labelled.metadata.generation == 1
    noted = apps.patch_namespaced_deployment("web", NS, {"metadata": {"annotations": {"n": "1"}}})
    assert noted.metadata.generation == 2
    scaled = apps.patch_namespaced_deployment("web", NS, {"spec": {"replicas": 2}})
    assert scaled.metadata.generation == 3
    rs_noted = apps.patch_namespaced_replica_set("cache", NS,
                                                 {"metadata": {"annotations": {"n": "1"}}})
    assert rs_noted.metadata.generation == 1
    status = apps.patch_namespaced_deployment_status("web", NS, {"status": {
        "replicas": 2, "readyReplicas": 1, "availableReplicas": 1, "updatedReplicas": 2,
        "observedGeneration": 3}})
    assert (status.metadata.generation, status.status.ready_replicas) == (3, 1)


def test_scale_get_replace_patch(apps: client.AppsV1Api, server: RunningApiServer) -> None:
    apps.create_namespaced_deployment(NS, deployment())
    scale = apps.read_namespaced_deployment_scale("web", NS)
    assert (scale.spec.replicas, scale.status.replicas, scale.status.selector) == (1, 0,
                                                                                    "app=web")
    scale.spec.replicas = 3
    replaced = apps.replace_namespaced_deployment_scale("web", NS, scale)
    assert replaced.spec.replicas == 3
    patched = apps.patch_namespaced_deployment_scale("web", NS, {"spec": {"replicas": 5}})
    assert patched.spec.replicas == 5
    assert apps.read_namespaced_deployment("web", NS).spec.replicas == 5
    with pytest.raises(client.ApiException) as caught:
        apps.patch_namespaced_deployment_scale("web", NS, {"spec": {"replicas": -1}})
    assert caught.value.status == 422
    assert status_of(caught.value)["details"]["kind"] == "Scale"
    apps.create_namespaced_replica_set(NS, replica_set())
    assert apps.patch_namespaced_replica_set_scale(
        "cache", NS, {"spec": {"replicas": 4}}).spec.replicas == 4
    legacy = raw(server, "GET", f"/api/v1/namespaces/{NS}/replicationcontrollers")
    assert legacy.status == 200


def test_the_selector_of_apps_v1_kinds_is_immutable(apps: client.AppsV1Api) -> None:
    apps.create_namespaced_deployment(NS, deployment())
    template = copy.deepcopy(TEMPLATE)
    template["metadata"]["labels"]["tier"] = "a"
    change = {"spec": {"selector": {"matchLabels": {"app": "web", "tier": "a"}},
                       "template": template}}
    with pytest.raises(client.ApiException) as caught:
        apps.patch_namespaced_deployment("web", NS, change)
    [cause] = status_of(caught.value)["details"]["causes"]
    assert (cause["field"], cause["message"].endswith("field is immutable")) == (
        "spec.selector", True)


def test_replication_controllers(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    body = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "rc"},
            "spec": {"template": copy.deepcopy(TEMPLATE)}}
    created = core.create_namespaced_replication_controller(NS, body)
    assert created.spec.selector == {"app": "web"} and created.spec.replicas == 1
    scale = core.patch_namespaced_replication_controller_scale("rc", NS,
                                                               {"spec": {"replicas": 2}})
    assert (scale.spec.replicas, scale.status.selector) == (2, "app=web")
    bad = {**body, "metadata": {"name": "bad"},
           "spec": {"selector": {"app": "other"}, "template": copy.deepcopy(TEMPLATE)}}
    with pytest.raises(client.ApiException) as caught:
        core.create_namespaced_replication_controller(NS, bad)
    assert status_of(caught.value)["details"]["causes"][0]["field"] == \
        "spec.template.metadata.labels"


def test_tables_and_field_selector(apps: client.AppsV1Api, server: RunningApiServer) -> None:
    apps.create_namespaced_deployment(NS, deployment(replicas=2))
    apps.create_namespaced_replica_set(NS, replica_set())
    table = raw(server, "GET", f"/apis/apps/v1/namespaces/{NS}/deployments",
                headers={"Accept": TABLE}).json()
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"]
    assert table["rows"][0]["cells"][:4] == ["web", "0/2", 0, 0]
    rs_table = raw(server, "GET", f"/apis/apps/v1/namespaces/{NS}/replicasets",
                   headers={"Accept": TABLE}).json()
    assert [c["name"] for c in rs_table["columnDefinitions"]][:5] == [
        "Name", "Desired", "Current", "Ready", "Age"]
    none = apps.list_namespaced_replica_set(NS, field_selector="status.replicas=1")
    zero = apps.list_namespaced_replica_set(NS, field_selector="status.replicas=0")
    assert (len(none.items), len(zero.items)) == (0, 1)


def test_discovery(server: RunningApiServer) -> None:
    resources = {r["name"]: r for r in raw(server, "GET", "/apis/apps/v1").json()["resources"]}
    assert resources["deployments"]["shortNames"] == ["deploy"]
    assert resources["deployments"]["categories"] == ["all"]
    assert resources["deployments/scale"]["kind"] == "Scale"
    assert resources["deployments/scale"]["group"] == "autoscaling"
    assert resources["replicasets"]["shortNames"] == ["rs"]
    core = {r["name"]: r for r in raw(server, "GET", "/api/v1").json()["resources"]}
    assert core["replicationcontrollers"]["shortNames"] == ["rc"]
