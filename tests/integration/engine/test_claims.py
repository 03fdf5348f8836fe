"""Which pods are the job's: owner reference first, labels second (field notes, stories 1, 2).

A matching orphan is adopted instead of duplicated; an owned pod whose labels drifted is
relabelled, never released, and never sends the engine into an AlreadyExists loop.
"""

from __future__ import annotations

import time
from typing import Any

from engine.app.up import LocalCluster
from engine.kube.client import KubeClient
from engine.kube.resources import PODS, SERVICES, Resource
from tests.integration.engine.helpers import (
    HOLD,
    JOB_NAME,
    PYTORCHJOBS,
    REPLICA_INDEX,
    REPLICA_TYPE,
    Replica,
    controller_uid,
    get_pod,
    pods_of,
    pytorchjob,
    reconciles,
    settle,
    sim_pod,
    status,
    stored,
    wait_for,
    wait_for_finalizers,
    wait_for_phase,
    wait_for_replica,
    wait_until,
    watching_pods,
)

JOB_UID = "jobmachine.dev/job-uid"


Obj = dict[str, Any]


def child_labels(obj: Obj) -> dict[str, str]:
    """The engine's claim labels on a child (under jobmachine.dev/; the pod's restart attempt
    is not one of them: a pod without it counts as attempt 0)."""
    labels = obj["metadata"].get("labels") or {}
    return {k: v for k, v in labels.items()
            if k.startswith("jobmachine.dev/") and k != "jobmachine.dev/restart-attempt"}


def test_matching_orphan_is_adopted_not_duplicated(client: KubeClient, ns: str) -> None:
    """A pod named train-worker-0 labelled job-name=train exists first -> adopted, 1 pod."""
    orphan = client.create(
        PODS, sim_pod("train-worker-0", ns, labels={JOB_NAME: "train"}, run_s=1.0), ns)
    with watching_pods(client, ns) as pods:
        job = client.create(PYTORCHJOBS, pytorchjob("train", ns, workers=Replica()), ns)
        adopted = wait_for(lambda: get_pod(client, ns, "train-worker-0"),
                           lambda pod: pod is not None and controller_uid(pod) is not None,
                           what="the orphan adopted")
        assert adopted is not None
        done = wait_for_phase(client, ns, "train", "Succeeded")

    assert adopted["metadata"]["uid"] == orphan["metadata"]["uid"]
    [reference] = adopted["metadata"]["ownerReferences"]
    assert reference == {
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "train",
        "uid": job["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
    labels = adopted["metadata"]["labels"]
    assert (labels[REPLICA_TYPE], labels[REPLICA_INDEX], labels[JOB_UID]) == (
        "Worker", "0", job["metadata"]["uid"])
    assert pods.seen == {orphan["metadata"]["uid"]}
    assert status(done).get("restarts", 0) == 0


def test_orphan_of_another_job_uid_is_left_alone(client: KubeClient, ns: str) -> None:
    """An orphan whose job-uid label names another job is not adopted (its own pod is made)."""
    labels = {JOB_NAME: "train", JOB_UID: "0b2d7f0e-0000-4000-8000-000000000000"}
    client.create(PODS, sim_pod("train-worker-9", ns, labels=labels, run_s=30), ns)
    client.create(PYTORCHJOBS, pytorchjob("train", ns, workers=Replica()), ns)

    wait_for_phase(client, ns, "train", "Succeeded")
    stranger = get_pod(client, ns, "train-worker-9")
    assert stranger is not None and controller_uid(stranger) is None
    assert sorted(p["metadata"]["name"] for p in pods_of(client, ns, "train")) == [
        "train-worker-0", "train-worker-9"]


def relabelled(client: KubeClient, res: Resource, ns: str, wanted: dict[str, str]) -> Obj:
    """Wait until train-worker-0 of this resource carries the engine's labels again."""
    return wait_for(lambda: client.get(res, "train-worker-0", ns),
                    lambda obj: child_labels(obj) == wanted, what=f"{res.kind} relabelled")


def test_owned_children_whose_labels_drifted_are_relabelled_not_released(
    cluster: LocalCluster, client: KubeClient, ns: str
) -> None:
    """Patch every jobmachine label off worker-0's pod and service -> relabelled, the same
    objects, still owned; the engine then goes quiet (no AlreadyExists loop, no retries)."""
    job = client.create(PYTORCHJOBS, pytorchjob("train", ns, workers=Replica(run_s=30)), ns)
    wait_for_replica(client, ns, "train", "Worker-0", "Running")
    before = {res.kind: client.get(res, "train-worker-0", ns) for res in (PODS, SERVICES)}
    wanted = child_labels(before["Pod"])
    assert set(wanted) == {JOB_NAME, JOB_UID, REPLICA_TYPE, REPLICA_INDEX}
    assert child_labels(before["Service"]) == wanted

    for res in (PODS, SERVICES):
        client.patch(res, "train-worker-0", {"metadata": {"labels": dict.fromkeys(wanted)}},
                     namespace=ns)
    after = {res.kind: relabelled(client, res, ns, wanted) for res in (PODS, SERVICES)}
    for kind, obj in after.items():
        assert obj["metadata"]["uid"] == before[kind]["metadata"]["uid"]
        assert obj["metadata"]["ownerReferences"] == before[kind]["metadata"]["ownerReferences"]

    requests, retries = cluster.client.request_count, cluster.engine.queue.metrics().retries
    time.sleep(2.0)
    assert cluster.client.request_count - requests <= 3, "the engine keeps calling the server"
    assert cluster.engine.queue.metrics().retries == retries
    assert [p["metadata"]["uid"] for p in pods_of(client, ns, "train")] == [
        before["Pod"]["metadata"]["uid"]]
    current = client.get(PYTORCHJOBS, "train", ns)
    assert current["metadata"]["uid"] == job["metadata"]["uid"]
    assert stored(current)["replicas"] == {"Worker": {"Running": "0"}}


def test_no_adoption_while_the_job_is_being_deleted(
    cluster: LocalCluster, client: KubeClient, ns: str, held: str
) -> None:
    """The job is being deleted (a foreign finalizer keeps it); a matching orphan -> left alone."""
    job = pytorchjob(held, ns, workers=Replica(2, run_s=30), finalizers=(HOLD,))
    client.create(PYTORCHJOBS, job, ns)
    wait_for_replica(client, ns, held, "Worker-1", "Running")
    client.delete(PYTORCHJOBS, held, ns)
    wait_for_finalizers(client, ns, held, [HOLD])
    client.delete(PODS, f"{held}-worker-1", ns)
    wait_until(lambda: get_pod(client, ns, f"{held}-worker-1") is None, what="worker-1 gone")

    before = reconciles(cluster)
    client.create(PODS, sim_pod(f"{held}-worker-1", ns, labels={JOB_NAME: held}, run_s=30), ns)
    settle(cluster, before)

    orphan = get_pod(client, ns, f"{held}-worker-1")
    assert orphan is not None
    assert not orphan["metadata"].get("ownerReferences")
    assert set(orphan["metadata"]["labels"]) == {JOB_NAME}
