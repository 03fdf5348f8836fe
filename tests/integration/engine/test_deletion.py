"""Deleting a job: the engine's cleanup finalizer runs the clean-up, then lets the job go.

Its pods lose their tracking finalizers and are garbage-collected; a job being deleted
never gets a new pod, however its replicas end.
"""

from __future__ import annotations

from engine.app.up import LocalCluster
from engine.kube.client import KubeClient
from engine.kube.resources import PODS
from tests.integration.engine.helpers import (
    CLEANUP,
    HOLD,
    PYTORCHJOBS,
    TRACKING,
    Replica,
    get_job,
    pods_of,
    pytorchjob,
    reconciles,
    settle,
    wait_for,
    wait_for_finalizers,
    wait_for_replica,
    wait_until,
    watching_pods,
)


def test_deleted_job_goes_away_with_its_pods(client: KubeClient, ns: str) -> None:
    job = pytorchjob("train", ns, master=Replica(run_s=30), workers=Replica(2, run_s=30))
    client.create(PYTORCHJOBS, job, ns)
    wait_for_replica(client, ns, "train", "Master-0", "Running")
    pods = wait_for(lambda: pods_of(client, ns, "train"), lambda p: len(p) == 3, what="3 pods")
    assert all(TRACKING in p["metadata"]["finalizers"] for p in pods)
    assert CLEANUP in (get_job(client, ns, "train") or {})["metadata"]["finalizers"]

    client.delete(PYTORCHJOBS, "train", ns)

    wait_until(lambda: get_job(client, ns, "train") is None, what="the job is gone")
    remaining = pods_of(client, ns, "train")
    assert all(TRACKING not in (p["metadata"].get("finalizers") or []) for p in remaining)
    wait_until(lambda: not pods_of(client, ns, "train"), what="pods garbage-collected")


def test_a_job_being_deleted_gets_no_new_pod(
    cluster: LocalCluster, client: KubeClient, ns: str, held: str
) -> None:
    """worker-0 is killed (137, ExitCode) while its job is being deleted -> not recreated."""
    job = pytorchjob(held, ns, workers=Replica(codes="137", policy="ExitCode", run_s=1.5),
                     finalizers=(HOLD,))
    with watching_pods(client, ns) as pods:
        client.create(PYTORCHJOBS, job, ns)
        wait_for_replica(client, ns, held, "Worker-0", "Running")
        client.delete(PYTORCHJOBS, held, ns)
        wait_for_finalizers(client, ns, held, [HOLD])
        before = reconciles(cluster)
        wait_until(
            lambda: any(p["status"].get("phase") == "Failed" for p in pods_of(client, ns, held)),
            what="worker-0 failed")
        settle(cluster, before)
    assert pods.creations() == {"Worker-0": 1}
    assert (get_job(client, ns, held) or {})["status"].get("restarts", 0) == 0


def test_a_pod_deleted_while_its_job_is_deleted_is_not_recreated(
    cluster: LocalCluster, client: KubeClient, ns: str, held: str
) -> None:
    job = pytorchjob(held, ns, workers=Replica(run_s=30), finalizers=(HOLD,))
    with watching_pods(client, ns) as pods:
        client.create(PYTORCHJOBS, job, ns)
        wait_for_replica(client, ns, held, "Worker-0", "Running")
        client.delete(PYTORCHJOBS, held, ns)
        wait_for_finalizers(client, ns, held, [HOLD])
        before = reconciles(cluster)
        client.delete(PODS, f"{held}-worker-0", ns)
        wait_until(lambda: not pods_of(client, ns, held), what="worker-0 gone")
        settle(cluster, before)
    assert pods.creations() == {"Worker-0": 1}
    assert not pods_of(client, ns, held)

