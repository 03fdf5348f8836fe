"""`jobmachine manifests install` holds the shipped machines and the image asked for, writes
instead of installing with `-o`, and says in one line when it cannot reach a cluster."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from engine.app.install_manifests import install_objects
from engine.cli import app

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"
CRDS = sorted((ROOT / "crds").glob("*.yaml"))
MACHINE_FILES = sorted((ROOT / "machines").glob("*.yaml"))
SHIPPED = [doc["metadata"]["name"] for path in MACHINE_FILES
           for doc in yaml.safe_load_all(path.read_text()) if doc]


def test_the_shipped_machines_come_last_as_statemachine_objects() -> None:
    objects = install_objects(DEPLOY, CRDS, overlay="single", service_monitor=False,
                              machines=MACHINE_FILES)
    machines = objects[-len(SHIPPED):]

    assert len(SHIPPED) >= 9
    assert [(m["kind"], m["metadata"]["name"]) for m in machines] == [
        ("StateMachine", name) for name in SHIPPED]
    assert [o for o in objects[:-len(SHIPPED)] if o["kind"] == "StateMachine"] == []


def test_the_image_asked_for_replaces_the_engines() -> None:
    def images(image: str | None) -> list[str]:
        objects = install_objects(DEPLOY, CRDS, overlay="ha", service_monitor=False,
                                  image=image)
        (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
        return [c["image"] for c in deployment["spec"]["template"]["spec"]["containers"]]

    assert images(None) == ["jobmachine:0.1.0"]
    assert images("registry.example/jobmachine:1") == ["registry.example/jobmachine:1"]


def test_dash_writes_one_stream_to_stdout_and_installs_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))

    result = CliRunner().invoke(app, ["manifests", "install", "--overlay", "single", "-o", "-"])

    assert result.exit_code == 0, result.output
    documents = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert documents[0]["kind"] == "CustomResourceDefinition"
    assert [d["metadata"]["name"] for d in documents if d["kind"] == "StateMachine"] == SHIPPED


def test_without_a_kubeconfig_it_says_so_in_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    monkeypatch.setenv("HOME", str(tmp_path))

    result = CliRunner().invoke(app, ["manifests", "install"])

    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith(
        f"error: cannot read the kubeconfig {tmp_path / 'no-such-kubeconfig'}: ")
    assert result.stderr.count("\n") == 1
