"""The local node's kubectl-delivery: kubectl linked into the target directory, the hostfile's
pods (without itself), and waiting until each has been seen Running."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.cluster.node.runtime.kubectl_delivery import (
    DeliveryError,
    deliver_kubectl,
    hostfile_pods,
    in_cluster_api,
    main,
    pod_namespace,
    wait_running,
)


def test_kubectl_is_linked_to_the_resolved_binary(tmp_path: Path) -> None:
    real = tmp_path / "sdk" / "kubectl"
    real.parent.mkdir()
    real.write_text("#!/bin/sh\n")
    real.chmod(0o755)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kubectl").symlink_to(real)
    link = deliver_kubectl(tmp_path / "opt" / "kube", path=str(bin_dir))
    assert link == tmp_path / "opt" / "kube" / "kubectl"
    assert os.readlink(link) == str(real)
    assert deliver_kubectl(tmp_path / "opt" / "kube", path=str(bin_dir)) == link


def test_without_kubectl_on_path_delivery_fails(tmp_path: Path) -> None:
    with pytest.raises(DeliveryError, match="no kubectl on PATH"):
        deliver_kubectl(tmp_path, path=str(tmp_path))


def test_main_exits_1_with_the_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main({"PATH": str(tmp_path), "TARGET_DIR": str(tmp_path / "kube")}) == 1
    assert "kubectl-delivery: error: no kubectl on PATH" in capsys.readouterr().out


def test_the_hostfile_names_pods_by_first_word_without_itself() -> None:
    text = "job-worker-0 slots=2\njob-worker-1 slots=2\n\njob-launcher slots=1\njob-worker-0\n"
    assert hostfile_pods(text, itself="job-launcher") == ["job-worker-0", "job-worker-1"]


def test_waits_until_each_pod_has_been_seen_running() -> None:
    phases = {"a": iter(["not found", "Pending", "Pending", "Running"]),
              "b": iter(["Running"])}
    said: list[str] = []
    sleeps: list[float] = []
    wait_running(lambda name: next(phases[name]), ["a", "b"], say=said.append,
                 sleep=sleeps.append)
    assert said == ["waiting for pod a to be Running (now not found)", "pod b is Running",
                    "waiting for pod a to be Running (now Pending)", "pod a is Running"]
    assert len(sleeps) == 3


def test_a_pod_that_has_ended_is_not_waited_for() -> None:
    phases = {"a": iter(["Pending", "Succeeded"]), "b": iter(["Failed"])}
    said: list[str] = []
    wait_running(lambda name: next(phases[name]), ["a", "b"], say=said.append,
                 sleep=lambda _: None)
    assert said == [
        "waiting for pod a to be Running (now Pending)",
        "pod b has ended (Failed) and will not run again: not waiting for it",
        "pod a has ended (Succeeded) and will not run again: not waiting for it"]


def test_credentials_come_from_the_in_cluster_config(tmp_path: Path) -> None:
    with pytest.raises(DeliveryError, match="no in-cluster config"):
        in_cluster_api({"KUBERNETES_SERVICE_HOST": "127.0.0.1"}, tmp_path)
    (tmp_path / "token").write_text("t\n")
    api = in_cluster_api({"KUBERNETES_SERVICE_HOST": "127.0.0.1",
                          "KUBERNETES_SERVICE_PORT": "6443"}, tmp_path)
    api.close()
    (tmp_path / "namespace").write_text("team")
    assert pod_namespace({}, tmp_path) == "team"
    assert pod_namespace({"NAMESPACE": "other"}, tmp_path) == "other"
