"""apps/v1 Deployments rolled out by machines/deployment.yaml (its ReplicaSets run by
machines/replicaset.yaml) on the embedded API server, through the official Python client's
AppsV1Api as a user makes them.

The simulated node runs each pod for an hour and marks it Ready `ready-seconds` after it
starts when its container has a readiness probe (never, with a very long delay).
"""

from __future__ import annotations

import time
from typing import Any

from kubernetes import client as k8s

from engine.controller.rollouts.numbers import template_hash
from engine.kube.client import KubeClient
from engine.kube.resources import Resource
from engine.settings import EngineSettings
from tests.integration.engine.helpers import (
    FAST,
    RUN_SECONDS,
    Obj,
    new_namespace,
    running_engineless,
    start_engine,
    wait_for,
)

READY_SECONDS = "sim.jobmachine.dev/ready-seconds"
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment", namespaced=True)
REPLICASETS = Resource("apps", "v1", "replicasets", "ReplicaSet", namespaced=True)


def deployment(name: str, replicas: int, *, image: str = "nginx:1", ready_s: float = 0.2,
               **spec: Any) -> Obj:
    container = {"name": "web", "image": image,
                 "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 1}}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name},
                                           "annotations": {RUN_SECONDS: "3600",
                                                           READY_SECONDS: str(ready_s)}},
                              "spec": {"containers": [container]}},
                 **spec},
    }


def replica_sets(client: KubeClient, ns: str) -> dict[str, Obj]:
    return {rs["metadata"]["name"]: rs for rs in client.list(REPLICASETS, ns)[0]}


def status(client: KubeClient, ns: str, name: str) -> Obj:
    return client.get(DEPLOYMENTS, name, ns).get("status") or {}


def condition(found: Obj, kind: str) -> Obj:
    return next((c for c in found.get("conditions") or () if c["type"] == kind), {})


def rolled_out(client: KubeClient, ns: str, name: str, replicas: int) -> Obj:
    """The status once every wanted pod is updated and available and no old one is left
    (what `kubectl rollout status` waits for)."""
    deployed = client.get(DEPLOYMENTS, name, ns)
    generation = deployed["metadata"]["generation"]
    return wait_for(
        lambda: status(client, ns, name),
        lambda s: (s.get("observedGeneration", 0) >= generation
                   and s.get("updatedReplicas", 0) == replicas == s.get("replicas", 0)
                   and s.get("availableReplicas", 0) == replicas
                   and condition(s, "Progressing").get("reason") == "NewReplicaSetAvailable"),
        what=f"deployment {ns}/{name} rolled out to {replicas}")


def set_image(apps: k8s.AppsV1Api, ns: str, name: str, image: str) -> None:
    apps.patch_namespaced_deployment(name, ns, {"spec": {"template": {"spec": {
        "containers": [{"name": "web", "image": image}]}}}})


def test_a_deployment_makes_its_replica_set_and_reports_its_rollout(
    client: KubeClient, apps: k8s.AppsV1Api, ns: str
) -> None:
    created = apps.create_namespaced_deployment(ns, deployment("web", 3))
    found = rolled_out(client, ns, "web", 3)
    assert found["readyReplicas"] == 3 and "unavailableReplicas" not in found
    assert condition(found, "Available")["reason"] == "MinimumReplicasAvailable"
    assert condition(found, "Available")["message"] == "Deployment has minimum availability."
    ((name, rs),) = replica_sets(client, ns).items()
    digest = rs["metadata"]["labels"]["pod-template-hash"]
    assert name == f"web-{digest}"
    assert condition(found, "Progressing")["message"] == (
        f'ReplicaSet "{name}" has successfully progressed.')
    assert rs["spec"]["template"]["metadata"]["labels"] == {"app": "web",
                                                             "pod-template-hash": digest}
    assert rs["metadata"]["ownerReferences"][0]["uid"] == created.metadata.uid
    annotations = rs["metadata"]["annotations"]
    assert (annotations["deployment.kubernetes.io/revision"],
            annotations["deployment.kubernetes.io/desired-replicas"],
            annotations["deployment.kubernetes.io/max-replicas"]) == ("1", "3", "4")
    read = apps.read_namespaced_deployment("web", ns)
    assert read.metadata.annotations["deployment.kubernetes.io/revision"] == "1"

    apps.patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": 5}})
    rolled_out(client, ns, "web", 5)
    assert replica_sets(client, ns)[name]["spec"]["replicas"] == 5


