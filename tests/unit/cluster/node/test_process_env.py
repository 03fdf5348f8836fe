"""A process-mode container's environment: the node's without its KUBECONFIG, the
`kubernetes` Service's variables as the kubelet sets them, an empty kubeconfig, and the
container's own variables over all of it."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from engine.cluster.node.config.volumes import Mount
from engine.cluster.node.runtime.mounts import Bind
from engine.cluster.node.runtime.process import _spare
from engine.cluster.node.runtime.process_env import (
    ApiAddress,
    api_address,
    kubernetes_service_env,
    process_environment,
)

API = ApiAddress("127.0.0.1", 6443)


def test_the_address_is_the_one_the_node_reaches_the_server_at() -> None:
    assert api_address("https://127.0.0.1:40123") == ApiAddress("127.0.0.1", 40123)
    assert api_address("https://localhost") == ApiAddress("localhost", 443)
    assert api_address("http://[::1]:8080/") == ApiAddress("::1", 8080)


def test_the_kubernetes_service_variables_are_the_kubelets() -> None:
    assert kubernetes_service_env(API) == {
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": "6443",
        "KUBERNETES_SERVICE_PORT_HTTPS": "6443",
        "KUBERNETES_PORT": "tcp://127.0.0.1:6443",
        "KUBERNETES_PORT_6443_TCP": "tcp://127.0.0.1:6443",
        "KUBERNETES_PORT_6443_TCP_PROTO": "tcp",
        "KUBERNETES_PORT_6443_TCP_PORT": "6443",
        "KUBERNETES_PORT_6443_TCP_ADDR": "127.0.0.1",
    }
    assert kubernetes_service_env(ApiAddress("::1", 443))["KUBERNETES_PORT"] == "tcp://[::1]:443"


def test_the_node_environment_is_inherited_without_its_kubeconfig() -> None:
    node = {"PATH": "/venv/bin:/usr/bin", "HOME": "/home/me", "KUBECONFIG": "/home/me/admin",
            "KUBERNETES_SERVICE_HOST": "10.0.0.1"}
    env = process_environment(node, {}, hostname="w-0", api=API)
    assert env["PATH"] == "/venv/bin:/usr/bin" and env["HOME"] == "/home/me"
    assert env["KUBECONFIG"] == "/dev/null"
    assert env["HOSTNAME"] == "w-0"
    assert env["KUBERNETES_SERVICE_HOST"] == "127.0.0.1"


def test_the_containers_variables_win() -> None:
    mine = {"KUBECONFIG": "/etc/kube/config", "KUBERNETES_SERVICE_PORT": "1", "HOSTNAME": "h"}
    env = process_environment({"KUBECONFIG": "/admin"}, mine, hostname="w-0", api=API)
    assert (env["KUBECONFIG"], env["KUBERNETES_SERVICE_PORT"], env["HOSTNAME"]) == (
        "/etc/kube/config", "1", "h")
    assert env["KUBERNETES_SERVICE_HOST"] == "127.0.0.1"


def test_without_an_address_there_are_no_service_variables() -> None:
    env = process_environment({}, {}, hostname="w-0", api=None)
    assert env == {"HOSTNAME": "w-0", "KUBECONFIG": "/dev/null"}


def test_only_the_admitted_service_account_mount_may_be_left_out() -> None:
    """Where the machine cannot mount it, a container runs without the kube-api-access volume
    (as without its termination message file) instead of waiting for ever."""
    account = PurePosixPath("/var/run/secrets/kubernetes.io/serviceaccount")
    mounts = [Mount("kube-api-access-x1z2q", account, "", True),
              Mount("mine", account, "", True),
              Mount("kube-api-access-x1z2q", PurePosixPath("/elsewhere"), "", True)]
    binds = [Bind(Path(f"/state/{index}"), mount.path, True) for index, mount in enumerate(mounts)]
    assert _spare(mounts, binds) == binds[:1]
