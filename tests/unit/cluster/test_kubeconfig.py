"""The kubeconfig written for the embedded server: self-contained and private."""

from __future__ import annotations

import base64
import stat
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from engine.cluster.apiserver.endpoints.kubeconfig import write_kubeconfig


def _load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = YAML(typ="safe").load(path.read_text())
    return loaded


def test_plain_http_kubeconfig_names_everything_jobmachine(tmp_path: Path) -> None:
    path = write_kubeconfig(
        tmp_path / "kube" / "config", server="http://127.0.0.1:8080", token="t0k"
    )
    config = _load(path)
    assert config["current-context"] == "jobmachine"
    assert config["clusters"] == [
        {"name": "jobmachine", "cluster": {"server": "http://127.0.0.1:8080"}}
    ]
    assert config["users"] == [{"name": "jobmachine", "user": {"token": "t0k"}}]
    assert config["contexts"] == [
        {
            "name": "jobmachine",
            "context": {"cluster": "jobmachine", "user": "jobmachine", "namespace": "default"},
        }
    ]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_tls_kubeconfig_embeds_the_ca(tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_bytes(b"-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n")
    path = write_kubeconfig(
        tmp_path / "config",
        server="https://127.0.0.1:6443",
        token="t",
        ca_file=ca,
        context="dev",
        namespace="jobs",
    )
    config = _load(path)
    cluster = config["clusters"][0]["cluster"]
    assert base64.b64decode(cluster["certificate-authority-data"]) == ca.read_bytes()
    assert "certificate-authority" not in cluster
    assert config["current-context"] == "dev"
    assert config["contexts"][0]["context"]["namespace"] == "jobs"


def test_rewriting_replaces_the_file_and_keeps_it_private(tmp_path: Path) -> None:
    target = tmp_path / "config"
    target.write_text("old")
    target.chmod(0o644)
    write_kubeconfig(target, server="http://127.0.0.1:1", token="new")
    assert _load(target)["users"][0]["user"]["token"] == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["config"]