def test_history_beyond_the_limit_is_deleted(
    client: KubeClient, apps: k8s.AppsV1Api, ns: str
) -> None:
    apps.create_namespaced_deployment(ns, deployment("web", 1, revisionHistoryLimit=1))
    rolled_out(client, ns, "web", 1)
    for version in (2, 3):
        set_image(apps, ns, "web", f"nginx:{version}")
        rolled_out(client, ns, "web", 1)
    sets = wait_for(lambda: replica_sets(client, ns), lambda s: len(s) == 2,
                    what="the oldest ReplicaSet deleted")
    revisions = sorted(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
                       for rs in sets.values())
    assert revisions == ["2", "3"]


def test_a_rollout_without_progress_exceeds_its_deadline(
    client: KubeClient, apps: k8s.AppsV1Api, ns: str
) -> None:
    apps.create_namespaced_deployment(
        ns, deployment("web", 1, ready_s=100000, progressDeadlineSeconds=2))
    found = wait_for(lambda: status(client, ns, "web"),
                     lambda s: condition(s, "Progressing").get("status") == "False",
                     what="Progressing False")
    progressing = condition(found, "Progressing")
    (name,) = replica_sets(client, ns)
    assert progressing["reason"] == "ProgressDeadlineExceeded"
    assert progressing["message"] == f'ReplicaSet "{name}" has timed out progressing.'
    assert condition(found, "Available")["reason"] == "MinimumReplicasUnavailable"


def test_a_paused_deployment_rolls_nothing_out_until_resumed(
    client: KubeClient, apps: k8s.AppsV1Api, ns: str
) -> None:
    apps.create_namespaced_deployment(ns, deployment("web", 1))
    rolled_out(client, ns, "web", 1)
    apps.patch_namespaced_deployment("web", ns, {"spec": {"paused": True}})
    wait_for(lambda: status(client, ns, "web"),
             lambda s: condition(s, "Progressing").get("reason") == "DeploymentPaused",
             what="Progressing DeploymentPaused")
    set_image(apps, ns, "web", "nginx:2")
    generation = client.get(DEPLOYMENTS, "web", ns)["metadata"]["generation"]
    wait_for(lambda: status(client, ns, "web"),
             lambda s: s.get("observedGeneration", 0) >= generation, what="observed")
    assert len(replica_sets(client, ns)) == 1
    apps.patch_namespaced_deployment("web", ns, {"spec": {"paused": False}})
    rolled_out(client, ns, "web", 1)
    assert len(replica_sets(client, ns)) == 2


