"""Faults injected by the embedded server, seen over real HTTP."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from engine.cluster import running_apiserver
from engine.cluster.apiserver.endpoints.faults import FaultInjector, FaultPlan, FaultRule
from engine.cluster.apiserver.endpoints.serve import RunningApiServer, ServerOptions
from engine.kube.client import KubeClient
from engine.kube.errors import AlreadyExists, Conflict, Unavailable
from engine.kube.resources import CONFIGMAPS as CONFIGMAPS_RES

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


@pytest.fixture
def injector() -> FaultInjector:
    return FaultInjector(FaultPlan(), enabled=False)


@pytest.fixture
def server(injector: FaultInjector) -> Iterator[RunningApiServer]:
    with running_apiserver(options=ServerOptions(faults=injector)) as info:
        yield info


def _connect(server: RunningApiServer, timeout: float = 10) -> http.client.HTTPConnection:
    parts = urlsplit(server.url)
    return http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout)


def _request(server: RunningApiServer, method: str, path: str, body: Any = None,
             ) -> tuple[int, http.client.HTTPMessage, Any]:
    conn = _connect(server)
    try:
        headers = {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"}
        conn.request(method, path, None if body is None else json.dumps(body), headers)
        response = conn.getresponse()
        data = response.read()
        return response.status, response.headers, json.loads(data) if data else None
    finally:
        conn.close()


def _configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {"k": "v"}}


def _plan(*rules: FaultRule, seed: int = 0) -> FaultPlan:
    return FaultPlan(rules, seed)


def _exists(server: RunningApiServer, name: str) -> bool:
    return _request(server, "GET", f"{CONFIGMAPS}/{name}")[0] == 200


def test_throttle_answers_429_with_retry_after(server: RunningApiServer,
                                               injector: FaultInjector) -> None:
    injector.set_plan(_plan(FaultRule("throttle", verbs=("create",), resources=("configmaps",),
                                      retry_after=2)))
    injector.enabled = True
    status, headers, body = _request(server, "POST", CONFIGMAPS, _configmap("a"))
    assert status == 429
    assert headers["Retry-After"] == "2"
    assert body["kind"] == "Status" and body["reason"] == "TooManyRequests"
    assert body["code"] == 429 and body["details"]["retryAfterSeconds"] == 2
    assert not _exists(server, "a")  # reads are not throttled by this rule
    injector.enabled = False
    assert _request(server, "POST", CONFIGMAPS, _configmap("a"))[0] == 201
    assert injector.report()["injected"] == {"0:throttle": 1}


@pytest.mark.parametrize(("action", "code", "reason"), [
    ("conflict", 409, "Conflict"),
    ("error", 500, "InternalError"),
    ("unavailable", 503, "ServiceUnavailable"),
])
def test_status_faults(server: RunningApiServer, injector: FaultInjector, action: str,
                       code: int, reason: str) -> None:
    assert _request(server, "POST", CONFIGMAPS, _configmap("a"))[0] == 201
    injector.set_plan(_plan(FaultRule(action, verbs=("update",))))
    injector.enabled = True
    status, _, body = _request(server, "PUT", f"{CONFIGMAPS}/a", _configmap("a"))
    assert (status, body["kind"], body["status"], body["reason"], body["code"]) == (
        code, "Status", "Failure", reason, code)
    if action == "conflict":
        assert body["details"] == {"name": "a", "kind": "configmaps"}
        assert "the object has been modified" in body["message"]


def test_official_client_sees_the_fault(server: RunningApiServer,
                                        injector: FaultInjector) -> None:
    injector.set_plan(_plan(FaultRule("throttle", retry_after=0)))
    injector.enabled = True
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(server.kubeconfig),
                            client_configuration=configuration)
    with client.ApiClient(configuration) as api, pytest.raises(ApiException) as caught:
        client.CoreV1Api(api).list_namespaced_config_map("default")
    assert caught.value.status == 429
    assert caught.value.headers["Retry-After"] == "0"
    assert json.loads(caught.value.body)["reason"] == "TooManyRequests"
    # urllib3 honours Retry-After: the client asked again before giving up
    assert injector.report()["injected"]["0:throttle"] > 1


def test_delay(server: RunningApiServer, injector: FaultInjector) -> None:
    injector.set_plan(_plan(FaultRule("delay", seconds=0.3, verbs=("list",))))
    injector.enabled = True
    started = time.monotonic()
    assert _request(server, "GET", CONFIGMAPS)[0] == 200
    assert time.monotonic() - started >= 0.3


@pytest.mark.parametrize(("stage", "applied"), [("before", False), ("after", True),
                                                ("mid-body", True)])
def test_drop_closes_the_connection(server: RunningApiServer, injector: FaultInjector,
                                    stage: str, applied: bool) -> None:
    injector.set_plan(_plan(FaultRule("drop", verbs=("create",), stage=stage)))
    injector.enabled = True
    # RemoteDisconnected (no answer) is a ConnectionError; a half body is IncompleteRead
    error = http.client.IncompleteRead if stage == "mid-body" else ConnectionError
    with pytest.raises(error):
        _request(server, "POST", CONFIGMAPS, _configmap("a"))
    injector.enabled = False
    assert _exists(server, "a") is applied
    # the server keeps serving other connections
    assert _request(server, "GET", CONFIGMAPS)[0] == 200


def _watch_lines(server: RunningApiServer, query: str, limit_s: float = 5
                 ) -> Iterator[dict[str, Any]]:
    """Events of a watch until the server ends the stream."""
    conn = _connect(server, timeout=limit_s)
    try:
        conn.request("GET", f"{CONFIGMAPS}?watch=1&{query}",
                     headers={"Authorization": f"Bearer {server.token}"})
        response = conn.getresponse()
        assert response.status == 200
        while line := response.readline():
            yield json.loads(line)
    finally:
        conn.close()


def _list_rv(server: RunningApiServer) -> str:
    return str(_request(server, "GET", CONFIGMAPS)[2]["metadata"]["resourceVersion"])


def test_watch_cut_after_events_then_resumed(server: RunningApiServer,
                                             injector: FaultInjector) -> None:
    start = _list_rv(server)
    for name in ("a", "b", "c"):
        assert _request(server, "POST", CONFIGMAPS, _configmap(name))[0] == 201
    injector.set_plan(_plan(FaultRule("cut-watch", after_events=2)))
    injector.enabled = True
    events = list(_watch_lines(server, f"resourceVersion={start}&timeoutSeconds=30"))
    assert [e["object"]["metadata"]["name"] for e in events] == ["a", "b"]
    last = events[-1]["object"]["metadata"]["resourceVersion"]
    injector.enabled = False
    resumed = _watch_lines(server, f"resourceVersion={last}&timeoutSeconds=30")
    assert next(resumed)["object"]["metadata"]["name"] == "c"
    resumed.close()


def test_watch_cut_after_seconds(server: RunningApiServer, injector: FaultInjector) -> None:
    injector.set_plan(_plan(FaultRule("cut-watch", after_seconds=0.3)))
    injector.enabled = True
    started = time.monotonic()
    events = list(_watch_lines(server, f"resourceVersion={_list_rv(server)}&timeoutSeconds=30"))
    assert events == []
    assert 0.25 <= time.monotonic() - started < 5


def test_compacted_history_gives_410(server: RunningApiServer,
                                     injector: FaultInjector) -> None:
    old = _list_rv(server)
    assert _request(server, "POST", CONFIGMAPS, _configmap("a"))[0] == 201
    injector.compact_watch_history()
    events = list(_watch_lines(server, f"resourceVersion={old}&timeoutSeconds=30"))
    assert len(events) == 1 and events[0]["type"] == "ERROR"
    assert (events[0]["object"]["code"], events[0]["object"]["reason"]) == (410, "Expired")
    # from the current version the watch goes on (the client relisted)
    current = _watch_lines(server, f"resourceVersion={_list_rv(server)}&timeoutSeconds=30")
    assert _request(server, "POST", CONFIGMAPS, _configmap("b"))[0] == 201
    assert next(current)["object"]["metadata"]["name"] == "b"
    current.close()


def test_without_faults_nothing_is_installed() -> None:
    with running_apiserver() as info:
        assert _request(info, "POST", CONFIGMAPS, _configmap("a"))[0] == 201


def test_engine_client_retries_through_faults_without_losing_writes(
        server: RunningApiServer, injector: FaultInjector) -> None:
    """KubeClient reports injected faults as typed errors (Conflict, Unavailable), so a
    caller's retry loop gets every write through exactly once, even when an answer is lost
    after the write was made."""
    injector.set_plan(_plan(
        FaultRule("conflict", verbs=("create",), share=0.15),
        FaultRule("throttle", verbs=("create",), share=0.15, retry_after=0),
        FaultRule("unavailable", verbs=("create",), share=0.15),
        FaultRule("drop", verbs=("create",), share=0.15, stage="after"),
        seed=11))
    injector.enabled = True
    kube = KubeClient.from_kubeconfig(server.kubeconfig)
    seen: set[type[Exception]] = set()
    try:
        for i in range(30):
            for _attempt in range(50):
                try:
                    kube.create(CONFIGMAPS_RES, _configmap(f"cm-{i}"), "default")
                    break
                except AlreadyExists:
                    break  # an earlier attempt was made but its answer was dropped
                except (Conflict, Unavailable) as exc:
                    seen.add(type(exc))
            else:
                pytest.fail(f"cm-{i} was never created")
    finally:
        kube.close()
    injector.enabled = False
    assert seen == {Conflict, Unavailable}
    items = _request(server, "GET", CONFIGMAPS)[2]["items"]
    assert sorted(item["metadata"]["name"] for item in items) == sorted(
        [*(f"cm-{i}" for i in range(30)), "kube-root-ca.crt"])
    assert set(injector.report()["injected"]) == {"0:conflict", "1:throttle", "2:unavailable",
                                                  "3:drop"}
