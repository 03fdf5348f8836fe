"""GET /metrics counts requests by client (User-Agent), verb and code, as benchmarks read it."""

from __future__ import annotations

import re
import urllib.error
import urllib.request

import pytest
from kubernetes import client

from engine.cluster.apiserver.serve import RunningApiServer
from tests.integration.apiserver.conftest import pod


def _metrics(server: RunningApiServer) -> dict[tuple[str, str, str], int]:
    request = urllib.request.Request(
        server.url + "/metrics", headers={"Authorization": f"Bearer {server.token}"}
    )
    with urllib.request.urlopen(request) as response:
        text = response.read().decode()
    pattern = r'apiserver_request_total\{client="([^"]*)",verb="([^"]*)",code="(\d+)"\} (\d+)'
    return {(c, v, code): int(n) for c, v, code, n in re.findall(pattern, text)}


def test_requests_are_counted_by_client_verb_and_code(
    server: RunningApiServer, core: client.CoreV1Api
) -> None:
    core.api_client.user_agent = "bench-client/1.0"
    core.create_namespaced_pod("default", pod("a"))
    core.read_namespaced_pod("a", "default")
    with pytest.raises(client.ApiException):
        core.read_namespaced_pod("missing", "default")

    counts = _metrics(server)

    assert counts[("bench-client", "create", "201")] == 1
    assert counts[("bench-client", "get", "200")] == 1
    assert counts[("bench-client", "get", "404")] == 1


def test_metrics_need_the_token(server: RunningApiServer) -> None:
    request = urllib.request.Request(server.url + "/metrics")
    with pytest.raises(urllib.error.HTTPError) as failure:
        urllib.request.urlopen(request)
    assert failure.value.code == 401
