"""`jobmachine manifests install` against a server: it asks /version first and refuses a
release older than 1.28, or a cluster that does not serve a kind of the install, in one line
with nothing written; otherwise it writes the CRDs, the engine and the shipped machines, and
a second run replaces them.

The too-old server is a stub that answers /version and records every other request. The
cluster without Deployments is the embedded API server behind a stub that hides apps/v1
Deployment from discovery. The embedded server serves no PodDisruptionBudgets and is no place
for the engine's pods, so the install that succeeds is everything else the command would
write, applied by the function the command calls.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.client import HTTPConnection
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from engine.app.cluster_install import install_into_cluster
from engine.app.install_manifests import install_objects
from engine.cluster import running_apiserver
from engine.cluster.apiserver.endpoints.kubeconfig import write_kubeconfig
from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from engine.kube.client import KubeClient
from engine.kube.resources import NAMESPACES, STATE_MACHINES, Resource

REPO = Path(__file__).resolve().parents[3]
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions",
                "CustomResourceDefinition", namespaced=False)
SHIPPED_MACHINES = sorted(
    doc["metadata"]["name"] for path in (REPO / "machines").glob("*.yaml")
    for doc in yaml.safe_load_all(path.read_text()) if doc and doc["kind"] == "StateMachine")


def install(kubeconfig: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it, in its own process (exit code, stdout, stderr)."""
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", "manifests", "install", "--kubeconfig",
         str(kubeconfig), *flags],
        capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def server() -> Iterator[RunningApiServer]:
    with running_apiserver() as running:
        yield running


@pytest.fixture
def client(server: RunningApiServer) -> Iterator[KubeClient]:
    kube = KubeClient.from_kubeconfig(server.kubeconfig)
    try:
        yield kube
    finally:
        kube.close()


class _OldServer(BaseHTTPRequestHandler):
    """Kubernetes 1.27 as /version tells it; anything else is recorded and refused."""

    requests: list[tuple[str, str]]

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def do_PUT(self) -> None:
        self._answer()

    def do_PATCH(self) -> None:
        self._answer()

    def do_DELETE(self) -> None:
        self._answer()

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.requests.append((self.command, self.path))
        if self.command == "GET" and self.path == "/version":
            status, body = 200, {"major": "1", "minor": "27", "gitVersion": "v1.27.16"}
        else:
            status, body = 404, {"kind": "Status", "status": "Failure", "code": 404}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test reads `requests`."""


@pytest.fixture
def old_server(tmp_path: Path) -> Iterator[tuple[Path, list[tuple[str, str]]]]:
    """A kubeconfig for a server that says it is Kubernetes 1.27, and its requests."""
    handler = type("Handler", (_OldServer,), {"requests": []})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "old",
        "clusters": [{"name": "old", "cluster": {"server": f"http://127.0.0.1:{httpd.server_port}"}}],
        "users": [{"name": "admin", "user": {"token": "t0ken"}}],
        "contexts": [{"name": "old", "context": {"cluster": "old", "user": "admin"}}],
    }))
    try:
        yield kubeconfig, handler.requests
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


class _NoDeployments(BaseHTTPRequestHandler):
    """Forwards every request to the embedded server at `upstream`, but leaves Deployment
    (and its subresources) out of the APIResourceList of /apis/apps/v1, the discovery the
    install reads to find the resource of each kind."""

    upstream: tuple[str, int]

    def do_GET(self) -> None:
        self._forward()

    def do_POST(self) -> None:
        self._forward()

    def do_PUT(self) -> None:
        self._forward()

    def do_PATCH(self) -> None:
        self._forward()

    def do_DELETE(self) -> None:
        self._forward()

    def _forward(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {name: value for name, value in self.headers.items()
                   if name.lower() not in {"host", "connection", "accept-encoding"}}
        connection = HTTPConnection(*self.upstream, timeout=60)
        try:
            connection.request(self.command, self.path, body=body or None, headers=headers)
            response = connection.getresponse()
            status, content_type, data = (
                response.status, response.getheader("Content-Type", ""), response.read())
        finally:
            connection.close()
        if self.command == "GET" and self.path.split("?")[0] == "/apis/apps/v1" and status == 200:
            listing = json.loads(data)
            listing["resources"] = [r for r in listing["resources"]
                                    if r["name"].split("/")[0] != "deployments"]
            data = json.dumps(listing).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def no_deployments(server: RunningApiServer, tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A kubeconfig for the embedded server as seen through `_NoDeployments`, and its URL."""
    upstream = urlsplit(server.url)
    handler = type("Handler", (_NoDeployments,), {
        "upstream": (upstream.hostname, upstream.port)})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{httpd.server_port}"
    try:
        yield write_kubeconfig(tmp_path / "kubeconfig", server=url, token=server.token), url
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def test_kubernetes_1_27_is_refused_in_one_line_before_anything_is_written(
    old_server: tuple[Path, list[tuple[str, str]]],
) -> None:
    kubeconfig, requests = old_server

    result = install(kubeconfig)

    assert result.returncode == 1
    assert result.stderr == ("error: Kubernetes 1.27 is too old: jobmachine needs 1.28+ "
                             "(reason and fieldPath in CRD validation rules)\n")
    assert result.stdout == ""
    assert requests == [("GET", "/version")]


def test_a_cluster_that_serves_no_deployments_is_refused_with_nothing_written(
    no_deployments: tuple[Path, str], client: KubeClient,
) -> None:
    kubeconfig, url = no_deployments

    result = install(kubeconfig, "--overlay", "single")

    assert result.returncode == 1
    assert result.stderr == (f"error: the API server at {url} does not "
                             "serve apps/v1 Deployment: nothing was installed\n")
    assert client.list(CRDS)[0] == []
    assert "jobmachine-system" not in {ns["metadata"]["name"] for ns in client.list(NAMESPACES)[0]}


def test_the_install_writes_crds_rbac_and_machines_and_a_second_run_replaces_them(
    server: RunningApiServer, client: KubeClient,
) -> None:
    objects = [obj for obj in install_objects(
        REPO / "deploy", sorted((REPO / "crds").glob("*.yaml")), overlay="ha",
        service_monitor=False, machines=sorted((REPO / "machines").glob("*.yaml")))
        if obj["kind"] not in {"Deployment", "PodDisruptionBudget"}]
    runs: list[list[str]] = []
    notes: list[str] = []
    for _ in range(2):
        runs.append([])
        install_into_cluster(server.kubeconfig, objects, say=runs[-1].append, note=notes.append)

    first, second = runs
    assert notes == []
    assert len(first) == len(objects) and all(line.endswith(" created") for line in first)
    assert first[0].startswith("customresourcedefinition/")
    assert sorted(line.split()[0] for line in first[-len(SHIPPED_MACHINES):]) == [
        f"statemachine/{name}" for name in SHIPPED_MACHINES]
    assert "clusterrole/jobmachine created" in first
    assert second == [line.replace(" created", " configured") for line in first]
    assert sorted(m["metadata"]["name"] for m in client.list(STATE_MACHINES)[0]) == (
        SHIPPED_MACHINES)
    crds = {crd["metadata"]["name"] for crd in client.list(CRDS)[0]}
    assert "statemachines.jobmachine.dev" in crds and "pytorchjobs.kubeflow.org" in crds
