"""kubectl against `jobmachine up`: submit a job, wait for it, read its story, delete it.

The outside judge of the engine: the real kubectl sees the printer columns,
the conditions (`kubectl wait`), one Event per state change (`kubectl
describe`), the processes' output (`kubectl logs`) and a clean deletion.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.e2e.conftest import Kubectl

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _example(name: str) -> str:
    """An example manifest without its namespace, so it lands in the test's namespace."""
    document = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())
    del document["metadata"]["namespace"]
    return yaml.safe_dump(document)


def test_a_restarted_job_tells_its_story_through_kubectl(cluster_kubectl: Kubectl) -> None:
    cluster_kubectl.apply(_example("pytorch-restarts"))

    cluster_kubectl("wait", "--for=condition=Succeeded", "pytorchjob/pytorch-restarts",
                    "--timeout=60s", timeout=90)

    listed = cluster_kubectl("get", "pytorchjobs", "pytorch-restarts", "--no-headers").stdout
    columns = listed.split()
    assert columns[:3] == ["pytorch-restarts", "Succeeded", "1"]
    described = cluster_kubectl("describe", "pytorchjob", "pytorch-restarts").stdout
    events = described.split("Events:", 1)[1]
    # The kill, as Kubeflow's training operator says it: the exit code, then the restart.
    ns = cluster_kubectl.namespace
    assert f"Pod: {ns}.pytorch-restarts-worker-0 exited with code 137" in events
    assert "PyTorchJobRestarting" in events
    assert "job pytorch-restarts is restarting because Worker replica(s) failed." in events
    assert "Worker-0 runs again in pod pytorch-restarts-worker-0 (restart 1)." in events
    job = cluster_kubectl.get_json("pytorchjob", "pytorch-restarts")
    # Running came back after the restart and replaced Restarting, as in Kubeflow.
    conditions = [(c["type"], c["status"]) for c in job["status"]["conditions"]]
    assert conditions == [("Created", "True"), ("Running", "False"), ("Succeeded", "True")]
    assert "PyTorchJobSucceeded" in described
    logs = cluster_kubectl("logs", "pytorch-restarts-worker-0").stdout
    assert "second attempt: done" in logs


def test_a_failed_job_is_failed_for_kubectl_wait(cluster_kubectl: Kubectl) -> None:
    cluster_kubectl.apply(_example("pytorch-fails"))

    cluster_kubectl("wait", "--for=condition=Failed", "pytorchjob/pytorch-fails",
                    "--timeout=60s", timeout=90)

    job = cluster_kubectl.get_json("pytorchjob", "pytorch-fails")
    failed = [c for c in job["status"]["conditions"] if c["type"] == "Failed"]
    assert failed[0]["reason"] == "PyTorchJobFailed"


def test_deleting_a_job_removes_it_and_its_pods(cluster_kubectl: Kubectl) -> None:
    cluster_kubectl.apply(_example("pytorch-succeeds"))
    cluster_kubectl("wait", "--for=condition=Running", "pytorchjob/pytorch-succeeds",
                    "--timeout=60s", timeout=90)

    cluster_kubectl("delete", "pytorchjob", "pytorch-succeeds", "--timeout=60s", timeout=90)
    cluster_kubectl("wait", "--for=delete", "pod", "-l",
                    "jobmachine.dev/job-name=pytorch-succeeds", "--timeout=60s", timeout=90)

    pods = cluster_kubectl.get_json("pods", "-l", "jobmachine.dev/job-name=pytorch-succeeds")
    assert pods["items"] == []
