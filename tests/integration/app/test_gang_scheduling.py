"""Gang scheduling end to end: PodGroups from the Kubeflow machines, honoured by the local node.

Jobs run on `jobmachine up`'s cluster in simulate mode with a 4-CPU node. A job
whose run policy has a schedulingPolicy (or every job, with --gang-scheduling)
gets a PodGroup named like the job; its pods are bound all together or not at
all, and a group that cannot be placed fails the job with the reason.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from engine.app.up import LocalCluster, UpOptions, running_local_cluster
from engine.cluster.node import Capacity
from engine.controller.machines.install import crd_resources
from engine.kube.resources import PODS, Resource
from engine.settings import EngineSettings
from tests.integration.app.support import wait_until
from tests.kinds import CRDS, PYTORCHJOBS

PODGROUPS = {r.group: r for r in crd_resources(CRDS / "podgroups")}
VOLCANO_GROUPS = PODGROUPS["scheduling.volcano.sh"]
PLUGINS_GROUPS = PODGROUPS["scheduling.x-k8s.io"]
PRIORITY_CLASSES = Resource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass",
                            namespaced=False)


def gang_job(name: str, *, cpu: str = "1", workers: int = 2, run_seconds: int = 3,
             scheduling: dict[str, Any] | None = None) -> dict[str, Any]:
    """A PyTorchJob of a Master and `workers` Workers, each asking `cpu`, each running
    `run_seconds` (simulated); gang scheduled when `scheduling` is given."""
    def replica(replicas: int) -> dict[str, Any]:
        return {
            "replicas": replicas,
            "restartPolicy": "Never",
            "template": {
                "metadata": {"annotations": {"sim.jobmachine.dev/run-seconds": str(run_seconds)}},
                "spec": {"containers": [{"name": "pytorch", "image": "pytorch",
                                         "resources": {"requests": {"cpu": cpu}}}]},
            },
        }

    spec: dict[str, Any] = {"pytorchReplicaSpecs": {"Master": replica(1),
                                                    "Worker": replica(workers)}}
    if scheduling is not None:
        spec["runPolicy"] = {"schedulingPolicy": scheduling}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def _cluster(settings: EngineSettings) -> Iterator[LocalCluster]:
    options = UpOptions(port=0, node_mode="simulate", settings=settings,
                        node_capacity=Capacity.parse("cpu=4,memory=8Gi"))
    with running_local_cluster(options) as running:
        yield running


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    yield from _cluster(EngineSettings(replica_backoff_base_s=0.2))


@pytest.fixture(scope="module")
def plugins_cluster() -> Iterator[LocalCluster]:
    yield from _cluster(EngineSettings(replica_backoff_base_s=0.2,
                                       gang_scheduler_name="scheduler-plugins",
                                       gang_scheduling=True))


def _status(cluster: LocalCluster, name: str) -> dict[str, Any]:
    return cluster.client.get(PYTORCHJOBS, name, "default").get("status") or {}


def _finished(cluster: LocalCluster, name: str, timeout_s: float = 90) -> dict[str, Any]:
    return wait_until(lambda: _status(cluster, name),
                      lambda seen: seen.get("phase") in ("Succeeded", "Failed"),
                      what=f"{name} to finish", timeout_s=timeout_s)


def _condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in status.get("conditions") or () if c["type"] == kind)


def _pods(cluster: LocalCluster, job: str) -> list[dict[str, Any]]:
    pods, _ = cluster.client.list(PODS, "default", label_selector=f"jobmachine.dev/job-name={job}")
    return pods


def _group_phase(cluster: LocalCluster, resource: Any, name: str, phase: str
                 ) -> dict[str, Any]:
    return wait_until(lambda: cluster.client.get(resource, name, "default"),
                      lambda seen: (seen.get("status") or {}).get("phase") == phase,
                      what=f"PodGroup {name} to be {phase}", timeout_s=30)


class BoundWatcher:
    """Polls the pods of some jobs and records, per look, how many of each job's pods that
    have not ended are bound, and how many are not."""

    def __init__(self, cluster: LocalCluster, jobs: list[str]) -> None:
        self.looks: list[dict[str, tuple[int, int]]] = []
        self._cluster, self._jobs = cluster, jobs
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> BoundWatcher:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        # One list per look, so that a look is one moment: a list per job could count a
        # pod of the first job that ended after its list beside the second job's pods
        # bound in its place.
        selector = f"jobmachine.dev/job-name in ({','.join(self._jobs)})"
        while not self._stop.wait(0.05):
            pods, _ = self._cluster.client.list(PODS, "default", label_selector=selector)
            look = {}
            for job in self._jobs:
                alive = [p for p in pods
                         if p["metadata"]["labels"]["jobmachine.dev/job-name"] == job
                         and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
                bound = sum(1 for p in alive if p["spec"].get("nodeName"))
                look[job] = (bound, len(alive) - bound)
            self.looks.append(look)


def test_two_gangs_that_cannot_both_fit_run_one_after_the_other(cluster: LocalCluster) -> None:
    """3 pods of 1 CPU each, twice, on 4 CPUs: never half of each, both Succeeded."""
    jobs = ["gang-first", "gang-second"]
    with BoundWatcher(cluster, jobs) as watcher:
        for name in jobs:
            cluster.client.create(PYTORCHJOBS, gang_job(name, scheduling={}), "default")
        statuses = [_finished(cluster, name) for name in jobs]

    assert [s["phase"] for s in statuses] == ["Succeeded", "Succeeded"]
    # Binding is one request per pod, so a gang may be seen partly bound for a moment; what
    # never happens is both gangs partly bound (each holding CPUs the other waits for), or
    # more pods bound than the node's 4 CPUs hold.
    half_each = [look for look in watcher.looks
                 if all(bound and waiting for bound, waiting in look.values())]
    assert half_each == []
    assert max(sum(bound for bound, _ in look.values()) for look in watcher.looks) <= 4
    ran = {job for look in watcher.looks for job, (bound, _) in look.items() if bound == 3}
    assert ran == set(jobs)


def test_a_gang_job_has_a_podgroup_and_its_pods_name_it(cluster: LocalCluster) -> None:
    scheduling = {"minAvailable": 2, "queue": "research", "minResources": {"cpu": "2"}}
    created = cluster.client.create(PYTORCHJOBS, gang_job("gang-shape", scheduling=scheduling),
                                    "default")

    _finished(cluster, "gang-shape")

    group = cluster.client.get(VOLCANO_GROUPS, "gang-shape", "default")
    assert group["spec"] == {"minMember": 2, "queue": "research", "minResources": {"cpu": "2"}}
    (owner,) = group["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == (
        "PyTorchJob", created["metadata"]["uid"], True)
    # The node writes the group's status as it sees the pods end.
    _group_phase(cluster, VOLCANO_GROUPS, "gang-shape", "Completed")
    for pod in _pods(cluster, "gang-shape"):
        assert pod["spec"]["schedulerName"] == "volcano"
        annotations = pod["metadata"]["annotations"]
        assert annotations["scheduling.k8s.io/group-name"] == "gang-shape"
        assert annotations["volcano.sh/task-spec"] == pod["metadata"]["labels"][
            "training.kubeflow.org/replica-type"]


def test_a_waiting_gang_of_higher_priority_goes_first(cluster: LocalCluster) -> None:
    """Two gangs wait behind a job holding the node; the newer one, of higher priority, is
    placed first when room frees up; its priority class reaches its pods and PodGroup."""
    cluster.client.create(PRIORITY_CLASSES, {
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": "gang-urgent"}, "value": 1000})
    cluster.client.create(PYTORCHJOBS, gang_job("blocker", cpu="2", workers=1, run_seconds=4),
                          "default")
    wait_until(lambda: _pods(cluster, "blocker"),
               lambda pods: len(pods) == 2 and all(p["spec"].get("nodeName") for p in pods),
               what="blocker's pods to be bound")
    cluster.client.create(PYTORCHJOBS, gang_job("routine", scheduling={}), "default")
    wait_until(lambda: _pods(cluster, "routine"), lambda pods: len(pods) == 3,
               what="routine's pods")
    cluster.client.create(PYTORCHJOBS, gang_job(
        "urgent", scheduling={"priorityClass": "gang-urgent"}), "default")

    with BoundWatcher(cluster, ["routine", "urgent"]) as watcher:
        statuses = [_finished(cluster, name) for name in ("routine", "urgent")]

    assert [s["phase"] for s in statuses] == ["Succeeded", "Succeeded"]
    first = next(job for look in watcher.looks for job, (bound, _) in look.items() if bound)
    assert first == "urgent"
    for pod in _pods(cluster, "urgent"):
        assert (pod["spec"]["priorityClassName"], pod["spec"]["priority"]) == ("gang-urgent", 1000)
    group = cluster.client.get(VOLCANO_GROUPS, "urgent", "default")
    assert group["spec"]["priorityClassName"] == "gang-urgent"


def test_a_job_without_a_scheduling_policy_is_not_gang_scheduled(cluster: LocalCluster) -> None:
    cluster.client.create(PYTORCHJOBS, gang_job("plain"), "default")

    assert _finished(cluster, "plain")["phase"] == "Succeeded"
    groups, _ = cluster.client.list(VOLCANO_GROUPS, "default",
                                    field_selector="metadata.name=plain")
    assert groups == []
    assert {p["spec"]["schedulerName"] for p in _pods(cluster, "plain")} == {"default-scheduler"}


def test_a_gang_not_placed_within_its_timeout_fails_the_job(cluster: LocalCluster) -> None:
    cluster.client.create(PYTORCHJOBS, gang_job("hog", cpu="2", workers=1, run_seconds=60),
                          "default")
    wait_until(lambda: _pods(cluster, "hog"),
               lambda pods: len(pods) == 2 and all(p["spec"].get("nodeName") for p in pods),
               what="hog's pods to be bound")
    cluster.client.create(PYTORCHJOBS, gang_job(
        "late", scheduling={"scheduleTimeoutSeconds": 2}), "default")

    status = _finished(cluster, "late")

    assert status["phase"] == "Failed"
    failed = _condition(status, "Failed")
    assert failed["reason"] == "GangSchedulingTimeout"
    assert "was not placed within 2s" in failed["message"]
    assert all(not p["spec"].get("nodeName") for p in _pods(cluster, "late"))
    cluster.client.delete(PYTORCHJOBS, "hog", "default")


def test_a_gang_larger_than_the_node_fails_the_job_at_once(cluster: LocalCluster) -> None:
    cluster.client.create(PYTORCHJOBS, gang_job("huge", cpu="2", scheduling={}), "default")

    status = _finished(cluster, "huge")

    failed = _condition(status, "Failed")
    assert failed["reason"] == "GangUnschedulable"
    assert "more than the node can ever hold" in failed["message"]
    assert "Insufficient cpu" in failed["message"]


def test_min_available_above_the_replicas_is_invalid(cluster: LocalCluster) -> None:
    cluster.client.create(PYTORCHJOBS, gang_job("greedy", scheduling={"minAvailable": 5}),
                          "default")

    failed = _condition(_finished(cluster, "greedy"), "Failed")

    assert failed["reason"] == "FailedValidation"
    assert "minAvailable (5) is more than the job's 3 replicas" in failed["message"]


def test_scheduler_plugins_podgroups_for_every_job(plugins_cluster: LocalCluster) -> None:
    """--gang-scheduler-name scheduler-plugins --gang-scheduling: every job is a gang."""
    cluster = plugins_cluster
    cluster.client.create(PYTORCHJOBS, gang_job("coscheduled"), "default")

    assert _finished(cluster, "coscheduled")["phase"] == "Succeeded"

    group = _group_phase(cluster, PLUGINS_GROUPS, "coscheduled", "Finished")
    assert group["spec"] == {"minMember": 3}
    assert group["status"]["succeeded"] == 3
    for pod in _pods(cluster, "coscheduled"):
        assert pod["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
        assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "coscheduled"
        assert "scheduling.k8s.io/group-name" not in (pod["metadata"].get("annotations") or {})


EVENTS = Resource("", "v1", "events", "Event", namespaced=True)


def test_a_waiting_gang_says_why_once_until_it_is_placed(
    cluster: LocalCluster,
) -> None:
    """The second of two gangs that cannot both fit waits: one GangWaiting event with the pod
    group's message, the condition GangWaiting True, then False once it is placed; the first
    never waited."""
    jobs = ["gang-placed-now", "gang-waits"]
    # The second is created once the first runs: created together, either could be placed
    # first (under load the scheduler placed gang-waits first, and it never waited).
    cluster.client.create(PYTORCHJOBS, gang_job(jobs[0], run_seconds=6, scheduling={}),
                          "default")
    wait_until(lambda: _status(cluster, jobs[0]), lambda seen: seen.get("phase") == "Running",
               what=f"{jobs[0]} to run", timeout_s=30)
    cluster.client.create(PYTORCHJOBS, gang_job(jobs[1], run_seconds=4, scheduling={}),
                          "default")
    waiting = wait_until(lambda: _status(cluster, "gang-waits"),
                         lambda seen: any(c["type"] == "GangWaiting"
                                          for c in seen.get("conditions") or ()),
                         what="gang-waits to say it waits", timeout_s=30)
    said = _condition(waiting, "GangWaiting")
    assert (said["status"], said["reason"]) == ("True", "NotEnoughResources")
    assert "waits for its pod group to be placed: " in said["message"]
    statuses = [_finished(cluster, name) for name in jobs]
    assert [s["phase"] for s in statuses] == ["Succeeded", "Succeeded"]
    placed = _condition(statuses[1], "GangWaiting")
    assert (placed["status"], placed["reason"]) == ("False", "GangScheduled")
    assert not any(c["type"] == "GangWaiting" for c in statuses[0]["conditions"])
    events, _ = cluster.client.list(EVENTS, "default")
    waits = [e for e in events if e["reason"] == "GangWaiting"
             and e["involvedObject"]["name"] in jobs]  # other tests' gangs wait too
    assert [e["involvedObject"]["name"] for e in waits] == ["gang-waits"]
    assert waits[0].get("count", 1) == 1
