"""kubectl against `jobmachine up`: submit a job, wait for it, read its story, delete it.

The outside judge of the engine: the real kubectl sees the printer columns,
the conditions (`kubectl wait`), one Event per state change (`kubectl
describe`), the processes' output (`kubectl logs`) and a clean deletion.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from engine.app.up import LocalCluster, UpOptions, running_local_cluster
from engine.settings import EngineSettings
from tests.e2e.conftest import KUBECTL, Kubectl, _kubectl_for

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed on this machine")
    options = UpOptions(
        port=0, node_mode="process", settings=EngineSettings(replica_backoff_base_s=0.2)
    )
    with running_local_cluster(options) as running:
        yield running


@pytest.fixture
def kubectl(cluster: LocalCluster, tmp_path: Path) -> Kubectl:
    namespace = f"jobs-{uuid.uuid4().hex[:8]}"
    runner = _kubectl_for(cluster.server, tmp_path / "cache", tmp_path, namespace)
    runner("create", "namespace", namespace)
    return runner


def _example(name: str) -> str:
    """An example manifest without its namespace, so it lands in the test's namespace."""
    document = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())
    del document["metadata"]["namespace"]
    return yaml.safe_dump(document)


def test_a_restarted_job_tells_its_story_through_kubectl(kubectl: Kubectl) -> None:
    kubectl.apply(_example("pytorch-restarts"))

    kubectl("wait", "--for=condition=Succeeded", "pytorchjob/pytorch-restarts",
            "--timeout=60s", timeout=90)

    columns = kubectl("get", "pytorchjobs", "pytorch-restarts", "--no-headers").stdout.split()
    assert columns[:3] == ["pytorch-restarts", "Succeeded", "1"]
    described = kubectl("describe", "pytorchjob", "pytorch-restarts").stdout
    assert "PodFailed" in described
    assert "exit code 137" in described
    assert "PyTorchJobSucceeded" in described
    logs = kubectl("logs", "pytorch-restarts-worker-0").stdout
    assert "second attempt: done" in logs


def test_a_failed_job_is_failed_for_kubectl_wait(kubectl: Kubectl) -> None:
    kubectl.apply(_example("pytorch-fails"))

    kubectl("wait", "--for=condition=Failed", "pytorchjob/pytorch-fails", "--timeout=60s",
            timeout=90)

    job = kubectl.get_json("pytorchjob", "pytorch-fails")
    failed = [c for c in job["status"]["conditions"] if c["type"] == "Failed"]
    assert failed[0]["reason"] == "PyTorchJobFailed"


def test_deleting_a_job_removes_it_and_its_pods(kubectl: Kubectl) -> None:
    kubectl.apply(_example("pytorch-succeeds"))
    kubectl("wait", "--for=condition=Running", "pytorchjob/pytorch-succeeds", "--timeout=60s",
            timeout=90)

    kubectl("delete", "pytorchjob", "pytorch-succeeds", "--timeout=60s", timeout=90)
    kubectl("wait", "--for=delete", "pod", "-l", "jobmachine.dev/job-name=pytorch-succeeds",
            "--timeout=60s", timeout=90)

    pods = kubectl.get_json("pods", "-l", "jobmachine.dev/job-name=pytorch-succeeds")
    assert pods["items"] == []
