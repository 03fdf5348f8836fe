"""PATCH by Content-Type: merge, JSON patch, strategic merge (apply: test_server_side_apply)."""

from __future__ import annotations

import pytest
from kubernetes import client

from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from tests.integration.apiserver.conftest import pod, raw

POD_PATH = "/api/v1/namespaces/default/pods/a"


def _patch(server: RunningApiServer, content_type: str, body: object, path: str = POD_PATH):  # type: ignore[no-untyped-def]
    return raw(server, "PATCH", path, body, headers={"Content-Type": content_type})


@pytest.fixture
def two_containers(core: client.CoreV1Api) -> None:
    body = pod("a")
    body["metadata"]["labels"] = {"keep": "1", "drop": "1"}
    body["spec"]["containers"].append({"name": "side", "image": "busybox"})
    core.create_namespaced_pod("default", body)


@pytest.mark.usefixtures("two_containers")
def test_merge_patch(server: RunningApiServer) -> None:
    response = _patch(
        server, "application/merge-patch+json", {"metadata": {"labels": {"drop": None, "new": "1"}}}
    )
    assert response.status == 200
    assert response.json()["metadata"]["labels"] == {"keep": "1", "new": "1"}


@pytest.mark.usefixtures("two_containers")
def test_json_patch(server: RunningApiServer) -> None:
    ops = [
        {"op": "test", "path": "/metadata/labels/keep", "value": "1"},
        {"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}},
        {"op": "remove", "path": "/metadata/labels/drop"},
    ]
    response = _patch(server, "application/json-patch+json", ops)
    assert response.status == 200
    body = response.json()
    assert body["metadata"]["annotations"] == {"a": "b"}
    assert body["metadata"]["labels"] == {"keep": "1"}
    failing = _patch(
        server,
        "application/json-patch+json",
        [{"op": "test", "path": "/metadata/name", "value": "x"}],
    )
    assert failing.status == 422


@pytest.mark.usefixtures("two_containers")
def test_strategic_merge_patch_merges_lists_by_key(server: RunningApiServer) -> None:
    patch = {"spec": {"containers": [{"name": "side", "image": "busybox:2"}]}}
    response = _patch(server, "application/strategic-merge-patch+json", patch)
    assert response.status == 200
    containers = {c["name"]: c["image"] for c in response.json()["spec"]["containers"]}
    assert containers == {"main": "busybox", "side": "busybox:2"}


@pytest.mark.usefixtures("two_containers")
def test_an_unknown_patch_type_is_415_listing_what_is_accepted(server: RunningApiServer) -> None:
    response = _patch(server, "application/x-unknown-patch", {"metadata": {}})
    assert response.status == 415
    assert response.json()["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, "
        "application/strategic-merge-patch+json, application/apply-patch+yaml"
    )


def test_patch_of_missing_object_is_404(server: RunningApiServer) -> None:
    response = _patch(server, "application/merge-patch+json", {"metadata": {"labels": {"a": "b"}}})
    assert response.status == 404


@pytest.mark.usefixtures("two_containers")
def test_patch_with_stale_resource_version_conflicts(server: RunningApiServer) -> None:
    response = _patch(
        server,
        "application/merge-patch+json",
        {"metadata": {"resourceVersion": "1", "labels": {"a": "b"}}},
    )
    assert response.status == 409


@pytest.mark.usefixtures("two_containers")
def test_status_patch_only_touches_status(server: RunningApiServer) -> None:
    response = _patch(
        server,
        "application/merge-patch+json",
        {"status": {"phase": "Running"}, "metadata": {"labels": {"ignored": "1"}}},
        POD_PATH + "/status",
    )
    body = response.json()
    assert body["status"]["phase"] == "Running"
    assert "ignored" not in body["metadata"]["labels"]


def test_removing_the_last_finalizer_leaves_no_empty_list(server: RunningApiServer) -> None:
    """ObjectMeta's lists and maps are omitempty: `kubectl describe` of the object shows no
    empty `Finalizers:` and clients that test for the key see none."""
    path = "/api/v1/namespaces/default/configmaps/held"
    raw(server, "POST", "/api/v1/namespaces/default/configmaps",
        {"metadata": {"name": "held", "finalizers": ["example.com/hold"], "labels": {}}})
    assert "labels" not in raw(server, "GET", path).json()["metadata"]
    patched = raw(server, "PATCH", path,
                  [{"op": "replace", "path": "/metadata/finalizers", "value": []}],
                  headers={"Content-Type": "application/json-patch+json"})
    assert patched.status == 200
    assert "finalizers" not in patched.json()["metadata"]
    assert "finalizers" not in raw(server, "GET", path).json()["metadata"]
