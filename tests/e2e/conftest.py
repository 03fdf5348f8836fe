"""The real kubectl against the embedded API server (one per session) or against `jobmachine up`
(one per test module), a namespace per test.

kubectl on these machines is a version dispatcher that caches its choice and
its discovery per server URL, so every run gets a fresh KUBECACHEDIR. Tests
skip only where no kubectl binary is installed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from engine.app.up import LocalCluster, UpOptions, running_local_cluster
from engine.cluster.apiserver.endpoints.kubeconfig import write_kubeconfig
from engine.cluster.apiserver.endpoints.serve import RunningApiServer, running_apiserver
from engine.cluster.node import RestartBackoff
from engine.settings import EngineSettings
from tests.e2e.manifests import GROUP, WIDGET_CRD

KUBECTL = shutil.which("kubectl")
DEFAULT_TIMEOUT = 60.0


@dataclass(frozen=True)
class Kubectl:
    """Runs kubectl with a kubeconfig whose context namespace is this test's namespace."""

    env: dict[str, str]
    namespace: str

    def run(
        self, *args: str, stdin: str | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> subprocess.CompletedProcess[str]:
        """kubectl's result, whatever its exit code."""
        assert KUBECTL is not None
        return subprocess.run(
            [KUBECTL, *args],
            input=stdin,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def __call__(
        self, *args: str, stdin: str | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> subprocess.CompletedProcess[str]:
        """kubectl's result; fails the test (with kubectl's stderr) on a non-zero exit."""
        result = self.run(*args, stdin=stdin, timeout=timeout)
        if result.returncode != 0:
            command = " ".join(args)
            pytest.fail(
                f"kubectl {command} exited {result.returncode}:\n{result.stderr}{result.stdout}"
            )
        return result

    def apply(self, manifest: str) -> str:
        return self("apply", "-f", "-", stdin=manifest).stdout

    def get_json(self, *args: str) -> dict[str, Any]:
        document: dict[str, Any] = json.loads(self("get", *args, "-o", "json").stdout)
        return document

    def popen(self, *args: str) -> subprocess.Popen[str]:
        """A long-running kubectl (a watch); the caller waits for it with a timeout."""
        assert KUBECTL is not None
        return subprocess.Popen(
            [KUBECTL, *args],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )


@pytest.fixture(scope="session")
def apiserver() -> Iterator[RunningApiServer]:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed on this machine")
    with running_apiserver(tls=True) as server:
        yield server


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kubecache")


def _kubectl_for(
    server: RunningApiServer, cache_dir: Path, directory: Path, namespace: str
) -> Kubectl:
    config = write_kubeconfig(
        directory / f"kubeconfig-{namespace}",
        server=server.url,
        token=server.token,
        ca_file=server.ca_file,
        namespace=namespace,
    )
    env = {key: value for key, value in os.environ.items() if not key.startswith(("KUBE", "HTTP"))}
    env.update(KUBECONFIG=str(config), KUBECACHEDIR=str(cache_dir), HOME=str(directory))
    return Kubectl(env, namespace)


def _namespaced(
    apiserver: RunningApiServer, cache_dir: Path, tmp_path: Path, prefix: str
) -> Kubectl:
    namespace = f"{prefix}-{uuid.uuid4().hex[:8]}"
    kubectl = _kubectl_for(apiserver, cache_dir, tmp_path, namespace)
    kubectl.apply(f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {namespace}\n")
    return kubectl


@pytest.fixture
def kubectl(apiserver: RunningApiServer, cache_dir: Path, tmp_path: Path) -> Kubectl:
    """kubectl in a fresh namespace of the session's server."""
    return _namespaced(apiserver, cache_dir, tmp_path, "e2e")


@pytest.fixture
def other_namespace(apiserver: RunningApiServer, cache_dir: Path, tmp_path: Path) -> Kubectl:
    return _namespaced(apiserver, cache_dir, tmp_path, "other")


@pytest.fixture(scope="session")
def widget_crd(
    apiserver: RunningApiServer, cache_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> str:
    """The Widget CRD, applied once and established before any test uses it."""
    kubectl = _kubectl_for(apiserver, cache_dir, tmp_path_factory.mktemp("crd"), "default")
    name = f"widgets.{GROUP}"
    kubectl.apply(WIDGET_CRD)
    kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=30s")
    return name


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    """`jobmachine up` in process mode (server, node and engine in this process), one per module;
    the node's crash-loop back-off is 1 s doubling to 2 s instead of the kubelet's 10 s to 5 min."""
    if KUBECTL is None:
        pytest.skip("kubectl is not installed on this machine")
    options = UpOptions(
        port=0, node_mode="process",
        settings=EngineSettings(replica_backoff_base_s=0.2, stand_in_for_built_ins=True),
        restart_backoff=RestartBackoff(initial_s=1.0, max_s=2.0),
    )
    with running_local_cluster(options) as running:
        yield running


@pytest.fixture
def cluster_kubectl(cluster: LocalCluster, tmp_path: Path) -> Iterator[Kubectl]:
    """kubectl in a fresh namespace of the module's `jobmachine up`, deleted afterwards."""
    namespace = f"jobs-{uuid.uuid4().hex[:8]}"
    runner = _kubectl_for(cluster.server, tmp_path / "cache", tmp_path, namespace)
    runner("create", "namespace", namespace)
    yield runner
    runner("delete", "namespace", namespace, "--timeout=60s", timeout=90)
