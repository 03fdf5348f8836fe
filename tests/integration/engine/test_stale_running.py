"""A pod that still says Running while its main container exited is not counted as running.

Field notes, story 3: outcomes come from `containerStatuses[].state.terminated`, not from the
pod phase. The node simulates a long run, so it leaves the status we write alone.
"""

from __future__ import annotations

from typing import Any

from engine.kube.client import KubeClient
from engine.kube.resources import PODS
from tests.integration.engine.helpers import (
    PYTORCHJOBS,
    Replica,
    get_job,
    get_pod,
    pytorchjob,
    status,
    stored,
    wait_for,
    wait_for_replica,
)


def exited_but_running(pod: dict[str, Any], exit_code: int) -> dict[str, Any]:
    """A status patch: phase Running, the main container terminated with `exit_code`."""
    [container] = pod["status"]["containerStatuses"]
    terminated = {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error",
                  "startedAt": container["state"]["running"]["startedAt"],
                  "finishedAt": container["state"]["running"]["startedAt"]}
    return {"status": {"phase": "Running", "containerStatuses": [
        {**container, "ready": False, "state": {"terminated": terminated}}]}}


def test_worker_exited_while_pod_says_running_counts_as_succeeded(
    client: KubeClient, ns: str
) -> None:
    """worker-1's container exited 0 but its pod says Running -> Worker-1 Succeeded, 1 active."""
    job = pytorchjob("train", ns, workers=Replica(2, run_s=60))
    client.create(PYTORCHJOBS, job, ns)
    wait_for_replica(client, ns, "train", "Worker-0", "Running")
    wait_for_replica(client, ns, "train", "Worker-1", "Running")
    pod = get_pod(client, ns, "train-worker-1")
    assert pod is not None

    client.patch(PODS, "train-worker-1", exited_but_running(pod, 0), namespace=ns,
                 subresource="status")

    job = wait_for_replica(client, ns, "train", "Worker-1", "Succeeded")
    assert stored(job)["replicas"] == {"Worker": {"Running": "0", "Succeeded": "1"}}
    worker = wait_for(lambda: status(get_job(client, ns, "train"))["replicaStatuses"]["Worker"],
                      lambda worker: worker.get("active") == 1, what="one active worker")
    assert worker.get("succeeded") == 1
    assert status(job)["phase"] == "Running"
    assert (get_pod(client, ns, "train-worker-1") or {})["status"]["phase"] == "Running"


def test_worker_exited_non_zero_while_pod_says_running_is_a_failure(
    client: KubeClient, ns: str
) -> None:
    """The container exited 1 under a Running pod (policy Never) -> the job fails."""
    job = pytorchjob("train", ns, workers=Replica(run_s=60, policy="Never"))
    client.create(PYTORCHJOBS, job, ns)
    wait_for_replica(client, ns, "train", "Worker-0", "Running")
    pod = get_pod(client, ns, "train-worker-0")
    assert pod is not None

    client.patch(PODS, "train-worker-0", exited_but_running(pod, 1), namespace=ns,
                 subresource="status")

    job = wait_for_replica(client, ns, "train", "Worker-0", "Failed")
    assert status(job)["phase"] == "Failed"
