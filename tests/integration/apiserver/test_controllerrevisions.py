"""ControllerRevisions over HTTP, used as the engine uses them: owned, labelled, listed, watched."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config, watch

from engine.cluster import running_apiserver
from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from tests.integration.apiserver.conftest import raw, status_of
from tests.polling import eventually

TEMPLATE = {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "busybox"}]}}}}


@pytest.fixture
def apps(api: client.ApiClient) -> client.AppsV1Api:
    return client.AppsV1Api(api)


def revision(name: str, number: int, *, owner: Any = None, app: str = "web") -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": {"app": app}}
    if owner is not None:
        metadata["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": owner.metadata.name,
                "uid": owner.metadata.uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": metadata,
        "data": TEMPLATE,
        "revision": number,
    }


def test_create_read_and_list_by_label(apps: client.AppsV1Api, core: client.CoreV1Api) -> None:
    owner = core.create_namespaced_config_map("default", {"metadata": {"name": "web"}})
    apps.create_namespaced_controller_revision("default", revision("web-1", 1, owner=owner))
    apps.create_namespaced_controller_revision("default", revision("web-2", 2, owner=owner))
    apps.create_namespaced_controller_revision("default", revision("db-1", 1, app="db"))
    read = apps.read_namespaced_controller_revision("web-2", "default")
    assert (read.data, read.revision, read.kind) == (TEMPLATE, 2, "ControllerRevision")
    assert read.metadata.owner_references[0].uid == owner.metadata.uid
    listed = apps.list_namespaced_controller_revision("default", label_selector="app=web")
    assert [r.metadata.name for r in listed.items] == ["web-1", "web-2"]
    everywhere = apps.list_controller_revision_for_all_namespaces(label_selector="app in (db)")
    assert [r.metadata.name for r in everywhere.items] == ["db-1"]


def test_watch_by_label_sees_only_its_revisions(apps: client.AppsV1Api) -> None:
    apps.create_namespaced_controller_revision("default", revision("web-1", 1))
    seen: list[tuple[str, str, int]] = []
    stream = watch.Watch().stream(
        apps.list_namespaced_controller_revision,
        "default",
        label_selector="app=web",
        timeout_seconds=20,
    )
    for event in stream:
        obj = event["object"]
        seen.append((event["type"], obj.metadata.name, obj.revision))
        if len(seen) == 1:
            apps.create_namespaced_controller_revision("default", revision("db-1", 1, app="db"))
            apps.patch_namespaced_controller_revision("web-1", "default", {"revision": 3})
            apps.delete_namespaced_controller_revision("web-1", "default")
        if event["type"] == "DELETED":
            break
    assert seen == [("ADDED", "web-1", 1), ("MODIFIED", "web-1", 3), ("DELETED", "web-1", 3)]


def test_revisions_go_with_their_owner(apps: client.AppsV1Api, core: client.CoreV1Api) -> None:
    owner = core.create_namespaced_config_map("default", {"metadata": {"name": "web"}})
    apps.create_namespaced_controller_revision("default", revision("web-1", 1, owner=owner))
    core.delete_namespaced_config_map("web", "default")

    def gone() -> bool:
        names = apps.list_namespaced_controller_revision("default").items
        return not names

    eventually(gone)


def test_data_is_immutable_and_revision_is_not(apps: client.AppsV1Api) -> None:
    apps.create_namespaced_controller_revision("default", revision("web-1", 1))
    with pytest.raises(client.ApiException) as caught:
        apps.patch_namespaced_controller_revision("web-1", "default", {"data": {"other": 1}})
    assert caught.value.status == 422
    [cause] = status_of(caught.value)["details"]["causes"]
    assert (cause["field"], cause["reason"]) == ("data", "FieldValueInvalid")
    assert cause["message"].endswith("field is immutable")
    renumbered = apps.patch_namespaced_controller_revision("web-1", "default", {"revision": 5})
    assert renumbered.revision == 5
    with pytest.raises(client.ApiException) as negative:
        apps.patch_namespaced_controller_revision("web-1", "default", {"revision": -1})
    assert negative.value.status == 422


def test_discovery_and_openapi_serve_the_apps_group(server: RunningApiServer) -> None:
    groups = raw(server, "GET", "/apis").json()["groups"]
    [group] = [g for g in groups if g["name"] == "apps"]
    assert group["versions"] == [{"groupVersion": "apps/v1", "version": "v1"}]
    assert raw(server, "GET", "/apis/apps").json()["kind"] == "APIGroup"
    resources = raw(server, "GET", "/apis/apps/v1").json()
    assert "controllerrevisions" in [r["name"] for r in resources["resources"]]
    index = raw(server, "GET", "/openapi/v3").json()["paths"]
    assert "apis/apps/v1" in index
    document = raw(server, "GET", index["apis/apps/v1"]["serverRelativeURL"]).json()
    assert "io.k8s.api.apps.v1.ControllerRevision" in document["components"]["schemas"]


def test_revisions_survive_a_restart_with_a_data_dir(tmp_path: Path) -> None:
    with (
        running_apiserver(data_dir=tmp_path) as first,
        config.new_client_from_config(config_file=str(first.kubeconfig)) as api,
    ):
        client.AppsV1Api(api).create_namespaced_controller_revision("default", revision("web-1", 7))
    with (
        running_apiserver(data_dir=tmp_path) as second,
        config.new_client_from_config(config_file=str(second.kubeconfig)) as api,
    ):
        kept = client.AppsV1Api(api).read_namespaced_controller_revision("web-1", "default")
    assert (kept.data, kept.revision, kept.metadata.labels) == (TEMPLATE, 7, {"app": "web"})
