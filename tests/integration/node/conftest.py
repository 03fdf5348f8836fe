"""Fixtures for the local node's integration tests: a TLS API server, the official client, a node.

Every test gets a fresh in-memory server (TLS, as `jobmachine up` serves it),
the official `kubernetes` client configured from its kubeconfig, and a node
whose state lives in the test's temporary directory, restarting containers with
the kubelet's rules on shorter delays (FAST_BACKOFF); all are stopped at the
end of the test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config, watch

from engine.cluster import running_apiserver
from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from engine.cluster.node import LocalNode, RestartBackoff, running_node
from engine.cluster.node.node import Mode
from tests.polling import eventually

NS = "default"
# The kubelet's back-off rules on a 0.5 s window doubling up to 2 s.
FAST_BACKOFF = RestartBackoff(initial_s=0.5, max_s=2.0)


def pod(name: str, *containers: dict[str, Any], annotations: dict[str, str] | None = None,
        restart_policy: str = "Never", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {
            "restartPolicy": restart_policy,
            "containers": list(containers) or [{"name": "main", "image": "busybox"}],
            **spec,
        },
    }


def story(versions: list[dict[str, Any]], container: str = "main"
          ) -> list[tuple[str, str, int]]:
    """(phase, container state, restartCount) through a pod's versions, repeats dropped; the
    state reads as kubectl's STATUS column would (running, CrashLoopBackOff, Completed...)."""
    told: list[tuple[str, str, int]] = []
    for version in versions:
        status = version.get("status") or {}
        found = [c for c in status.get("containerStatuses") or () if c["name"] == container]
        if not found:
            continue
        state = found[0]["state"]
        kind = next(iter(state))
        line = (status["phase"], (state[kind] or {}).get("reason") or kind,
                found[0]["restartCount"])
        if not told or told[-1] != line:
            told.append(line)
    return told


class Cluster:
    """The server, the client and the node of one test, with the reads the tests share."""

    def __init__(self, server: RunningApiServer, core: client.CoreV1Api, api: client.ApiClient,
                 node: LocalNode, state_dir: Path) -> None:
        self.server = server
        self.core = core
        self.api = api
        self.node = node
        self.state_dir = state_dir

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        created = self.core.create_namespaced_pod(NS, body)
        result: dict[str, Any] = self.api.sanitize_for_serialization(created)
        return result

    def read(self, name: str) -> dict[str, Any] | None:
        try:
            found = self.core.read_namespaced_pod(name, NS)
        except client.ApiException as exc:
            if exc.status == 404:
                return None
            raise
        result: dict[str, Any] = self.api.sanitize_for_serialization(found)
        return result

    def wait_phase(self, name: str, *phases: str, timeout: float = 20.0) -> dict[str, Any]:
        def reached() -> dict[str, Any] | None:
            found = self.read(name)
            return found if found and found.get("status", {}).get("phase") in phases else None

        result: dict[str, Any] = eventually(reached, timeout=timeout)
        return result

    def container(self, name: str, container: str = "main", *, init: bool = False
                  ) -> dict[str, Any]:
        found = self.read(name) or {}
        key = "initContainerStatuses" if init else "containerStatuses"
        statuses = found.get("status", {}).get(key) or []
        return next((s for s in statuses if s["name"] == container), {})

    def log(self, name: str, container: str = "main", *, previous: bool = False) -> str:
        text: str = self.core.read_namespaced_pod_log(name, NS, container=container,
                                                      previous=previous)
        return text

    def started_log(self, name: str, container: str = "main") -> str:
        """The log, or "" while the container has not started yet."""
        try:
            return self.log(name, container)
        except client.ApiException as exc:
            if exc.status == 400:
                return ""
            raise

    def history(self, name: str, since: str, until: Callable[[dict[str, Any]], bool],
                timeout: int = 30) -> list[dict[str, Any]]:
        """Every version of the pod written after resourceVersion `since`, up to the first
        one for which `until` holds."""
        seen: list[dict[str, Any]] = []
        stream = watch.Watch()
        for event in stream.stream(self.core.list_namespaced_pod, NS, resource_version=since,
                                   field_selector=f"metadata.name={name}",
                                   timeout_seconds=timeout):
            seen.append(self.api.sanitize_for_serialization(event["object"]))
            if until(seen[-1]):
                stream.stop()
                return seen
        raise AssertionError(f"pod {name} did not get there within {timeout}s: {seen[-1:]}")

    def events(self, name: str) -> list[Any]:
        listed = self.core.list_namespaced_event(
            NS, field_selector=f"involvedObject.name={name}")
        return list(listed.items)


@pytest.fixture
def server() -> Iterator[RunningApiServer]:
    with running_apiserver(tls=True) as running:
        yield running


@pytest.fixture
def api(server: RunningApiServer) -> Iterator[client.ApiClient]:
    api_client = config.new_client_from_config(config_file=str(server.kubeconfig))
    try:
        yield api_client
    finally:
        api_client.close()


def _cluster(server: RunningApiServer, api: client.ApiClient, tmp_path: Path, mode: Mode
             ) -> Iterator[Cluster]:
    state_dir = tmp_path / "node"
    with running_node(server, mode=mode, state_dir=state_dir,
                      restart_backoff=FAST_BACKOFF) as node:
        yield Cluster(server, client.CoreV1Api(api), api, node, state_dir)


@pytest.fixture
def simulated(server: RunningApiServer, api: client.ApiClient, tmp_path: Path
              ) -> Iterator[Cluster]:
    yield from _cluster(server, api, tmp_path, "simulate")


@pytest.fixture
def processes(server: RunningApiServer, api: client.ApiClient, tmp_path: Path
              ) -> Iterator[Cluster]:
    yield from _cluster(server, api, tmp_path, "process")