def test_a_matching_orphan_replica_set_is_adopted_and_one_that_stops_matching_released(
    client: KubeClient, apps: k8s.AppsV1Api, ns: str
) -> None:
    wanted = deployment("web", 2)
    orphan = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
              "metadata": {"name": "web-orphan", "labels": {"app": "web"}},
              "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                       "template": wanted["spec"]["template"]}}
    apps.create_namespaced_replica_set(ns, orphan)
    created = apps.create_namespaced_deployment(ns, wanted)
    rolled_out(client, ns, "web", 2)
    sets = replica_sets(client, ns)
    assert list(sets) == ["web-orphan"]  # adopted, and its template is the Deployment's
    adopted = sets["web-orphan"]
    assert adopted["metadata"]["ownerReferences"][0]["uid"] == created.metadata.uid
    assert adopted["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"

    apps.patch_namespaced_replica_set("web-orphan", ns, {"metadata": {"labels": {"app": "x"}}})
    wait_for(lambda: replica_sets(client, ns)["web-orphan"],
             lambda rs: not rs["metadata"].get("ownerReferences"), what="web-orphan released")
    found = rolled_out(client, ns, "web", 2)
    (made,) = [name for name in replica_sets(client, ns) if name != "web-orphan"]
    assert made.startswith("web-") and "collisionCount" not in found


def without_nulls(value: Any) -> Any:
    """The template as the machine's CEL gives it: null values left out, at any depth."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


def test_a_name_taken_by_another_template_counts_a_collision(
    client: KubeClient, apps: k8s.AppsV1Api, ns: str
) -> None:
    apps.create_namespaced_deployment(ns, deployment("web", 1, paused=True))
    template = without_nulls(client.get(DEPLOYMENTS, "web", ns)["spec"]["template"])
    taken = f"web-{template_hash(template)}"
    other = deployment("other", 1)["spec"]
    apps.create_namespaced_replica_set(ns, {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": taken, "labels": {"app": "other"}}, "spec": other})
    apps.patch_namespaced_deployment("web", ns, {"spec": {"paused": False}})
    found = rolled_out(client, ns, "web", 1)
    assert found["collisionCount"] == 1
    (made,) = [name for name in replica_sets(client, ns) if name != taken]
    assert made == f"web-{template_hash(template, 1)}"


def test_in_a_cluster_the_engine_leaves_deployments_alone() -> None:
    """Without standing in for kube-controller-manager (a real cluster, which runs every
    Deployment), the engine does not even watch them: no ReplicaSet, no annotation, no
    status; it still validates and serves the machine."""
    settings = EngineSettings(**{**FAST.model_dump(), "stand_in_for_built_ins": False})
    with running_engineless() as server:
        admin = KubeClient.from_kubeconfig(server.kubeconfig)
        engine = start_engine(KubeClient.from_kubeconfig(server.kubeconfig), settings)
        try:
            engine.engine.wait_until_governed("Job", timeout_s=30)
            ns = new_namespace(admin)
            admin.create(DEPLOYMENTS, deployment("theirs", 2), ns)
            time.sleep(2)
            found = admin.get(DEPLOYMENTS, "theirs", ns)
            assert not found["metadata"].get("finalizers")
            assert not (found["metadata"].get("annotations") or {})
            assert not found.get("status")
            assert admin.list(REPLICASETS, ns)[0] == []
            assert "Deployment" not in engine.engine.caches.jobs
            assert engine.engine.machines.governed("Deployment") is not None
        finally:
            engine.stop()
            admin.close()


def test_an_orphan_made_later_is_adopted_at_once_and_scaled_down_as_old(
    client: KubeClient, apps: k8s.AppsV1Api, ns: str
) -> None:
    """Its own creation queues the Deployments of its namespace (upstream queues those whose
    selector matches it), well before the periodic resync (300 s)."""
    created = apps.create_namespaced_deployment(ns, deployment("web", 1))
    rolled_out(client, ns, "web", 1)
    template = deployment("web", 1, image="nginx:0")["spec"]["template"]
    apps.create_namespaced_replica_set(ns, {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "stray", "labels": {"app": "web"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": template}})
    stray = wait_for(lambda: replica_sets(client, ns)["stray"],
                     lambda rs: bool(rs["metadata"].get("ownerReferences"))
                     and rs["spec"]["replicas"] == 0,
                     what="the stray ReplicaSet adopted and scaled down", timeout=15)
    assert stray["metadata"]["ownerReferences"][0]["uid"] == created.metadata.uid


def test_min_ready_seconds_is_the_new_replica_sets_and_follows_the_deployment(
    client: KubeClient, apps: k8s.AppsV1Api, ns: str
) -> None:
    apps.create_namespaced_deployment(ns, deployment("web", 1, minReadySeconds=1))
    rolled_out(client, ns, "web", 1)
    ((name, rs),) = replica_sets(client, ns).items()
    assert rs["spec"]["minReadySeconds"] == 1
    apps.patch_namespaced_deployment("web", ns, {"spec": {"minReadySeconds": 3}})
    wait_for(lambda: replica_sets(client, ns)[name], lambda r: r["spec"]["minReadySeconds"] == 3,
             what="the ReplicaSet's minReadySeconds updated")
    assert list(replica_sets(client, ns)) == [name]  # not a new template: no new ReplicaSet


def test_a_refused_replica_set_is_said_as_upstreams_replica_set_create_error(
    client: KubeClient, apps: k8s.AppsV1Api, ns: str
) -> None:
    """A Deployment named near the 253 characters a name may have: its ReplicaSet's name,
    with the hash, is too long, and the API server refuses it."""
    name = "w" * 250
    body = deployment("long", 1)
    body["metadata"]["name"] = name
    apps.create_namespaced_deployment(ns, body)
    found = wait_for(lambda: status(client, ns, name),
                     lambda s: condition(s, "Progressing").get("status") == "False",
                     what="Progressing False")
    progressing = condition(found, "Progressing")
    assert progressing["reason"] == "ReplicaSetCreateError"
    assert progressing["message"].startswith(f'Failed to create new replica set "{name}-')
    # The Warning Event of the same words cannot be stored: its name (the Deployment's and
    # a suffix) is too long too, for upstream's recorder as for the engine's.
    assert replica_sets(client, ns) == {}
