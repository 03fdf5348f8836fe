"""`jobmachine manifests install`: deploy/'s kustomizations rendered, the CRDs first, and what
it cannot render refused by name (its match with `kubectl kustomize` is an e2e test)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from engine.app.install_manifests import ManifestError, install_objects, render_kustomization
from engine.cli import app

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"
CRDS = sorted((ROOT / "crds").glob("*.yaml"))


def test_the_install_puts_the_crds_then_the_namespace_first() -> None:
    objects = install_objects(DEPLOY, CRDS, overlay="ha", service_monitor=False)
    kinds = [obj["kind"] for obj in objects]

    assert kinds[:len(CRDS)] == ["CustomResourceDefinition"] * len(CRDS)
    assert kinds[len(CRDS)] == "Namespace"
    assert "ServiceMonitor" not in kinds
    (deployment,) = [obj for obj in objects if obj["kind"] == "Deployment"]
    assert deployment["spec"]["replicas"] == 2
    assert "--leader-elect" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]


def test_the_service_monitor_scrapes_the_metrics_service() -> None:
    objects = install_objects(DEPLOY, [], overlay="single", service_monitor=True)
    (monitor,) = [obj for obj in objects if obj["kind"] == "ServiceMonitor"]
    (service,) = [obj for obj in objects if obj["kind"] == "Service"]

    assert monitor["spec"]["selector"]["matchLabels"].items() <= (
        service["metadata"]["labels"].items())
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == [
        p["name"] for p in service["spec"]["ports"]]


def test_an_unknown_overlay_names_the_ones_there_are() -> None:
    with pytest.raises(ManifestError, match=r"no overlay 'prod'.*ha, sharded, single"):
        install_objects(DEPLOY, [], overlay="prod", service_monitor=False)


def test_kustomize_features_it_does_not_render_are_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(
        {"resources": [], "namePrefix": "dev-", "images": [{"name": "jobmachine"}]}))

    with pytest.raises(ManifestError, match=r"kustomization.yaml: images, namePrefix not "
                                            r"supported here"):
        render_kustomization(tmp_path)


def test_a_patch_that_does_not_apply_says_where(tmp_path: Path) -> None:
    (tmp_path / "cm.yaml").write_text(yaml.safe_dump(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}))
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump({
        "resources": ["cm.yaml"],
        "patches": [{"target": {"kind": "ConfigMap"},
                     "patch": "- {op: remove, path: /data/missing}"}],
    }))

    with pytest.raises(ManifestError, match=r"kustomization\.yaml: patch of"):
        render_kustomization(tmp_path)


def test_the_command_writes_one_file_per_object_in_apply_order(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["manifests", "install", "--overlay", "sharded",
                                      "-o", str(tmp_path / "out")])

    assert result.exit_code == 0, result.output
    files = sorted((tmp_path / "out").iterdir())
    assert [str(p) for p in files] == result.output.split() and len(files) > len(CRDS)
    assert files[len(CRDS)].name == f"{len(CRDS):02d}-namespace-jobmachine-system.yaml"
    deployment = yaml.safe_load(next(p for p in files if "-deployment-" in p.name).read_text())
    assert deployment["spec"]["replicas"] == 3
