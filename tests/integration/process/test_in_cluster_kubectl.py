"""Process mode: a pod runs the real `kubectl` against the cluster with its own service
account, as a pod of a real cluster does, and Kubeflow's kubectl-delivery image works.

kubectl in the pod finds the in-cluster config: the `kubernetes` Service variables the node
sets, and the token, ca.crt and namespace of a projected kube-api-access volume at
/var/run/secrets/kubernetes.io/serviceaccount (written here explicitly, as the API server's
ServiceAccount admission will). The node's own KUBECONFIG and the user's ~/.kube/config are
out of its reach (KUBECONFIG=/dev/null). The kubectl-delivery init container links kubectl
into a shared emptyDir and waits until the hostfile's pods run.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from engine.cluster import running_apiserver
from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from engine.cluster.node import RestartBackoff, running_node
from tests.polling import eventually

NS = "default"
ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")


class World:
    def __init__(self, server: RunningApiServer, api: client.ApiClient) -> None:
        self.server = server
        self.api = api
        self.core = client.CoreV1Api(api)
        self.rbac = client.RbacAuthorizationV1Api(api)

    def phase(self, name: str, *phases: str, timeout: float = 60.0) -> str:
        def reached() -> str | None:
            found = self.core.read_namespaced_pod(name, NS).status.phase
            return found if found in phases else None

        result: str = eventually(reached, timeout=timeout)
        return result

    def log(self, name: str, container: str = "main") -> str:
        text: str = self.core.read_namespaced_pod_log(name, NS, container=container)
        return text

    def root_ca(self) -> None:
        """The kube-root-ca.crt ConfigMap (unless the server publishes it already)."""
        body = {"metadata": {"name": "kube-root-ca.crt"},
                "data": {"ca.crt": Path(str(self.server.ca_file)).read_text()}}
        try:
            self.core.create_namespaced_config_map(NS, body)
        except client.ApiException as exc:
            if exc.status != 409:
                raise

    def account(self, name: str, rules: list[dict[str, Any]]) -> None:
        """A ServiceAccount and a Role with `rules` bound to it."""
        self.core.create_namespaced_service_account(NS, {"metadata": {"name": name}})
        self.rbac.create_namespaced_role(NS, {"metadata": {"name": name}, "rules": rules})
        self.rbac.create_namespaced_role_binding(NS, {
            "metadata": {"name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": NS}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        })


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    with running_apiserver(tls=True) as server:
        api = config.new_client_from_config(config_file=str(server.kubeconfig))
        try:
            with running_node(server, mode="process", state_dir=tmp_path / "node",
                              restart_backoff=RestartBackoff(initial_s=0.5, max_s=2.0)):
                yield World(server, api)
        finally:
            api.close()


def api_access_volume() -> dict[str, Any]:
    """What ServiceAccount admission adds to every pod."""
    return {"name": "kube-api-access-test", "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ]}}


API_ACCESS_MOUNT = {"name": "kube-api-access-test", "mountPath": ACCOUNT_DIR, "readOnly": True}


def shell(name: str, script: str, tmp_path: Path, **fields: Any) -> dict[str, Any]:
    env = [{"name": "KUBECACHEDIR", "value": str(tmp_path / f"kube-cache-{name}")},
           *fields.pop("env", [])]
    return {"name": name, "image": "bitnami/kubectl", "command": ["sh", "-c", script],
            "env": env, "volumeMounts": [API_ACCESS_MOUNT, *fields.pop("volumeMounts", [])],
            **fields}


def pod(name: str, account: str, containers: list[dict[str, Any]], *,
        volumes: list[dict[str, Any]] = (), **spec: Any) -> dict[str, Any]:  # type: ignore[assignment]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"restartPolicy": "Never", "serviceAccountName": account,
                     "containers": containers, "volumes": [api_access_volume(), *volumes],
                     **spec}}


WHO = f"""
set -x
echo "KUBECONFIG=$KUBECONFIG host=$KUBERNETES_SERVICE_HOST port=$KUBERNETES_SERVICE_PORT"
ls {ACCOUNT_DIR}
kubectl get pod "$HOSTNAME" -o name || exit 11
kubectl auth can-i get pods || exit 12
echo "whoami: $(kubectl auth whoami -o jsonpath='{{.status.userInfo.username}}')"
if kubectl delete pod "$HOSTNAME" --dry-run=server 2>err.txt; then exit 13; fi
cat err.txt
grep -q forbidden err.txt || exit 14
kubectl get pods -n kube-system 2>&1 | grep -q forbidden || exit 15
"""


def leaky_node_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The node's KUBECONFIG and the user's ~/.kube/config both name another cluster."""
    elsewhere = ("apiVersion: v1\nkind: Config\ncurrent-context: elsewhere\nclusters:\n"
                 "- name: elsewhere\n  cluster: {server: 'https://127.0.0.1:9'}\ncontexts:\n"
                 "- name: elsewhere\n  context: {cluster: elsewhere, user: someone}\n"
                 "users:\n- name: someone\n  user: {token: not-the-pods}\n")
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    (home / ".kube" / "config").write_text(elsewhere)
    (tmp_path / "node-kubeconfig").write_text(elsewhere)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "node-kubeconfig"))


