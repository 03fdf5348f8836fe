"""The scale subresource of custom resources, over HTTP with the official client.

The shipped PyTorchJob CRD maps /scale to the Worker replicas (status: the active Workers
and their selector). A write through /scale is a spec change of the job: the CRD's schema
and CEL rules judge it, generation moves, watchers see MODIFIED, the writer owns the field.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from engine.cluster import running_apiserver
from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from engine.controller.machines.install import crd_resources, install_crds, wait_until_served
from engine.kube.client import KubeClient
from tests.integration.apiserver.conftest import raw, status_of

ROOT = Path(__file__).resolve().parents[3]
GROUP, VERSION, PLURAL, NS = "kubeflow.org", "v1", "pytorchjobs", "default"
JOB_PATH = f"/apis/{GROUP}/{VERSION}/namespaces/{NS}/{PLURAL}"
BOUNDS = "Worker replicas must be within elasticPolicy's [minReplicas, maxReplicas]"
WORKER_REPLICAS = ".spec.pytorchReplicaSpecs.Worker.replicas"
CLIENT = "OpenAPI-Generator"  # the manager the official client's User-Agent names


@pytest.fixture(scope="module")
def server() -> Iterator[RunningApiServer]:
    """One server for the module, with the shipped CRDs installed (that takes a moment);
    every test names its own objects."""
    with running_apiserver() as running:
        kube = KubeClient.from_kubeconfig(running.kubeconfig)
        try:
            install_crds(kube, ROOT / "crds")
            wait_until_served(kube, crd_resources(ROOT / "crds"))
        finally:
            kube.close()
        yield running


@pytest.fixture(scope="module")
def api(server: RunningApiServer) -> Iterator[client.ApiClient]:
    api_client = config.new_client_from_config(config_file=str(server.kubeconfig))
    try:
        yield api_client
    finally:
        api_client.close()


@pytest.fixture(scope="module")
def custom(api: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


@pytest.fixture
def jobs(custom: client.CustomObjectsApi) -> client.CustomObjectsApi:
    return custom


def pytorchjob(name: str, *, workers: int = 2, elastic: bool = True) -> dict[str, Any]:
    worker = {
        "replicas": workers,
        "template": {"spec": {"containers": [{"name": "pytorch", "image": "pytorch"}]}},
    }
    spec: dict[str, Any] = {"pytorchReplicaSpecs": {"Worker": worker}}
    if elastic:
        spec["elasticPolicy"] = {"minReplicas": 1, "maxReplicas": 3}
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "PyTorchJob",
            "metadata": {"name": name}, "spec": spec}


def create(api: client.CustomObjectsApi, body: dict[str, Any]) -> dict[str, Any]:
    created: dict[str, Any] = api.create_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, body)
    return created


def get_job(api: client.CustomObjectsApi, name: str) -> dict[str, Any]:
    job: dict[str, Any] = api.get_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, name)
    return job


def get_scale(api: client.CustomObjectsApi, name: str) -> dict[str, Any]:
    scale: dict[str, Any] = api.get_namespaced_custom_object_scale(GROUP, VERSION, NS, PLURAL, name)
    return scale


def patch_scale(api: client.CustomObjectsApi, name: str, replicas: int) -> dict[str, Any]:
    scale: dict[str, Any] = api.patch_namespaced_custom_object_scale(
        GROUP, VERSION, NS, PLURAL, name, {"spec": {"replicas": replicas}}
    )
    return scale


def workers(job: dict[str, Any]) -> int:
    count: int = job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"]
    return count


def test_discovery_lists_scale_for_crds_that_declare_it(jobs: client.CustomObjectsApi) -> None:
    resources = {r.name: r for r in jobs.get_api_resources(GROUP, VERSION).resources}
    scale = resources["pytorchjobs/scale"]
    assert (scale.group, scale.version, scale.kind) == ("autoscaling", "v1", "Scale")
    assert sorted(scale.verbs) == ["get", "patch", "update"]
    assert {"paddlejobs/scale", "jaxjobs/scale"} <= set(resources)
    assert "tfjobs/scale" not in resources and "tfjobs/status" in resources


def test_get_scale_reads_the_job(server: RunningApiServer, jobs: client.CustomObjectsApi) -> None:
    job = create(jobs, pytorchjob("read"))
    jobs.patch_namespaced_custom_object_status(GROUP, VERSION, NS, PLURAL, "read", {
        "status": {"replicaStatuses": {"Worker": {"active": 2, "selector": "job=read"}}}})
    current = get_job(jobs, "read")["metadata"]

    scale = get_scale(jobs, "read")

    assert scale == {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": "read", "namespace": NS, "uid": job["metadata"]["uid"],
            "resourceVersion": current["resourceVersion"],
            "creationTimestamp": job["metadata"]["creationTimestamp"],
        },
        "spec": {"replicas": 2},
        "status": {"replicas": 2, "selector": "job=read"},
    }


def test_scale_within_the_bounds_sets_the_worker_replicas(jobs: client.CustomObjectsApi) -> None:
    before = create(jobs, pytorchjob("down"))
    jobs.patch_namespaced_custom_object_status(GROUP, VERSION, NS, PLURAL, "down", {
        "status": {"replicaStatuses": {"Worker": {"active": 2}}}})

    answer = patch_scale(jobs, "down", 1)

    job = get_job(jobs, "down")
    assert workers(job) == 1
    assert job["metadata"]["generation"] == before["metadata"]["generation"] + 1
    assert job["status"] == {"replicaStatuses": {"Worker": {"active": 2}}}
    assert answer["spec"] == {"replicas": 1} and answer["status"] == {"replicas": 2}
    assert answer["metadata"]["resourceVersion"] == job["metadata"]["resourceVersion"]


def test_scale_beyond_the_elastic_bounds_is_refused(jobs: client.CustomObjectsApi) -> None:
    create(jobs, pytorchjob("up"))

    with pytest.raises(client.ApiException) as error:
        patch_scale(jobs, "up", 5)

    status = status_of(error.value)
    assert error.value.status == 422 and status["reason"] == "Invalid"
    assert status["message"] == (
        f'PyTorchJob.kubeflow.org "up" is invalid: spec.pytorchReplicaSpecs.Worker.replicas: '
        f'Invalid value: "object": {BOUNDS}'
    )
    assert status["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "spec.pytorchReplicaSpecs.Worker.replicas",
        "message": f'Invalid value: "object": {BOUNDS}'}]
    assert workers(get_job(jobs, "up")) == 2


def test_negative_replicas_are_refused_naming_the_path(jobs: client.CustomObjectsApi) -> None:
    create(jobs, pytorchjob("negative", elastic=False))

    with pytest.raises(client.ApiException) as error:
        patch_scale(jobs, "negative", -1)

    causes = status_of(error.value)["details"]["causes"]
    assert error.value.status == 422
    assert {"reason": "FieldValueInvalid", "field": WORKER_REPLICAS,
            "message": "Invalid value: -1: should be a non-negative integer"} in causes


def test_replace_with_a_stale_resource_version_is_a_conflict(
    jobs: client.CustomObjectsApi,
) -> None:
    create(jobs, pytorchjob("stale"))
    scale = get_scale(jobs, "stale")
    patch_scale(jobs, "stale", 3)

    scale["spec"]["replicas"] = 1
    with pytest.raises(client.ApiException) as error:
        jobs.replace_namespaced_custom_object_scale(GROUP, VERSION, NS, PLURAL, "stale", scale)

    assert error.value.status == 409
    assert status_of(error.value)["message"] == (
        'Operation cannot be fulfilled on pytorchjobs.kubeflow.org "stale": the object has been '
        "modified; please apply your changes to the latest version and try again"
    )
    assert workers(get_job(jobs, "stale")) == 3


def test_replace_with_the_current_resource_version(jobs: client.CustomObjectsApi) -> None:
    create(jobs, pytorchjob("replaced"))
    scale = get_scale(jobs, "replaced")
    scale["spec"]["replicas"] = 3

    answer = jobs.replace_namespaced_custom_object_scale(
        GROUP, VERSION, NS, PLURAL, "replaced", scale
    )

    assert answer["spec"] == {"replicas": 3}
    assert workers(get_job(jobs, "replaced")) == 3


def test_the_watch_sees_the_scaled_job(
    server: RunningApiServer, jobs: client.CustomObjectsApi
) -> None:
    start = create(jobs, pytorchjob("watched"))["metadata"]["resourceVersion"]

    patch_scale(jobs, "watched", 1)

    response = raw(server, "GET", f"{JOB_PATH}?watch=true&resourceVersion={start}&timeoutSeconds=1")
    events = [json.loads(line) for line in response.body.splitlines() if line]
    assert [(e["type"], workers(e["object"])) for e in events] == [("MODIFIED", 1)]


def test_the_writer_owns_the_replicas_through_scale(jobs: client.CustomObjectsApi) -> None:
    create(jobs, pytorchjob("owned"))

    patch_scale(jobs, "owned", 3)

    entries = get_job(jobs, "owned")["metadata"]["managedFields"]
    assert entries[0] == {
        "manager": CLIENT, "operation": "Update", "apiVersion": "kubeflow.org/v1",
        "fieldsType": "FieldsV1", "subresource": "scale",
        "fieldsV1": {"f:spec": {"f:pytorchReplicaSpecs": {"f:Worker": {"f:replicas": {}}}}},
    }
    creator = entries[1]["fieldsV1"]["f:spec"]["f:pytorchReplicaSpecs"]["f:Worker"]
    assert "f:replicas" not in creator and "f:template" in creator


def test_json_patch_and_dry_run(server: RunningApiServer, jobs: client.CustomObjectsApi) -> None:
    create(jobs, pytorchjob("patched"))
    operations = [{"op": "test", "path": "/spec/replicas", "value": 2},
                  {"op": "replace", "path": "/spec/replicas", "value": 3}]
    headers = {"Content-Type": "application/json-patch+json"}

    dry = raw(server, "PATCH", f"{JOB_PATH}/patched/scale?dryRun=All", operations,
              headers=headers)
    kept = workers(get_job(jobs, "patched"))
    done = raw(server, "PATCH", f"{JOB_PATH}/patched/scale", operations, headers=headers)

    assert dry.status == 200 and dry.json()["spec"] == {"replicas": 3} and kept == 2
    assert done.status == 200 and workers(get_job(jobs, "patched")) == 3


def test_strategic_merge_patch_is_refused_as_for_every_custom_resource_path(
    server: RunningApiServer, jobs: client.CustomObjectsApi
) -> None:
    create(jobs, pytorchjob("strategic"))

    response = raw(server, "PATCH", f"{JOB_PATH}/strategic/scale", {"spec": {"replicas": 1}},
                   headers={"Content-Type": "application/strategic-merge-patch+json"})

    assert response.status == 415
    assert response.json()["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    )


def test_server_side_apply_of_a_scale(
    server: RunningApiServer, jobs: client.CustomObjectsApi
) -> None:
    create(jobs, pytorchjob("applied"))
    config = b"apiVersion: autoscaling/v1\nkind: Scale\nspec:\n  replicas: 3\n"
    headers = {"Content-Type": "application/apply-patch+yaml"}

    conflicted = raw(server, "PATCH", f"{JOB_PATH}/applied/scale?fieldManager=hpa", config,
                     headers=headers)
    forced = raw(server, "PATCH", f"{JOB_PATH}/applied/scale?fieldManager=hpa&force=true",
                 config, headers=headers)

    assert conflicted.status == 409
    assert conflicted.json()["message"] == (
        f'Apply failed with 1 conflict: conflict with "{CLIENT}" using kubeflow.org/v1: '
        ".spec.replicas"
    )
    assert forced.status == 200 and forced.json()["spec"] == {"replicas": 3}
    entries = get_job(jobs, "applied")["metadata"]["managedFields"]
    assert {"manager": "hpa", "operation": "Apply", "subresource": "scale"}.items() <= (
        entries[0].items()
    )


def test_missing_objects_and_types_without_scale_are_404(
    server: RunningApiServer, jobs: client.CustomObjectsApi
) -> None:
    missing = raw(server, "GET", f"{JOB_PATH}/absent/scale")
    no_scale = raw(server, "GET", f"/apis/{GROUP}/{VERSION}/namespaces/{NS}/tfjobs/tf/scale")

    assert missing.status == 404
    assert missing.json()["message"] == 'pytorchjobs.kubeflow.org "absent" not found'
    assert no_scale.status == 404
    assert no_scale.json()["message"] == 'tfjobs.kubeflow.org "tf" not found'


def test_other_methods_are_not_supported(
    server: RunningApiServer, jobs: client.CustomObjectsApi
) -> None:
    create(jobs, pytorchjob("kept"))

    response = raw(server, "DELETE", f"{JOB_PATH}/kept/scale")

    assert response.status == 405
    assert response.json()["message"] == (
        'delete is not supported on resources of kind "pytorchjobs.kubeflow.org"'
    )


def test_a_table_shows_desired_and_available(
    server: RunningApiServer, jobs: client.CustomObjectsApi
) -> None:
    create(jobs, pytorchjob("tabled"))

    table = raw(server, "GET", f"{JOB_PATH}/tabled/scale",
                headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}).json()

    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name", "Desired", "Available", "Age"]
    assert table["rows"][0]["cells"][:3] == ["tabled", 2, 0]


def test_strict_field_validation_refuses_unknown_scale_fields(
    server: RunningApiServer, jobs: client.CustomObjectsApi
) -> None:
    create(jobs, pytorchjob("strict"))
    body = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "strict"},
            "spec": {"replicas": 1, "replica": 1}}

    strict = raw(server, "PUT", f"{JOB_PATH}/strict/scale?fieldValidation=Strict", body)
    warned = raw(server, "PUT", f"{JOB_PATH}/strict/scale", body)

    assert strict.status == 400
    assert strict.json()["message"] == (
        'Scale in version "v1" cannot be handled as a Scale: strict decoding error: '
        'unknown field "spec.replica"'
    )
    assert warned.status == 200
    assert warned.headers["Warning"] == '299 - "unknown field \\"spec.replica\\""'


def gadget_crd(**scale: str) -> dict[str, Any]:
    """A CRD whose spec replicas path is optional and nested in a map that may be missing."""
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "size": {"type": "object", "properties": {"count": {"type": "integer"}}},
            "color": {"type": "string"}}},
        "status": {"type": "object", "properties": {"count": {"type": "integer"}}}}}
    paths = {"specReplicasPath": ".spec.size.count", "statusReplicasPath": ".status.count",
             **scale}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "subresources": {"status": {}, "scale": paths},
                               "schema": {"openAPIV3Schema": schema}}]},
    }


GADGETS = "/apis/example.com/v1/namespaces/default/gadgets"


def test_a_resource_without_spec_replicas(
    server: RunningApiServer, api: client.ApiClient, custom: client.CustomObjectsApi
) -> None:
    client.ApiextensionsV1Api(api).create_custom_resource_definition(gadget_crd())
    custom.create_namespaced_custom_object("example.com", "v1", NS, "gadgets", {
        "apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"},
        "spec": {"color": "red"}})

    read = raw(server, "GET", f"{GADGETS}/g/scale")
    untouched = raw(server, "PATCH", f"{GADGETS}/g/scale", {"metadata": {"labels": {"a": "b"}}},
                    headers={"Content-Type": "application/merge-patch+json"})
    scaled = raw(server, "PATCH", f"{GADGETS}/g/scale", {"spec": {"replicas": 4}},
                 headers={"Content-Type": "application/merge-patch+json"})

    assert read.status == 500
    assert read.json()["message"] == (
        'Internal error occurred: the spec replicas field ".spec.size.count" does not exist')
    assert untouched.status == 400
    assert untouched.json()["message"] == (
        'the spec replicas field ".spec.size.count" cannot be empty')
    assert scaled.status == 200 and scaled.json()["spec"] == {"replicas": 4}
    gadget = custom.get_namespaced_custom_object("example.com", "v1", NS, "gadgets", "g")
    assert gadget["spec"] == {"color": "red", "size": {"count": 4}}


@pytest.mark.parametrize(
    ("paths", "field", "message"),
    [
        ({"specReplicasPath": ".status.count"}, "specReplicasPath",
         'Invalid value: ".status.count": should be a json path under .spec'),
        ({"statusReplicasPath": "status.count"}, "statusReplicasPath",
         'Invalid value: "status.count": must be a simple json path starting with .'),
        ({"labelSelectorPath": ".metadata.name"}, "labelSelectorPath",
         'Invalid value: ".metadata.name": should be a json path under either .spec or .status'),
        ({"specReplicasPath": ""}, "specReplicasPath", "Required value"),
    ],
)
def test_crd_scale_paths_are_validated(
    api: client.ApiClient, paths: dict[str, str], field: str, message: str
) -> None:
    with pytest.raises(client.ApiException) as error:
        client.ApiextensionsV1Api(api).create_custom_resource_definition(gadget_crd(**paths))

    assert error.value.status == 422
    assert {"reason": status_of(error.value)["details"]["causes"][0]["reason"],
            "field": f"spec.versions[0].subresources.scale.{field}", "message": message} in (
        status_of(error.value)["details"]["causes"])
