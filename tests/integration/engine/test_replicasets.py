"""apps/v1 ReplicaSets and v1 ReplicationControllers run by machines/replicaset.yaml on the
embedded API server, through the official Python client as a Deployment controller or a
user would make them.

The simulated node runs each pod for an hour (it never ends by itself) and marks it Ready
`ready-seconds` after it starts when its container has a readiness probe.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s

from engine.app.up import LocalCluster
from engine.controller.reconcile.placement import DELETION_COST_ANNOTATION
from engine.kube.client import KubeClient
from engine.kube.resources import PODS, Resource
from engine.settings import EngineSettings
from tests.integration.engine.helpers import (
    FAST,
    RUN_SECONDS,
    Obj,
    new_namespace,
    official_client,
    running_engineless,
    start_engine,
    wait_for,
    wait_until,
)

READY_SECONDS = "sim.jobmachine.dev/ready-seconds"
EVENTS = Resource("", "v1", "events", "Event", namespaced=True)
REPLICASETS = Resource("apps", "v1", "replicasets", "ReplicaSet", namespaced=True)


@pytest.fixture
def core(cluster: LocalCluster) -> Iterator[k8s.CoreV1Api]:
    with official_client(cluster.server.kubeconfig) as api:
        yield k8s.CoreV1Api(api)


def template(app: str, *, ready_s: float | None = None) -> Obj:
    """A pod template labelled app=<app> whose pod runs for an hour; with `ready_s`, its
    readiness probe passes that long after it starts."""
    annotations = {RUN_SECONDS: "3600"}
    container: dict[str, Any] = {"name": "web", "image": "nginx"}
    if ready_s is not None:
        annotations[READY_SECONDS] = str(ready_s)
        container["readinessProbe"] = {"exec": {"command": ["true"]}, "periodSeconds": 1}
    return {"metadata": {"labels": {"app": app}, "annotations": annotations},
            "spec": {"containers": [container]}}


def replicaset(name: str, replicas: int, *, ready_s: float | None = None, **spec: Any) -> Obj:
    return {
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": template(name, ready_s=ready_s), **spec},
    }


def live_pods(client: KubeClient, ns: str, app: str) -> list[Obj]:
    """The pods labelled app=<app> that are not being deleted, oldest first."""
    pods = [p for p in client.list(PODS, ns)[0]
            if (p["metadata"].get("labels") or {}).get("app") == app
            and not p["metadata"].get("deletionTimestamp")]
    return sorted(pods, key=lambda p: (p["metadata"]["creationTimestamp"], p["metadata"]["name"]))


def names(pods: list[Obj]) -> set[str]:
    return {p["metadata"]["name"] for p in pods}


def rs_status(client: KubeClient, ns: str, name: str) -> Obj:
    return client.get(REPLICASETS, name, ns).get("status") or {}


def wait_for_status(client: KubeClient, ns: str, name: str, **wanted: int) -> Obj:
    """The ReplicaSet's status once each of `wanted` (readyReplicas=3...) holds (an absent
    count is 0)."""
    found = wait_for(lambda: rs_status(client, ns, name),
                     lambda s: all(s.get(k, 0) == v for k, v in wanted.items()),
                     what=f"replicaset {ns}/{name} to have {wanted}")
    assert found is not None
    return found


def event_messages(client: KubeClient, ns: str, reason: str) -> list[str]:
    return sorted(e["message"] for e in client.list(EVENTS, ns)[0] if e["reason"] == reason)


def owner_uid(pod: Obj) -> str | None:
    refs = [r for r in pod["metadata"].get("ownerReferences") or () if r.get("controller")]
    return refs[0]["uid"] if refs else None


def test_a_replicaset_keeps_its_pods_and_scales_up_and_down(
    client: KubeClient, apps: k8s.AppsV1Api, ns: str
) -> None:
    created = apps.create_namespaced_replica_set(ns, replicaset("web", 3))
    status = wait_for_status(client, ns, "web", replicas=3, readyReplicas=3,
                             availableReplicas=3, fullyLabeledReplicas=3)
    assert status["observedGeneration"] == created.metadata.generation
    pods = live_pods(client, ns, "web")
    assert len(pods) == 3
    for pod in pods:
        assert pod["metadata"]["name"].startswith("web-")
        assert len(pod["metadata"]["name"]) == len("web-") + 5
        assert pod["metadata"]["generateName"] == "web-"
        assert owner_uid(pod) == created.metadata.uid
        assert pod["spec"]["restartPolicy"] == "Always"
    assert event_messages(client, ns, "SuccessfulCreate") == sorted(
        f"Created pod: {p['metadata']['name']}" for p in pods)

    # Older by more than a log2 bucket of age (upstream's LogarithmicScaleDown) than the next.
    time.sleep(3)
    apps.patch_namespaced_replica_set_scale("web", ns, {"spec": {"replicas": 5}})
    wait_for_status(client, ns, "web", replicas=5, readyReplicas=5)
    assert names(pods) <= names(live_pods(client, ns, "web"))

    apps.patch_namespaced_replica_set_scale("web", ns, {"spec": {"replicas": 1}})
    wait_for_status(client, ns, "web", replicas=1, readyReplicas=1)
    wait_until(lambda: len(live_pods(client, ns, "web")) == 1, what="4 pods deleted")
    # Events are posted in the background: the pods may be gone before them.
    wait_until(lambda: len(event_messages(client, ns, "SuccessfulDelete")) == 4,
               what="a SuccessfulDelete event per pod deleted")
    # One of the three older pods is kept: of Ready pods, those Ready for less time go first.
    assert live_pods(client, ns, "web")[0]["metadata"]["name"] in names(pods)


def test_a_scale_down_deletes_not_ready_pods_first(client: KubeClient, apps: k8s.AppsV1Api,
                                                   core: k8s.CoreV1Api, ns: str) -> None:
    apps.create_namespaced_replica_set(ns, replicaset("slow", 2, ready_s=0.2))
    wait_for_status(client, ns, "slow", readyReplicas=2)
    first = {p["metadata"]["name"] for p in live_pods(client, ns, "slow")}
    # Two more that are never ready: they are the ones a scale back to 2 deletes.
    apps.patch_namespaced_replica_set("slow", ns, {"spec": {"replicas": 4, "template": {
        "metadata": {"annotations": {READY_SECONDS: "3600"}}}}})
    wait_for_status(client, ns, "slow", replicas=4, readyReplicas=2)
    apps.patch_namespaced_replica_set_scale("slow", ns, {"spec": {"replicas": 2}})
    wait_until(lambda: len(live_pods(client, ns, "slow")) == 2, what="two pods deleted")
    assert {p["metadata"]["name"] for p in live_pods(client, ns, "slow")} == first


def test_the_lowest_deletion_cost_goes_first(client: KubeClient, apps: k8s.AppsV1Api,
                                              core: k8s.CoreV1Api, ns: str) -> None:
    apps.create_namespaced_replica_set(ns, replicaset("cost", 3))
    wait_for_status(client, ns, "cost", readyReplicas=3)
    pods = live_pods(client, ns, "cost")
    cheap = pods[0]["metadata"]["name"]  # the oldest: without a cost it would be kept
    for pod in pods:
        cost = "-5" if pod["metadata"]["name"] == cheap else "100"
        core.patch_namespaced_pod(pod["metadata"]["name"], ns,
                                  {"metadata": {"annotations": {DELETION_COST_ANNOTATION: cost}}})
    apps.patch_namespaced_replica_set_scale("cost", ns, {"spec": {"replicas": 2}})
    wait_until(lambda: len(live_pods(client, ns, "cost")) == 2, what="one pod deleted")
    assert cheap not in {p["metadata"]["name"] for p in live_pods(client, ns, "cost")}


def test_a_killed_pod_is_replaced_at_once(client: KubeClient, apps: k8s.AppsV1Api,
                                          core: k8s.CoreV1Api, ns: str) -> None:
    apps.create_namespaced_replica_set(ns, replicaset("kept", 2))
    wait_for_status(client, ns, "kept", readyReplicas=2)
    victim = live_pods(client, ns, "kept")[0]["metadata"]["name"]
    core.delete_namespaced_pod(victim, ns)
    wait_until(lambda: len(live_pods(client, ns, "kept")) == 2
               and victim not in {p["metadata"]["name"] for p in live_pods(client, ns, "kept")},
               what="the killed pod replaced")
    wait_for_status(client, ns, "kept", replicas=2, readyReplicas=2)
    gone = wait_for(lambda: [p for p in client.list(PODS, ns)[0]
                             if p["metadata"]["name"] == victim],
                    lambda found: not found, what="the killed pod gone")
    assert gone == []


def test_an_orphan_is_adopted_and_a_relabelled_pod_released(
    client: KubeClient, apps: k8s.AppsV1Api, core: k8s.CoreV1Api, ns: str
) -> None:
    orphan = {"apiVersion": "v1", "kind": "Pod",
              "metadata": {"name": "stray", **template("adopt")["metadata"]},
              "spec": template("adopt")["spec"]}
    core.create_namespaced_pod(ns, orphan)
    created = apps.create_namespaced_replica_set(ns, replicaset("adopt", 2))
    wait_for_status(client, ns, "adopt", replicas=2, readyReplicas=2)
    stray = client.get(PODS, "stray", ns)
    assert owner_uid(stray) == created.metadata.uid
    assert len(live_pods(client, ns, "adopt")) == 2
    assert len(event_messages(client, ns, "SuccessfulCreate")) == 1

    core.patch_namespaced_pod("stray", ns, {"metadata": {"labels": {"app": "elsewhere"}}})
    wait_until(lambda: owner_uid(client.get(PODS, "stray", ns)) is None, what="stray released")
    wait_until(lambda: len(live_pods(client, ns, "adopt")) == 2, what="a pod made in its place")
    released = client.get(PODS, "stray", ns)
    assert not any(k.startswith("jobmachine.dev/") for k in released["metadata"]["labels"])
    assert "jobmachine.dev/tracking" not in (released["metadata"].get("finalizers") or ())
    core.delete_namespaced_pod("stray", ns)


def test_min_ready_seconds_holds_availability_back(client: KubeClient, apps: k8s.AppsV1Api,
                                                   ns: str) -> None:
    apps.create_namespaced_replica_set(ns, replicaset("patient", 2, minReadySeconds=3))
    ready = wait_for_status(client, ns, "patient", readyReplicas=2)
    assert ready.get("availableReplicas", 0) == 0
    became_ready = time.monotonic()
    wait_for_status(client, ns, "patient", availableReplicas=2)
    assert time.monotonic() - became_ready >= 1.5


def test_a_replication_controller_runs_on_the_same_machine(
    client: KubeClient, core: k8s.CoreV1Api, ns: str
) -> None:
    rc = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "legacy"},
          "spec": {"replicas": 2, "selector": {"app": "legacy"},
                   "template": template("legacy")}}
    created = core.create_namespaced_replication_controller(ns, rc)
    found = wait_for(lambda: core.read_namespaced_replication_controller("legacy", ns).status,
                     lambda s: (s.ready_replicas or 0) == 2, what="rc legacy ready")
    assert found is not None and found.replicas == 2 and found.available_replicas == 2
    assert all(owner_uid(p) == created.metadata.uid for p in live_pods(client, ns, "legacy"))
    core.patch_namespaced_replication_controller_scale("legacy", ns, {"spec": {"replicas": 0}})
    wait_until(lambda: not live_pods(client, ns, "legacy"), what="rc scaled to 0")



def test_an_orphan_made_later_is_adopted_at_once_and_the_surplus_deleted(
    client: KubeClient, apps: k8s.AppsV1Api, core: k8s.CoreV1Api, ns: str
) -> None:
    apps.create_namespaced_replica_set(ns, replicaset("late", 1))
    wait_for_status(client, ns, "late", readyReplicas=1)
    (kept,) = names(live_pods(client, ns, "late"))
    orphan = {"apiVersion": "v1", "kind": "Pod",
              "metadata": {"name": "stray", **template("late")["metadata"]},
              "spec": template("late")["spec"]}
    core.create_namespaced_pod(ns, orphan)
    # Well before the periodic resync: the orphan's own watch event queues the ReplicaSet.
    deleted = wait_for(lambda: event_messages(client, ns, "SuccessfulDelete"), bool,
                       what="one of the two pods deleted as the surplus", timeout=15)
    # Only a pod of the ReplicaSet's is its surplus: the orphan was adopted first, as
    # upstream. Which one goes is upstream's rank: the orphan while it is not ready yet, and
    # by uid once both are ready within one power-of-two bucket of age (a loaded machine).
    assert deleted in (["Deleted pod: stray"], [f"Deleted pod: {kept}"])
    (left,) = live_pods(client, ns, "late")
    assert left["metadata"]["name"] in {kept, "stray"} and deleted != [
        f"Deleted pod: {left['metadata']['name']}"]
    assert owner_uid(left) == client.get(REPLICASETS, "late", ns)["metadata"]["uid"]


def test_in_a_cluster_the_engine_leaves_replicasets_alone() -> None:
    """Without standing in for kube-controller-manager (a real cluster, which runs every
    ReplicaSet), the engine does not even watch them: no pods, no finalizer, no status."""
    settings = EngineSettings(**{**FAST.model_dump(), "stand_in_for_built_ins": False})
    with running_engineless() as server:
        admin = KubeClient.from_kubeconfig(server.kubeconfig)
        engine = start_engine(KubeClient.from_kubeconfig(server.kubeconfig), settings)
        try:
            engine.engine.wait_until_governed("Job", timeout_s=30)
            ns = new_namespace(admin)
            admin.create(REPLICASETS, replicaset("theirs", 2), ns)
            time.sleep(2)
            found = admin.get(REPLICASETS, "theirs", ns)
            assert not found["metadata"].get("finalizers")
            assert not (found["metadata"].get("annotations") or {})
            assert (found.get("status") or {}) in ({}, {"replicas": 0})  # the server's own
            assert admin.list(PODS, ns)[0] == []
            assert "ReplicaSet" not in engine.engine.caches.jobs
            assert engine.engine.machines.governed("ReplicaSet") is not None
        finally:
            engine.stop()
            admin.close()
