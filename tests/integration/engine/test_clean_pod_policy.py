"""runPolicy.cleanPodPolicy: which pods a finished job deletes (None, as upstream, by default)."""

from __future__ import annotations

from engine.kube.client import KubeClient
from engine.kube.resources import SERVICES
from tests.integration.engine.helpers import (
    PYTORCHJOBS,
    TRACKING,
    Replica,
    pod_names,
    pods_of,
    pytorchjob,
    wait_for,
    wait_for_phase,
)


def service_names(client: KubeClient, namespace: str, job: str) -> list[str]:
    services, _ = client.list(SERVICES, namespace, label_selector=f"jobmachine.dev/job-name={job}")
    return sorted(s["metadata"]["name"] for s in services)


def test_all_deletes_every_pod_when_the_job_succeeds(client: KubeClient, ns: str) -> None:
    job = pytorchjob("train", ns, master=Replica(), workers=Replica(2, run_s=30),
                     clean_pod_policy="All")
    client.create(PYTORCHJOBS, job, ns)

    wait_for_phase(client, ns, "train", "Succeeded")
    wait_for(lambda: pod_names(client, ns, "train"), lambda names: names == [],
             what="every pod deleted")
    wait_for(lambda: service_names(client, ns, "train"), lambda names: names == [],
             what="every service deleted with its pod (none leaks)")


def test_running_deletes_only_the_pods_still_running(client: KubeClient, ns: str) -> None:
    """The master succeeds while both workers still run -> the workers' pods go, its stays."""
    job = pytorchjob("train", ns, master=Replica(), workers=Replica(2, run_s=30),
                     clean_pod_policy="Running")
    client.create(PYTORCHJOBS, job, ns)

    wait_for_phase(client, ns, "train", "Succeeded")
    wait_for(lambda: pod_names(client, ns, "train"), lambda names: names == ["train-master-0"],
             what="only the master's pod left")
    wait_for(lambda: service_names(client, ns, "train"),
             lambda names: names == ["train-master-0"], what="only the master's service left")


def test_none_keeps_every_pod(client: KubeClient, ns: str) -> None:
    """The default: pods stay (the engine's clean-up acts before it releases their finalizers)."""
    job = pytorchjob("train", ns, master=Replica(), workers=Replica(2, run_s=30))
    client.create(PYTORCHJOBS, job, ns)

    wait_for_phase(client, ns, "train", "Succeeded")
    pods = wait_for(
        lambda: pods_of(client, ns, "train"),
        lambda pods: all(TRACKING not in (p["metadata"].get("finalizers") or []) for p in pods),
        what="tracking finalizers released")
    assert sorted(p["metadata"]["name"] for p in pods) == [
        "train-master-0", "train-worker-0", "train-worker-1"]
    assert all(not p["metadata"].get("deletionTimestamp") for p in pods)
