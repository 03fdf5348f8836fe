"""Watch: events in order, resumption, 410 as an ERROR event, bookmarks, selectors."""

from __future__ import annotations

import json
import threading
import urllib.request
from typing import Any

from kubernetes import client

from engine.cluster.apiserver.endpoints.serve import (
    RunningApiServer,
    ServerOptions,
    running_apiserver,
)
from engine.cluster.apiserver.endpoints.watch_stream import WatchSettings
from tests.integration.apiserver.conftest import raw


def _events(
    server: RunningApiServer, query: str, path: str = "/api/v1/namespaces/default/configmaps"
) -> list[dict[str, Any]]:
    response = raw(server, "GET", f"{path}?watch=true&{query}")
    assert response.status == 200
    return [json.loads(line) for line in response.body.splitlines() if line]


def _cm(core: client.CoreV1Api, name: str, **labels: str) -> str:
    body = {"metadata": {"name": name, "labels": labels}, "data": {}}
    return str(core.create_namespaced_config_map("default", body).metadata.resource_version)


def test_watch_from_zero_starts_with_the_current_state(
    server: RunningApiServer, core: client.CoreV1Api
) -> None:
    _cm(core, "a")
    _cm(core, "b")
    events = _events(server, "resourceVersion=0&timeoutSeconds=1")
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
        ("ADDED", "kube-root-ca.crt"),
    ]


def test_watch_resumes_after_a_resource_version(
    server: RunningApiServer, core: client.CoreV1Api
) -> None:
    start = _cm(core, "a")
    core.patch_namespaced_config_map("a", "default", {"data": {"x": "1"}})
    _cm(core, "b")
    core.delete_namespaced_config_map("a", "default")
    events = _events(server, f"resourceVersion={start}&timeoutSeconds=1")
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("MODIFIED", "a"),
        ("ADDED", "b"),
        ("DELETED", "a"),
    ]
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions) and versions[0] > int(start)


def test_too_old_resource_version_is_a_410_error_event(core: client.CoreV1Api) -> None:
    options = ServerOptions(history=3)
    with running_apiserver(options=options) as server:
        from kubernetes import config

        api = config.new_client_from_config(config_file=str(server.kubeconfig))
        v1 = client.CoreV1Api(api)
        first = _cm(v1, "a")
        for name in ("b", "c", "d", "e"):
            _cm(v1, name)
        events = _events(server, f"resourceVersion={first}&timeoutSeconds=1")
        assert len(events) == 1 and events[0]["type"] == "ERROR"
        status = events[0]["object"]
        assert status["code"] == 410 and status["reason"] == "Expired"
        assert status["message"].startswith(f"too old resource version: {first}")
        listed = v1.list_namespaced_config_map("default", limit=2)
        for name in ("f", "g", "h", "i"):
            _cm(v1, name)
        expired = raw(
            server,
            "GET",
            f"/api/v1/namespaces/default/configmaps?limit=2&continue={listed.metadata._continue}",
        )
        assert expired.status == 410 and expired.json()["reason"] == "Expired"
        api.close()


def test_bookmarks_periodically_and_at_the_end(core: client.CoreV1Api) -> None:
    options = ServerOptions(watch=WatchSettings(bookmark_interval=0.3))
    with running_apiserver(options=options) as server:
        events = _events(server, "allowWatchBookmarks=true&timeoutSeconds=1&resourceVersion=0")
        bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
        assert len(bookmarks) >= 2
        assert bookmarks[-1]["object"]["kind"] == "ConfigMap"
        assert int(bookmarks[-1]["object"]["metadata"]["resourceVersion"]) > 0


def test_label_selector_watch_sees_objects_enter_and_leave(
    server: RunningApiServer, core: client.CoreV1Api
) -> None:
    start = _cm(core, "a", team="x")
    core.patch_namespaced_config_map("a", "default", {"metadata": {"labels": {"team": "y"}}})
    core.patch_namespaced_config_map("a", "default", {"metadata": {"labels": {"team": "x"}}})
    _cm(core, "other", team="y")
    events = _events(server, f"resourceVersion={start}&timeoutSeconds=1&labelSelector=team%3Dx")
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("DELETED", "a"),
        ("ADDED", "a"),
    ]


def test_single_object_watch_path(server: RunningApiServer, core: client.CoreV1Api) -> None:
    start = _cm(core, "a")
    _cm(core, "b")
    core.patch_namespaced_config_map("a", "default", {"data": {"k": "v"}})
    events = _events(
        server,
        f"resourceVersion={start}&timeoutSeconds=1",
        path="/api/v1/watch/namespaces/default/configmaps/a",
    )
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("MODIFIED", "a")]


def test_official_client_watch_across_namespaces(
    server: RunningApiServer, core: client.CoreV1Api
) -> None:
    from kubernetes import watch

    core.create_namespace({"metadata": {"name": "other"}})
    start = core.list_config_map_for_all_namespaces().metadata.resource_version
    core.create_namespaced_config_map("other", {"metadata": {"name": "x"}})
    core.create_namespaced_config_map("default", {"metadata": {"name": "y"}})
    seen = [
        (event["type"], event["object"].metadata.namespace, event["object"].metadata.name)
        for event in watch.Watch().stream(
            core.list_config_map_for_all_namespaces, resource_version=start, timeout_seconds=1
        )
    ]
    assert seen == [("ADDED", "other", "x"), ("ADDED", "default", "y")]


def test_stopping_the_server_ends_open_watches() -> None:
    started = threading.Event()
    rest: list[bytes] = []
    with running_apiserver() as server:

        def follow() -> None:
            request = urllib.request.Request(
                server.url + "/api/v1/namespaces?watch=1",
                headers={"Authorization": f"Bearer {server.token}"},
            )
            with urllib.request.urlopen(request, timeout=60) as response:
                response.readline()
                started.set()
                rest.append(response.read())

        thread = threading.Thread(target=follow, daemon=True)
        thread.start()
        assert started.wait(30)
    thread.join(30)
    assert not thread.is_alive() and len(rest) == 1  # the stream ended cleanly
