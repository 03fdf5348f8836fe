"""A running pod deleted by someone else is recreated, and that is not a restart."""

from __future__ import annotations

from engine.kube.client import KubeClient
from engine.kube.resources import PODS
from tests.integration.engine.helpers import (
    PYTORCHJOBS,
    Replica,
    count_events,
    job_events,
    pytorchjob,
    record,
    replica_path,
    status,
    wait_for_phase,
    wait_for_replica,
    wait_until,
    watching_pods,
)


def test_deleted_running_pod_is_recreated_without_counting_a_restart(
    client: KubeClient, ns: str
) -> None:
    """worker-0 runs; someone deletes its pod -> a new pod runs and exits 0; restarts 0."""
    job = pytorchjob("train", ns, workers=Replica(run_s=1.5), backoff_limit=0)
    with watching_pods(client, ns) as pods:
        client.create(PYTORCHJOBS, job, ns)
        wait_for_replica(client, ns, "train", "Worker-0", "Running")
        client.delete(PODS, "train-worker-0", ns)
        job = wait_for_phase(client, ns, "train", "Succeeded")
        wait_until(lambda: pods.creations() == {"Worker-0": 2}, what="a second pod of Worker-0")
    assert pods.most_at_once["Worker-0"] == 1

    assert status(job).get("restarts", 0) == 0
    assert not record(job).replica_restarts
    assert replica_path(job, "Worker-0") == [
        "Pending", "Running", "Restarting", "Pending", "Running", "Succeeded"]
    events = job_events(client, job)
    [deleted] = [e for e in events if e["reason"] == "PodDeleted"]
    assert deleted["type"] == "Normal" and "Worker-0" in deleted["message"]
    assert count_events(events, "PodFailed") == 0
