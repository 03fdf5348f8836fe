"""deploy/overlays/ as `kubectl kustomize` renders them: one engine, two with leader election,
or three sharing six shards; each with the base's RBAC, Service and a restricted pod."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.app.install_manifests import render_kustomization
from tests.e2e.conftest import KUBECTL
from tests.unit.test_deploy_manifests import (
    RBAC,
    ROOT,
    assert_restricted,
    one,
    run_options,
)

pytestmark = pytest.mark.e2e

OVERLAYS = ROOT / "deploy" / "overlays"


def rendered(overlay: str, cache: Path) -> list[dict[str, Any]]:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed on this machine")
    result = subprocess.run(
        [KUBECTL, "kustomize", str(OVERLAYS / overlay)], capture_output=True, text=True,
        timeout=60, check=False, env={**os.environ, "KUBECACHEDIR": str(cache)},
    )
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


@pytest.mark.parametrize(("overlay", "replicas"), [("single", 1), ("ha", 2), ("sharded", 3)])
def test_every_overlay_renders_the_whole_install(overlay: str, replicas: int,
                                                 tmp_path: Path) -> None:
    docs = rendered(overlay, tmp_path)

    kinds = sorted(d["kind"] for d in docs)
    expected = sorted([d["kind"] for d in RBAC] + ["Namespace", "Deployment", "Service"]
                      + (["PodDisruptionBudget"] if replicas > 1 else []))
    assert kinds == expected
    deployment = one(docs, "Deployment")
    assert deployment["spec"]["replicas"] == replicas
    assert_restricted(deployment["spec"]["template"]["spec"])
    if replicas > 1:
        budget = one(docs, "PodDisruptionBudget")["spec"]
        assert budget["maxUnavailable"] == 1
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert budget["selector"]["matchLabels"].items() <= labels.items()


def test_single_runs_one_engine_without_leader_election(tmp_path: Path) -> None:
    engine = one(rendered("single", tmp_path), "Deployment")["spec"]["template"]["spec"]
    params = run_options(engine["containers"][0]["args"])

    assert (params["leader_elect"], params["shards"]) == (False, None)


def test_ha_elects_a_leader_in_the_engines_namespace(tmp_path: Path) -> None:
    docs = rendered("ha", tmp_path)
    engine = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    params = run_options(engine["args"])

    assert (params["leader_elect"], params["shards"]) == (True, None)
    assert params["lease_namespace"] == one(docs, "Role")["metadata"]["namespace"]


def test_sharded_shares_at_least_one_shard_per_replica(tmp_path: Path) -> None:
    docs = rendered("sharded", tmp_path)
    deployment = one(docs, "Deployment")
    params = run_options(deployment["spec"]["template"]["spec"]["containers"][0]["args"])

    assert params["leader_elect"] is False
    assert params["shards"] >= deployment["spec"]["replicas"] > 1
    assert params["lease_namespace"] == one(docs, "Role")["metadata"]["namespace"]


@pytest.mark.parametrize("overlay", ["single", "ha", "sharded"])
def test_jobmachine_manifests_renders_what_kubectl_kustomize_renders(overlay: str,
                                                                      tmp_path: Path) -> None:
    def key(doc: dict[str, Any]) -> tuple[str, str]:
        return doc["kind"], doc["metadata"]["name"]

    ours = render_kustomization(OVERLAYS / overlay)

    assert sorted(ours, key=key) == sorted(rendered(overlay, tmp_path), key=key)
