"""GET /metrics counts requests by client (User-Agent), verb, resource and code, as benchmarks
read it (events apart from the control path)."""

from __future__ import annotations

import re
import urllib.error
import urllib.request

import pytest
from kubernetes import client

from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from tests.integration.apiserver.conftest import pod

Key = tuple[str, str, str, str, str]


def _metrics(server: RunningApiServer) -> dict[Key, int]:
    request = urllib.request.Request(
        server.url + "/metrics", headers={"Authorization": f"Bearer {server.token}"}
    )
    with urllib.request.urlopen(request) as response:
        text = response.read().decode()
    pattern = (r'apiserver_request_total\{client="([^"]*)",verb="([^"]*)",resource="([^"]*)",'
               r'subresource="([^"]*)",code="(\d+)"\} (\d+)')
    return {(c, v, r, s, code): int(n) for c, v, r, s, code, n in re.findall(pattern, text)}


def test_requests_are_counted_by_client_verb_resource_and_code(
    server: RunningApiServer, core: client.CoreV1Api
) -> None:
    core.api_client.user_agent = "bench-client/1.0"
    core.create_namespaced_pod("default", pod("a"))
    core.read_namespaced_pod("a", "default")
    core.patch_namespaced_pod_status("a", "default", {"status": {"phase": "Running"}})
    with pytest.raises(client.ApiException):
        core.read_namespaced_pod("missing", "default")
    core.read_namespace_status("default")
    core.list_namespaced_event("default")

    counts = _metrics(server)

    assert counts[("bench-client", "create", "pods", "", "201")] == 1
    assert counts[("bench-client", "get", "pods", "", "200")] == 1
    assert counts[("bench-client", "patch", "pods", "status", "200")] == 1
    assert counts[("bench-client", "get", "pods", "", "404")] == 1
    assert counts[("bench-client", "get", "namespaces", "status", "200")] == 1
    assert counts[("bench-client", "get", "events", "", "200")] == 1


def test_metrics_need_the_token(server: RunningApiServer) -> None:
    request = urllib.request.Request(server.url + "/metrics")
    with pytest.raises(urllib.error.HTTPError) as failure:
        urllib.request.urlopen(request)
    assert failure.value.code == 401
