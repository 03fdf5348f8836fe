"""Restart policy ExitCode: 128 and above (killed by a signal) are retried, 1-127 are permanent."""

from __future__ import annotations

from engine.controller.reconcile.children import ReplicaId
from engine.kube.client import KubeClient
from tests.integration.engine.helpers import (
    PYTORCHJOBS,
    Replica,
    condition,
    count_events,
    job_events,
    job_path,
    pytorchjob,
    record,
    replica_path,
    status,
    stored,
    wait_for_phase,
    wait_until,
    watching_pods,
)


def test_worker_killed_once_is_restarted_then_succeeds(client: KubeClient, ns: str) -> None:
    """worker-0 exits 137, then 0 -> one restart, 2 pods created, the job Restarting while it
    is recreated; said as Kubeflow says it: ExitedWithCode, then PyTorchJobRestarting."""
    job = pytorchjob("train", ns, workers=Replica(codes="137,0", policy="ExitCode"))
    with watching_pods(client, ns) as pods:
        client.create(PYTORCHJOBS, job, ns)
        job = wait_for_phase(client, ns, "train", "Succeeded")
        wait_until(lambda: pods.creations() == {"Worker-0": 2}, what="two pods of Worker-0")
    assert pods.most_at_once["Worker-0"] == 1

    done = status(job)
    assert done.get("restarts", 0) == 1
    assert stored(job)["restarts"]["Worker"]["0"][0] == 1
    assert job_path(job) == [
        "Created", "Running", "Restarting", "Running", "Succeeding", "Succeeded"]
    assert replica_path(job, "Worker-0") == [
        "Pending", "Running", "Restarting", "Pending", "Running", "Succeeded"]
    # Running came back and replaced Restarting, as Kubeflow's conditions do.
    assert [(c["type"], c["status"]) for c in status(job)["conditions"]] == [
        ("Created", "True"), ("Running", "False"), ("Succeeded", "True")]

    events = job_events(client, job)
    [exited] = [e for e in events if e["reason"] == "ExitedWithCode"
                and "code 137" in e["message"]]
    assert (exited["type"], exited["count"]) == ("Normal", 1)
    assert exited["message"] == f"Pod: {ns}.train-worker-0 exited with code 137"
    [restarting] = [e for e in events if e["reason"] == "PyTorchJobRestarting"]
    assert (restarting["type"], restarting["count"]) == ("Warning", 1)
    assert restarting["message"] == "job train is restarting because Worker replica(s) failed."
    assert count_events(events, "PodFailed") == 0
    [rerun] = [e for e in events if e["reason"] == "Restarted"]
    assert (rerun["count"], rerun["message"]) == (
        1, "Worker-0 runs again in pod train-worker-0 (restart 1).")


def test_exit_code_1_is_permanent(client: KubeClient, ns: str) -> None:
    """worker-0 exits 1 -> Failed (PyTorchJobFailed), no restart, one pod."""
    job = pytorchjob("train", ns, workers=Replica(codes="1,0", policy="ExitCode"))
    with watching_pods(client, ns) as pods:
        client.create(PYTORCHJOBS, job, ns)
        job = wait_for_phase(client, ns, "train", "Failed")
    assert pods.creations() == {"Worker-0": 1}

    failed = condition(job, "Failed")
    assert failed is not None
    assert (failed["status"], failed["reason"]) == ("True", "PyTorchJobFailed")
    assert "Worker" in failed["message"]
    assert status(job).get("restarts", 0) == 0
    assert stored(job)["replicas"] == {"Worker": {"Failed": "0"}}
    assert replica_path(job, "Worker-0") == ["Pending", "Running", "Failed"]
    assert status(job)["completionTime"]
    events = job_events(client, job)
    [permanent] = [e for e in events if e["reason"] == "ExitedWithCode"]
    assert permanent["message"] == (
        f"Pod: {ns}.train-worker-0 exited with code 1; restart policy ExitCode does not "
        "retry it (exit code 1, Error).")
    assert count_events(events, "PyTorchJobRestarting") == 0
    assert events[-1]["reason"] == "PyTorchJobFailed"


def test_master_killed_by_sigterm_is_retried(client: KubeClient, ns: str) -> None:
    """The master exits 143 (preempted), then 0 -> one restart and the job succeeds."""
    job = pytorchjob("train", ns, master=Replica(codes="143,0", policy="ExitCode"),
                     workers=Replica(run_s=0.1))
    client.create(PYTORCHJOBS, job, ns)

    job = wait_for_phase(client, ns, "train", "Succeeded")
    assert status(job).get("restarts", 0) == 1
    assert {replica: entry.count for replica, entry in record(job).replica_restarts.items()} == {
        ReplicaId("Master", 0): 1}
