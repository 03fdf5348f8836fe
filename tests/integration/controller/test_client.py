"""KubeClient over real HTTP(S) against the embedded API server: CRUD, every typed error,
pagination, the three patch types, the status subresource, watches and their 410."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from engine.cluster import running_apiserver
from engine.cluster.apiserver.endpoints.serve import RunningApiServer, ServerOptions
from engine.cluster.apiserver.endpoints.watch_stream import WatchSettings
from engine.kube.client import KubeClient
from engine.kube.errors import (
    AlreadyExists,
    ApiError,
    Conflict,
    Gone,
    Invalid,
    NotFound,
    Replaced,
    Unavailable,
)
from engine.kube.resources import NAMESPACES, PODS, Resource

CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
HISTORY = 20


@pytest.fixture(scope="module")
def server() -> Iterator[RunningApiServer]:
    options = ServerOptions(history=HISTORY, watch=WatchSettings(bookmark_interval=0.2))
    with running_apiserver(tls=True, options=options) as running:
        yield running


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "data": data}


def pod(name: str, *containers: str) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "spec": {"containers": [{"name": c, "image": f"{c}:1"} for c in containers]}}


def test_create_get_replace_delete(client: KubeClient, ns: str) -> None:
    created = client.create(CONFIGMAPS, configmap("a", x="1"), ns)
    assert created["metadata"]["uid"] and created["data"] == {"x": "1"}
    fetched = client.get(CONFIGMAPS, "a", ns)
    assert fetched["metadata"]["uid"] == created["metadata"]["uid"]
    fetched["data"] = {"x": "2"}
    replaced = client.replace(CONFIGMAPS, "a", fetched, namespace=ns)
    assert replaced["data"] == {"x": "2"}
    client.delete(CONFIGMAPS, "a", ns, uid=created["metadata"]["uid"])
    with pytest.raises(NotFound):
        client.get(CONFIGMAPS, "a", ns)


def test_typed_errors_carry_the_servers_status(client: KubeClient, ns: str) -> None:
    with pytest.raises(NotFound) as missing:
        client.get(CONFIGMAPS, "nothing", ns)
    assert missing.value.status == 404 and missing.value.reason == "NotFound"
    assert str(missing.value) == 'configmaps "nothing" not found'
    with pytest.raises(NotFound):
        client.delete(CONFIGMAPS, "nothing", ns)

    client.create(CONFIGMAPS, configmap("a"), ns)
    with pytest.raises(AlreadyExists) as exists:
        client.create(CONFIGMAPS, configmap("a"), ns)
    assert exists.value.status == 409 and exists.value.body["reason"] == "AlreadyExists"

    with pytest.raises(Invalid) as invalid:
        client.create(CONFIGMAPS, configmap("Not_A_Name"), ns)
    assert invalid.value.status == 422 and "metadata.name" in str(invalid.value)


def test_stale_resource_version_and_uid_precondition_are_conflicts(
    client: KubeClient, ns: str
) -> None:
    first = client.create(CONFIGMAPS, configmap("a", x="1"), ns)
    client.patch(CONFIGMAPS, "a", {"data": {"x": "2"}}, namespace=ns)
    stale = {"metadata": {"resourceVersion": first["metadata"]["resourceVersion"]},
             "data": {"x": "3"}}
    with pytest.raises(Conflict) as conflict:
        client.patch(CONFIGMAPS, "a", stale, namespace=ns)
    assert conflict.value.status == 409 and not isinstance(conflict.value, AlreadyExists)
    with pytest.raises(Conflict):
        client.replace(CONFIGMAPS, "a", {**first, "data": {"x": "4"}}, namespace=ns)
    with pytest.raises(Conflict):
        client.delete(CONFIGMAPS, "a", ns, uid="not-the-uid")
    assert client.get(CONFIGMAPS, "a", ns)["data"] == {"x": "2"}


def test_a_name_made_again_refuses_the_old_uid_as_kube_apiserver_does(
    client: KubeClient, ns: str
) -> None:
    """Deleted and made again under its name: a PUT with the old uid fails its precondition
    (409, Conflict); a patch naming it is a 422 on metadata.uid (Replaced, an Invalid)."""
    old = client.create(CONFIGMAPS, configmap("again", x="1"), ns)
    client.delete(CONFIGMAPS, "again", ns)
    client.create(CONFIGMAPS, configmap("again", x="2"), ns)
    patch = {"metadata": {"uid": old["metadata"]["uid"]}, "data": {"x": "3"}}
    with pytest.raises(Replaced) as replaced:
        client.patch(CONFIGMAPS, "again", patch, namespace=ns)
    assert (replaced.value.status, replaced.value.reason) == (422, "Invalid")
    assert isinstance(replaced.value, Invalid)
    assert replaced.value.message == (
        f'ConfigMap "again" is invalid: metadata.uid: Invalid value: "{old["metadata"]["uid"]}"'
        ": field is immutable")
    with pytest.raises(Conflict):
        client.replace(CONFIGMAPS, "again", {**old, "data": {"x": "4"}}, namespace=ns)
    with pytest.raises(Invalid) as invalid:
        client.patch(CONFIGMAPS, "again", {"metadata": {"labels": {"a b": "c"}}}, namespace=ns)
    assert not isinstance(invalid.value, Replaced)
    assert client.get(CONFIGMAPS, "again", ns)["data"] == {"x": "2"}


def test_list_follows_continue_tokens_and_counts_each_page(client: KubeClient, ns: str) -> None:
    for i in range(7):
        client.create(CONFIGMAPS, configmap(f"cm-{i}", app="a" if i % 2 else "b"), ns)
    client.patch(CONFIGMAPS, "cm-1", {"metadata": {"labels": {"app": "a"}}}, namespace=ns)
    before = client.request_count
    items, resource_version = client.list(CONFIGMAPS, ns, page_size=2)
    assert client.request_count - before == 4
    # and the namespace's kube-root-ca.crt, as on any cluster
    assert sorted(i["metadata"]["name"] for i in items) == [
        *(f"cm-{i}" for i in range(7)), "kube-root-ca.crt"]
    assert {(i["apiVersion"], i["kind"]) for i in items} == {("v1", "ConfigMap")}
    assert int(resource_version) >= max(int(i["metadata"]["resourceVersion"]) for i in items)
    labelled, _ = client.list(CONFIGMAPS, ns, label_selector="app=a", page_size=1)
    assert [i["metadata"]["name"] for i in labelled] == ["cm-1"]
    named, _ = client.list(CONFIGMAPS, ns, field_selector="metadata.name=cm-3")
    assert [i["metadata"]["name"] for i in named] == ["cm-3"]


def test_list_keeps_what_transform_makes_of_each_item_and_says_each_page(
    client: KubeClient, ns: str
) -> None:
    """An informer keeps only its projection of each object as the pages arrive."""
    for i in range(5):
        client.create(CONFIGMAPS, configmap(f"cm-{i}", app="a"), ns)
    pages: list[int] = []
    seen: list[tuple[str, str]] = []

    def name_only(item: dict[str, Any]) -> dict[str, Any]:
        seen.append((item["kind"], item["metadata"]["name"]))  # typed, as list items are
        return {"name": item["metadata"]["name"]}

    views, _ = client.list(CONFIGMAPS, ns, page_size=2, on_page=pages.append,
                           transform=name_only)
    names = [*(f"cm-{i}" for i in range(5)), "kube-root-ca.crt"]  # as in any namespace
    assert sorted(view["name"] for view in views) == names
    assert all(view.keys() == {"name"} for view in views)
    assert sorted(seen) == [("ConfigMap", name) for name in names]
    assert pages == [2, 4, 6]


def test_merge_json_and_strategic_patches(client: KubeClient, ns: str) -> None:
    client.create(CONFIGMAPS, configmap("a", x="1", y="2"), ns)
    merged = client.patch(CONFIGMAPS, "a", {"data": {"x": None, "z": "3"}}, namespace=ns)
    assert merged["data"] == {"y": "2", "z": "3"}
    ops = [{"op": "replace", "path": "/data/y", "value": "9"},
           {"op": "remove", "path": "/data/z"}]
    assert client.patch(CONFIGMAPS, "a", ops, namespace=ns, patch_type="json")["data"] == {
        "y": "9"}
    with pytest.raises(TypeError):
        client.patch(CONFIGMAPS, "a", {"data": {}}, namespace=ns, patch_type="json")

    client.create(PODS, pod("p", "main", "side"), ns)
    change = {"spec": {"containers": [{"name": "side", "image": "side:2"}]}}
    strategic = client.patch(PODS, "p", change, namespace=ns, patch_type="strategic")
    assert [(c["name"], c["image"]) for c in strategic["spec"]["containers"]] == [
        ("main", "main:1"), ("side", "side:2")]


def test_status_subresource(client: KubeClient, ns: str) -> None:
    client.create(PODS, pod("p", "main"), ns)
    running = client.patch(PODS, "p", {"status": {"phase": "Running", "podIP": "10.1.1.1"}},
                           namespace=ns, subresource="status")
    assert running["status"]["phase"] == "Running"
    ignored = client.patch(PODS, "p", {"status": {"phase": "Failed"}}, namespace=ns)
    assert ignored["status"]["phase"] == "Running"
    current = client.get(PODS, "p", ns)
    current["status"]["phase"] = "Succeeded"
    replaced = client.replace(PODS, "p", current, namespace=ns, subresource="status")
    assert replaced["status"]["phase"] == "Succeeded"


def test_watch_yields_events_and_bookmarks_from_a_resource_version(
    client: KubeClient, ns: str
) -> None:
    _, resource_version = client.list(CONFIGMAPS, ns)
    client.create(CONFIGMAPS, configmap("a", x="1"), ns)
    client.patch(CONFIGMAPS, "a", {"data": {"x": "2"}}, namespace=ns)
    client.delete(CONFIGMAPS, "a", ns)
    seen: list[tuple[str, str | None]] = []
    stream = client.watch(CONFIGMAPS, ns, resource_version=resource_version, timeout_seconds=30)
    for event in stream:
        obj = event["object"]
        seen.append((event["type"], (obj.get("data") or {}).get("x")))
        if event["type"] == "BOOKMARK":
            assert int(obj["metadata"]["resourceVersion"]) >= int(resource_version)
            break
    stream.close()
    assert seen == [("ADDED", "1"), ("MODIFIED", "2"), ("DELETED", "2"), ("BOOKMARK", None)]


def test_watch_ends_when_the_server_times_it_out(client: KubeClient, ns: str) -> None:
    _, resource_version = client.list(CONFIGMAPS, ns)
    events = list(client.watch(CONFIGMAPS, ns, resource_version=resource_version,
                               timeout_seconds=1, allow_bookmarks=False))
    assert events == []


def test_closing_a_watch_from_another_thread_ends_it_and_frees_the_client(
    client: KubeClient, ns: str
) -> None:
    _, resource_version = client.list(CONFIGMAPS, ns)
    streams = [client.watch(CONFIGMAPS, ns, resource_version=resource_version,
                            timeout_seconds=300, allow_bookmarks=False) for _ in range(40)]
    results: list[list[dict[str, Any]]] = []
    reader = threading.Thread(target=lambda: results.append(list(streams[0])))
    reader.start()
    client.create(CONFIGMAPS, configmap("a"), ns)
    for stream in streams:
        stream.close()
    reader.join(60)
    assert not reader.is_alive()
    assert [e["type"] for e in results[0]] in ([], ["ADDED"])
    assert client.get(CONFIGMAPS, "a", ns)["metadata"]["name"] == "a"


def test_a_resource_version_older_than_the_history_is_gone(client: KubeClient, ns: str) -> None:
    _, resource_version = client.list(CONFIGMAPS, ns)
    for i in range(HISTORY + 5):
        client.create(CONFIGMAPS, configmap(f"cm-{i}"), ns)
    with pytest.raises(Gone) as gone:
        next(client.watch(CONFIGMAPS, ns, resource_version=resource_version))
    assert gone.value.status == 410


def test_request_count_counts_every_request(client: KubeClient, ns: str) -> None:
    before = client.request_count
    client.create(CONFIGMAPS, configmap("a"), ns)
    client.get(CONFIGMAPS, "a", ns)
    with pytest.raises(NotFound):
        client.get(CONFIGMAPS, "b", ns)
    client.watch(CONFIGMAPS, ns, resource_version="0", timeout_seconds=1).close()
    assert client.request_count - before == 4


def test_a_stopped_server_is_unavailable() -> None:
    with running_apiserver() as running:
        kube = KubeClient.from_kubeconfig(running.kubeconfig)
        kube.list(NAMESPACES)
    try:
        with pytest.raises(Unavailable) as unavailable:
            kube.list(NAMESPACES)
        assert isinstance(unavailable.value, ApiError) and unavailable.value.status == 0
    finally:
        kube.close()


def test_a_client_with_its_own_budget_is_not_held_by_the_first_ones_limit(
    server: RunningApiServer,
) -> None:
    """Events go through `with_budget`: an exhausted control-path budget must not hold them."""
    slow = KubeClient.from_kubeconfig(server.kubeconfig, qps=0.001, burst=1)
    events = slow.with_budget(1000, 1000)
    try:
        slow.list(NAMESPACES)  # the only token the slow budget has for the next ~17 minutes
        sent = threading.Event()

        def send_events() -> None:
            for _ in range(20):
                events.list(NAMESPACES)
            sent.set()

        threading.Thread(target=send_events, daemon=True).start()
        assert sent.wait(60), "requests under their own budget waited for the other budget"
        assert slow.request_count == events.request_count == 21
    finally:
        slow.close()
