"""`jobmachine run --machines DIR` as the engine's service account, with deploy/'s RBAC: the
engine reads StateMachine objects and never writes them, so the command stops with one
line saying what to do instead (not a traceback); and `--help` says what `--machines`
really does."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from engine.cluster import running_apiserver
from engine.controller.machines.install import crd_resources, install_crds, wait_until_served
from engine.kube.client import KubeClient
from engine.kube.resources import (
    NAMESPACES,
    ROLE_BINDINGS,
    ROLES,
    SERVICE_ACCOUNTS,
    Resource,
)
from tests.kinds import CRDS, MACHINES, REPO

RBAC = "rbac.authorization.k8s.io"
RESOURCES = {
    "Namespace": NAMESPACES, "ServiceAccount": SERVICE_ACCOUNTS, "Role": ROLES,
    "RoleBinding": ROLE_BINDINGS,
    "ClusterRole": Resource(RBAC, "v1", "clusterroles", "ClusterRole", namespaced=False),
    "ClusterRoleBinding": Resource(RBAC, "v1", "clusterrolebindings", "ClusterRoleBinding",
                                   namespaced=False),
}


def _apply_deploy_rbac(admin: KubeClient) -> None:
    for name in ("namespace.yaml", "rbac.yaml"):
        for document in yaml.safe_load_all((REPO / "deploy" / "base" / name).read_text()):
            resource = RESOURCES[document["kind"]]
            admin.create(resource, document, document["metadata"].get("namespace"))


def _engine_kubeconfig(admin: KubeClient, kubeconfig: Path, into: Path) -> Path:
    """The server's kubeconfig, with the engine's service-account token as its user."""
    answer = admin.create_subresource(
        SERVICE_ACCOUNTS, "jobmachine", "token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
         "spec": {"expirationSeconds": 3600}}, "jobmachine-system")
    config: dict[str, Any] = yaml.safe_load(kubeconfig.read_text())
    for user in config["users"]:
        user["user"] = {"token": answer["status"]["token"]}
    into.write_text(yaml.safe_dump(config))
    return into


def test_run_machines_as_the_engine_account_refuses_in_one_line(tmp_path: Path) -> None:
    with running_apiserver(tls=True) as server:
        admin = KubeClient.from_kubeconfig(server.kubeconfig)
        try:
            install_crds(admin, CRDS)
            wait_until_served(admin, crd_resources(CRDS))
            _apply_deploy_rbac(admin)
            kubeconfig = _engine_kubeconfig(admin, server.kubeconfig, tmp_path / "engine.conf")
        finally:
            admin.close()
        done = subprocess.run(
            [sys.executable, "-m", "engine.cli", "run", "--kubeconfig", str(kubeconfig),
             "--machines", str(MACHINES)],
            check=False, capture_output=True, text=True, timeout=120, env=os.environ.copy())
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: the API server refused the StateMachine objects of "
                           f"{MACHINES}: statemachines.jobmachine.dev is forbidden: User "
                           f'"system:serviceaccount:jobmachine-system:jobmachine" cannot '
                           f'create resource "statemachines"'), done.stderr
    assert f"apply them as someone who may (kubectl apply -f {MACHINES})" in last


def test_run_help_says_machines_are_applied_only_when_given() -> None:
    done = subprocess.run([sys.executable, "-m", "engine.cli", "run", "--help"],
                          check=False, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"})
    text = " ".join(re.sub(r"[│╭╮╰╯─]", " ", done.stdout).split())
    assert "(default: shipped)" not in text
    assert "--machines" in text
    assert ("Apply this folder's machine definitions as StateMachine objects "
            "first, with these credentials (default: none; the engine runs the StateMachine "
            "objects the cluster has).") in text