def test_a_pod_runs_kubectl_with_its_own_service_account(
        world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    leaky_node_environment(monkeypatch, tmp_path)
    world.root_ca()
    world.account("reader", [{"apiGroups": [""], "resources": ["pods"],
                              "verbs": ["get", "list"]}])
    world.core.create_namespaced_pod(NS, pod("who", "reader", [shell("main", WHO, tmp_path)]))

    phase = world.phase("who", "Succeeded", "Failed")

    log = world.log("who")
    assert phase == "Succeeded", log
    assert "pod/who" in log
    assert "whoami: system:serviceaccount:default:reader" in log
    assert "KUBECONFIG=/dev/null" in log
    assert 'User "system:serviceaccount:default:reader" cannot delete resource "pods"' in log


def test_a_pod_without_the_volume_is_refused_by_kubectl(
        world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No token file: kubectl has no in-cluster config, and neither the node's kubeconfig nor
    the user's to fall back to."""
    leaky_node_environment(monkeypatch, tmp_path)
    (tmp_path / "node-kubeconfig").write_bytes((tmp_path / "node-kubeconfig").read_bytes()
                                              .replace(b"127.0.0.1:9", b"127.0.0.1:7"))
    script = 'kubectl get pods 2>&1; exit 0'
    body = pod("lost", "default", [{**shell("main", script, tmp_path), "volumeMounts": []}])
    body["spec"].update(volumes=[], automountServiceAccountToken=False)
    world.core.create_namespaced_pod(NS, body)

    assert world.phase("lost", "Succeeded", "Failed") == "Succeeded"
    log = world.log("lost")
    assert "pod/" not in log and "No resources found" not in log, log
    assert "127.0.0.1:9" not in log and "127.0.0.1:7" not in log, log
    assert "localhost:8080 was refused" in log, log


SLEEPER = [sys.executable, "-c", "import time; time.sleep(600)"]


def test_kubectl_delivery_waits_for_the_hostfile_pods_and_delivers_kubectl(
        world: World, tmp_path: Path) -> None:
    world.root_ca()
    world.account("launcher", [{"apiGroups": [""], "resources": ["pods"],
                                "verbs": ["get", "list", "watch"]}])
    world.core.create_namespaced_config_map(NS, {
        "metadata": {"name": "ring-config"},
        "data": {"hostfile": "ring-worker-0 slots=2\nring-worker-1 slots=2\n"}})
    delivery = {
        "name": "kubectl-delivery", "image": "docker.io/mpioperator/kubectl-delivery:v0.3.0",
        "env": [{"name": "TARGET_DIR", "value": "/opt/kube"}, {"name": "NAMESPACE", "value": NS}],
        "volumeMounts": [API_ACCESS_MOUNT, {"name": "kubectl", "mountPath": "/opt/kube"},
                         {"name": "config", "mountPath": "/etc/mpi"}]}
    main = shell("main", '/opt/kube/kubectl get pod ring-worker-1 -o name', tmp_path,
                 volumeMounts=[{"name": "kubectl", "mountPath": "/opt/kube"}])
    world.core.create_namespaced_pod(NS, pod(
        "ring-launcher", "launcher", [main], initContainers=[delivery],
        volumes=[{"name": "kubectl", "emptyDir": {}},
                 {"name": "config", "configMap": {"name": "ring-config"}}]))

    def delivery_log() -> str:
        try:
            return world.log("ring-launcher", "kubectl-delivery")
        except client.ApiException:
            return ""

    eventually(lambda: "waiting for pod ring-worker-1" in delivery_log() or None, timeout=30)
    assert world.core.read_namespaced_pod("ring-launcher", NS).status.phase == "Pending"
    for index in range(2):
        world.core.create_namespaced_pod(NS, {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"ring-worker-{index}"},
            "spec": {"restartPolicy": "Never",
                     "containers": [{"name": "main", "image": "x", "command": SLEEPER}]}})

    phase = world.phase("ring-launcher", "Succeeded", "Failed")

    assert phase == "Succeeded", delivery_log() + world.log("ring-launcher")
    assert "pod/ring-worker-1" in world.log("ring-launcher")
    assert "every pod of the hostfile is Running" in delivery_log()
