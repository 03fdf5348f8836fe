"""Events expire one `--event-ttl` after their last write, as on kube-apiserver: a watcher
sees them DELETED, and events loaded from a data dir expire too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engine.cluster import running_apiserver
from engine.cluster.apiserver.endpoints.serve import RunningApiServer, ServerOptions
from tests.integration.apiserver.conftest import raw
from tests.integration.apiserver.server_process import apiserver_process
from tests.polling import eventually

_EVENTS = "/api/v1/namespaces/default/events"


def _event(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p"},
            "reason": "Started", "message": "Started container main", "type": "Normal"}


def _post(server: RunningApiServer, name: str) -> str:
    created = raw(server, "POST", _EVENTS, _event(name))
    assert created.status == 201, created.body
    return str(created.json()["metadata"]["resourceVersion"])


def _names(server: RunningApiServer) -> set[str]:
    return {item["metadata"]["name"] for item in raw(server, "GET", _EVENTS).json()["items"]}


def _changes_since(server: RunningApiServer, version: str) -> list[tuple[str, str]]:
    response = raw(server, "GET", f"{_EVENTS}?watch=true&resourceVersion={version}"
                   "&timeoutSeconds=1")
    events = [json.loads(line) for line in response.body.splitlines() if line]
    return [(e["type"], e["object"]["metadata"]["name"]) for e in events]


def test_an_event_with_a_short_ttl_disappears_and_watchers_see_it_deleted() -> None:
    with running_apiserver(options=ServerOptions(event_ttl=1)) as server:
        before = str(raw(server, "GET", _EVENTS).json()["metadata"]["resourceVersion"])
        _post(server, "brief")
        eventually(lambda: not _names(server), timeout=30)
        assert _changes_since(server, before) == [("ADDED", "brief"), ("DELETED", "brief")]


def test_the_default_ttl_keeps_a_new_event(server: RunningApiServer) -> None:
    _post(server, "kept")
    assert _names(server) == {"kept"}


def test_an_event_loaded_from_the_data_dir_expires(tmp_path: Path) -> None:
    with running_apiserver(data_dir=tmp_path) as server:
        version = _post(server, "from-before")
    with running_apiserver(data_dir=tmp_path, options=ServerOptions(event_ttl=1)) as server:
        eventually(lambda: not _names(server), timeout=30)
        assert ("DELETED", "from-before") in _changes_since(server, version)
    with running_apiserver(data_dir=tmp_path) as server:
        assert _names(server) == set()


def test_the_event_ttl_flag_of_jobmachine_apiserver(tmp_path: Path) -> None:
    with apiserver_process(tmp_path, "--event-ttl", "1s") as core:
        core.create_namespaced_event("default", _event("flagged"))
        eventually(lambda: not core.list_namespaced_event("default").items, timeout=30)
