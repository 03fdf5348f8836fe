"""TrainJobs using what a runtime and its patches add (machines/trainjob.yaml) on the
embedded cluster: runtime patches reach the JobSet and its pods, an initializer runs first
with the TrainJob's storage URI, a coscheduling runtime's pods are one gang, and what
Trainer's webhook refuses ends the TrainJob Failed in its words.

Pods are simulated (each runs 0.2 s and exits 0 unless `sim.jobmachine.dev/*` annotations
say otherwise).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from engine.controller.machines.install import crd_resources
from engine.kube.client import KubeClient
from engine.kube.errors import ApiError
from engine.kube.resources import NODES, PODS, SECRETS, SERVICE_ACCOUNTS
from tests.integration.engine.helpers import RUN_SECONDS, Obj, wait_for
from tests.integration.engine.test_trainjobs import (
    JOBSETS,
    TRAINJOBS,
    conditions,
    env_of,
    runtime,
    trainjob,
    wait_for_condition,
)
from tests.kinds import CRDS, NAMED

CLUSTER_RUNTIMES = NAMED["ClusterTrainingRuntime"]
RUNTIMES = NAMED["TrainingRuntime"]
PLUGINS_GROUPS = {r.group: r for r in crd_resources(CRDS / "podgroups")}["scheduling.x-k8s.io"]
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"


def pods(client: KubeClient, ns: str, jobset: str, job: str | None = None) -> list[Obj]:
    selector = f"jobset.sigs.k8s.io/jobset-name={jobset}"
    if job is not None:
        selector += f",jobset.sigs.k8s.io/replicatedjob-name={job}"
    return client.list(PODS, ns, label_selector=selector)[0]


def test_runtime_patches_reach_the_jobset_and_its_pods(client: KubeClient, ns: str) -> None:
    client.create(SERVICE_ACCOUNTS, {"apiVersion": "v1", "kind": "ServiceAccount",
                                     "metadata": {"name": "training-sa"}}, ns)
    job = trainjob("patched", ns, "torch-distributed", numNodes=2)
    job["spec"]["runtimePatches"] = [{
        "manager": "example.io/platform-team",
        "trainingRuntimeSpec": {"template": {
            "metadata": {"labels": {"team": "ml-platform"},
                         "annotations": {"prometheus.io/scrape": "true"}},
            "spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": {
                "metadata": {"labels": {"example.com/pod": "patched"}},
                "spec": {"serviceAccountName": "training-sa",
                         "nodeSelector": {"kubernetes.io/os": "linux"},
                         "tolerations": [{"key": "training-workload", "operator": "Equal",
                                          "value": "true", "effect": "NoSchedule"}]}}}}}]}}}}]
    client.create(TRAINJOBS, job, ns)

    done = wait_for_condition(client, ns, "patched", "Complete")

    assert list(conditions(done)) == ["Complete"]
    jobset = client.get(JOBSETS, "patched", ns)
    assert jobset["metadata"]["labels"]["team"] == "ml-platform"
    assert jobset["metadata"]["annotations"]["prometheus.io/scrape"] == "true"
    made = pods(client, ns, "patched")
    assert len(made) == 2
    for pod in made:
        assert pod["metadata"]["labels"]["example.com/pod"] == "patched"
        assert pod["spec"]["serviceAccountName"] == "training-sa"
        assert pod["spec"]["nodeSelector"] == {"kubernetes.io/os": "linux"}
        assert {"key": "training-workload", "operator": "Equal", "value": "true",
                "effect": "NoSchedule"} in pod["spec"]["tolerations"]
        assert env_of(pod)["PET_NNODES"] == "2"


def test_runtime_patches_change_only_while_the_trainjob_is_suspended(
    client: KubeClient, ns: str
) -> None:
    job = trainjob("held", ns, "torch-distributed")
    job["spec"]["suspend"] = True
    client.create(TRAINJOBS, job, ns)
    patches = [{"manager": "kueue.x-k8s.io/manager", "trainingRuntimeSpec": {"template": {
        "spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": {
            "spec": {"nodeSelector": {"flavor": "spot"}}}}}}]}}}}]

    # Suspended before the update: allowed (Kueue's way: patches, then resume).
    client.patch(TRAINJOBS, "held", {"spec": {"runtimePatches": patches}}, namespace=ns)
    client.patch(TRAINJOBS, "held", {"spec": {"suspend": False}}, namespace=ns)
    wait_for_condition(client, ns, "held", "Complete")
    assert [p["spec"]["nodeSelector"] for p in pods(client, ns, "held")] == [{"flavor": "spot"}]

    with pytest.raises(ApiError) as refused:
        client.patch(TRAINJOBS, "held", {"spec": {"runtimePatches": None}}, namespace=ns)
    assert refused.value.status == 422
    assert refused.value.message == (
        'TrainJob.trainer.kubeflow.org "held" is invalid: spec.runtimePatches: Forbidden: '
        "RuntimePatches can only be modified when the TrainJob is suspended before or after "
        "the update")


def initializer_runtime(name: str) -> Obj:
    """Trainer's examples/yaml/05-multi-step.yaml runtime: a dataset initializer the node
    job depends on, each pod running 0.5 s (simulated)."""
    made = runtime(name, run_s=0.5) | {"kind": "TrainingRuntime"}
    (node,) = made["spec"]["template"]["spec"]["replicatedJobs"]
    node["dependsOn"] = [{"name": "dataset-initializer", "status": "Complete"}]
    initializer = {"name": "dataset-initializer", "replicas": 1, "template": {
        "metadata": {"labels": {ANCESTOR: "dataset-initializer"}},
        "spec": {"template": {
            "metadata": {"annotations": {RUN_SECONDS: "0.5"}},
            "spec": {"containers": [{
                "name": "dataset-initializer",
                "image": "ghcr.io/kubeflow/trainer/dataset-initializer",
                "env": [{"name": "STORAGE_URI", "value": "hf://from-the-runtime"}],
                "volumeMounts": [{"name": "initializer", "mountPath": "/workspace"}]}],
                "volumes": [{"name": "initializer", "emptyDir": {}}]}}}}}
    made["spec"]["template"]["spec"]["replicatedJobs"] = [initializer, node]
    return made


def test_an_initializer_runs_first_with_the_trainjobs_storage_uri(
    client: KubeClient, ns: str
) -> None:
    client.create(RUNTIMES, initializer_runtime("with-init"), ns)
    client.create(SECRETS, {"apiVersion": "v1", "kind": "Secret",
                            "metadata": {"name": "hf-secret"},
                            "stringData": {"HF_TOKEN": "t"}}, ns)
    job = trainjob("multi-step", ns, "with-init", numNodes=2)
    job["spec"]["runtimeRef"]["kind"] = "TrainingRuntime"
    job["spec"]["initializer"] = {"dataset": {
        "storageUri": "hf://tatsu-lab/alpaca",
        "env": [{"name": "IGNORE_PATTERNS", "value": "*.md"}],
        "secretRef": {"name": "hf-secret"}}}
    client.create(TRAINJOBS, job, ns)

    done = wait_for_condition(client, ns, "multi-step", "Complete")

    assert sorted((s["name"], s["succeeded"]) for s in done["status"]["jobsStatus"]) == [
        ("dataset-initializer", 1), ("node", 1)]
    (initializer,) = pods(client, ns, "multi-step", "dataset-initializer")
    container = initializer["spec"]["containers"][0]
    # Then JOB_COMPLETION_INDEX, which the Job controller adds to an Indexed Job's pods.
    assert list(env_of_container(container).items())[:2] == [
        ("STORAGE_URI", "hf://tatsu-lab/alpaca"), ("IGNORE_PATTERNS", "*.md")]
    assert container["envFrom"] == [{"secretRef": {"name": "hf-secret"}}]
    finished = container_finished(initializer)
    nodes = pods(client, ns, "multi-step", "node")
    assert len(nodes) == 2
    # dependsOn Complete: the node Job (and so its pods) is made once the initializer ended.
    assert all(p["metadata"]["creationTimestamp"] >= finished for p in nodes)


def env_of_container(container: Obj) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env") or ()}


def container_finished(pod: Obj) -> str:
    (status,) = pod["status"]["containerStatuses"]
    return str(status["state"]["terminated"]["finishedAt"])


def coscheduled_runtime(name: str, cpu: str, *, run_s: float = 0.2) -> Obj:
    made = runtime(name, run_s=run_s)
    made["spec"]["podGroupPolicy"] = {"coscheduling": {"scheduleTimeoutSeconds": 120}}
    (node,) = made["spec"]["template"]["spec"]["replicatedJobs"]
    node["template"]["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": cpu}}
    return made


def test_a_coscheduling_runtimes_pods_are_one_gang(client: KubeClient, ns: str) -> None:
    name = f"rt-gang-{ns}"
    client.create(CLUSTER_RUNTIMES, coscheduled_runtime(name, "10m"))
    try:
        client.create(TRAINJOBS, trainjob("gang", ns, name, numNodes=2), ns)
        done = wait_for_condition(client, ns, "gang", "Complete")
    finally:
        client.delete(CLUSTER_RUNTIMES, name)
    assert list(conditions(done)) == ["Complete"]
    group = client.get(PLUGINS_GROUPS, "gang", ns)
    assert group["spec"] == {"minMember": 2, "scheduleTimeoutSeconds": 120}
    owner = group["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("TrainJob", "gang", True)
    assert group["status"]["succeeded"] == 2
    for pod in pods(client, ns, "gang"):
        assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "gang"


def test_a_gang_the_node_cannot_hold_binds_none_of_its_pods(client: KubeClient, ns: str) -> None:
    """Three pods, each asking 45% of the node's CPUs: two would fit alone, the gang of
    three never does, so none is bound."""
    (node,) = client.list(NODES)[0]
    cpus = Decimal(str(node["status"]["allocatable"]["cpu"]).removesuffix("m"))
    millis = cpus if str(node["status"]["allocatable"]["cpu"]).endswith("m") else cpus * 1000
    name = f"rt-big-{ns}"
    client.create(CLUSTER_RUNTIMES, coscheduled_runtime(name, f"{int(millis * 45 / 100)}m"))
    try:
        client.create(TRAINJOBS, trainjob("too-big", ns, name, numNodes=3), ns)
        waiting = wait_for(lambda: pods(client, ns, "too-big"), lambda found: len(found) == 3
                           and all(_unschedulable(p) for p in found), what="3 pods waiting")
        # Read while the runtime exists: the PodGroup's `when` reads it.
        group = client.get(PLUGINS_GROUPS, "too-big", ns)
    finally:
        client.delete(CLUSTER_RUNTIMES, name)
    assert [p["spec"].get("nodeName") for p in waiting] == [None, None, None]
    assert "pod group too-big" in _unschedulable(waiting[0])
    assert group["spec"]["minMember"] == 3


def _unschedulable(pod: Obj) -> str:
    found = [c for c in (pod.get("status") or {}).get("conditions") or ()
             if c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"]
    return str(found[0].get("message")) if found else ""


def test_what_trainers_webhook_refuses_ends_the_trainjob_failed_in_its_words(
    client: KubeClient, ns: str
) -> None:
    job = trainjob("refused", ns, "torch-distributed")
    job["spec"]["initializer"] = {"dataset": {"storageUri": "hf://x"}}
    job["spec"]["runtimePatches"] = [{"manager": "kueue.k8s.io/"}]
    client.create(TRAINJOBS, job, ns)

    done = wait_for_condition(client, ns, "refused", "Failed")

    failed = conditions(done)["Failed"]
    assert (failed["reason"], failed["message"]) == ("FailedValidation", (
        'TrainJob.trainer.kubeflow.org "refused" is invalid: [spec.runtimeRef: Invalid value: '
        '{"name":"torch-distributed","apiGroup":"trainer.kubeflow.org",'
        '"kind":"ClusterTrainingRuntime"}: must have dataset-initializer job when trainJob is '
        'configured with input datasetConfig, spec.runtimePatches.manager: Invalid value: '
        '"kueue.k8s.io/": must be a domain-prefixed path (such as "acme.io/foo")]'))
    assert client.list(JOBSETS, ns)[0] == []


def test_the_shipped_runtime_with_cache_runs_its_initializer_then_the_nodes(
    client: KubeClient, ns: str
) -> None:
    """torch-distributed-with-cache (manifests/trainer-runtimes.yaml): its initializer runs
    first, as the ServiceAccount Trainer's data-cache overlay makes. A TrainJob that sets
    spec.initializer.dataset on it is refused as Trainer v2.3's webhook refuses it (by
    reading): the runtime's initializer container mounts no `initializer` volume."""
    client.create(SERVICE_ACCOUNTS, {"apiVersion": "v1", "kind": "ServiceAccount",
                                     "metadata": {"name": "kubeflow-trainer-cache-initializer"}},
                  ns)
    client.create(TRAINJOBS, trainjob("cached", ns, "torch-distributed-with-cache", numNodes=2),
                  ns)
    with_uri = trainjob("with-uri", ns, "torch-distributed-with-cache")
    with_uri["spec"]["initializer"] = {"dataset": {"storageUri": "cache://schema/table"}}
    client.create(TRAINJOBS, with_uri, ns)

    done = wait_for_condition(client, ns, "cached", "Complete")

    assert sorted(s["name"] for s in done["status"]["jobsStatus"]) == [
        "dataset-initializer", "node"]
    (initializer,) = pods(client, ns, "cached", "dataset-initializer")
    assert initializer["spec"]["serviceAccountName"] == "kubeflow-trainer-cache-initializer"
    env = env_of_container(initializer["spec"]["containers"][0])
    assert (list(env)[:2], env["CACHE_IMAGE"]) == (
        ["CACHE_IMAGE", "TRAIN_JOB_NAME"], "ghcr.io/kubeflow/trainer/data-cache:v2.3.0")
    nodes = pods(client, ns, "cached", "node")
    assert len(nodes) == 2
    assert all(p["metadata"]["creationTimestamp"] >= container_finished(initializer)
               for p in nodes)
    assert env_of(nodes[0])["TRAIN_JOB_NAME"]["fieldRef"]["fieldPath"] == (
        "metadata.labels['jobset.sigs.k8s.io/jobset-name']")
    refused = conditions(wait_for_condition(client, ns, "with-uri", "Failed"))["Failed"]
    assert refused["message"].endswith(
        "must have volumeMount with name - initializer in container dataset-initializer of "
        "the dataset-initializer job")
