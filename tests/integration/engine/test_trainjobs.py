"""TrainJobs (machines/trainjob.yaml) on the embedded cluster: a TrainJob on the shipped
torch-distributed runtime makes its JobSet (run by machines/jobset.yaml), whose Jobs (run
by batch-job) make pods with torchrun's PET_* variables, and ends Complete as Trainer
reports it; a TrainJob whose runtime is missing waits with Trainer's Warning event and
goes on once the runtime is made (governs.references watches it).

Pods are simulated (each runs 0.2 s and exits 0 unless `sim.jobmachine.dev/*` annotations
on the runtime's pod template say otherwise).
"""

from __future__ import annotations

from typing import Any

import orjson

from engine.controller.machines.served import BUILT_IN_JOB_KINDS
from engine.kube.client import KubeClient
from engine.kube.errors import NotFound
from engine.kube.resources import PODS
from tests.integration.engine.helpers import (
    EXIT_CODES,
    RUN_SECONDS,
    Obj,
    count_events,
    job_events,
    wait_for,
)
from tests.integration.engine.machinejobs import conditions_of, get_obj, wait_for_condition_of
from tests.kinds import KINDS, NAMED

TRAINJOBS = KINDS["TrainJob"]
JOBSETS = KINDS["JobSet"]
CLUSTER_RUNTIMES = NAMED["ClusterTrainingRuntime"]
JOBS = BUILT_IN_JOB_KINDS[("batch/v1", "Job")]


def trainjob(name: str, ns: str, runtime: str, **trainer: Any) -> Obj:
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"runtimeRef": {"name": runtime}, "trainer": trainer}}


def runtime(name: str, *, exit_code: str = "0", run_s: float = 0.2) -> Obj:
    """A ClusterTrainingRuntime like torch-distributed whose pods run `run_s` and exit with
    `exit_code`."""
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
        "metadata": {"name": name, "labels": {"trainer.kubeflow.org/framework": "torch"}},
        "spec": {"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {
            "metadata": {"labels": {"example.com/team": "ml"},
                         "annotations": {"example.com/note": "from the runtime"}},
            "spec": {
            "replicatedJobs": [{"name": "node", "template": {
                "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                "spec": {"template": {
                    "metadata": {"annotations": {EXIT_CODES: exit_code,
                                                 RUN_SECONDS: str(run_s)}},
                    "spec": {"containers": [{"name": "node", "image": "pytorch/pytorch:2.3",
                                             "env": [{"name": "FROM_RUNTIME", "value": "1"}]}]},
                }},
            }}]}}},
    }


def get(client: KubeClient, ns: str, name: str) -> Obj | None:
    return get_obj(client, TRAINJOBS, ns, name)


conditions = conditions_of


def wait_for_condition(client: KubeClient, ns: str, name: str, type_: str,
                       status: str = "True", *, timeout: float = 60.0) -> Obj:
    return wait_for_condition_of(client, TRAINJOBS, ns, name, type_, status_=status,
                                 timeout=timeout)


def env_of(pod: Obj) -> dict[str, Any]:
    container = next(c for c in pod["spec"]["containers"] if c["name"] == "node")
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env") or ()}


def test_a_trainjob_on_torch_distributed_runs_as_a_jobset_and_completes(
    client: KubeClient, ns: str
) -> None:
    made = client.create(TRAINJOBS, trainjob(
        "mnist", ns, "torch-distributed", numNodes=2, command=["torchrun", "train.py"],
        env=[{"name": "EPOCHS", "value": "3"}],
        resourcesPerNode={"requests": {"cpu": "1500m"}}), ns)

    done = wait_for_condition(client, ns, "mnist", "Complete")

    complete = conditions(done)["Complete"]
    assert (complete["reason"], complete["message"]) == (
        "AllJobsCompleted", "jobset completed successfully")
    assert list(conditions(done)) == ["Complete"]  # no Created or Running: Trainer has none
    assert done["status"]["jobsStatus"] == [
        {"name": "node", "ready": 0, "succeeded": 1, "failed": 0, "active": 0, "suspended": 0}]
    jobset = client.get(JOBSETS, "mnist", ns)
    owner = jobset["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"],
            owner["blockOwnerDeletion"]) == ("TrainJob", "mnist", made["metadata"]["uid"],
                                             True, True)
    (node,) = jobset["spec"]["replicatedJobs"]
    assert (node["name"], node["replicas"]) == ("node", 1)
    assert (node["template"]["spec"]["parallelism"],
            node["template"]["spec"]["completions"]) == (2, 2)
    assert jobset["spec"]["suspend"] is False
    pods, _ = client.list(PODS, ns, label_selector="jobset.sigs.k8s.io/jobset-name=mnist")
    assert sorted(p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"]
                  for p in pods) == ["0", "1"]
    rank = {"fieldRef": {"apiVersion": "v1", "fieldPath":  # apiVersion: the API's default
                         "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}
    for pod in pods:
        container = next(c for c in pod["spec"]["containers"] if c["name"] == "node")
        assert container["image"] == "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"
        assert container["command"] == ["torchrun", "train.py"]
        assert container["resources"]["requests"] == {"cpu": "1500m"}
        assert {"containerPort": 29500} in [
            {k: v for k, v in p.items() if k == "containerPort"} for p in container["ports"]]
        assert list(env_of(pod).items())[:6] == [
            ("EPOCHS", "3"), ("PET_NNODES", "2"), ("PET_NPROC_PER_NODE", "2"),
            ("PET_NODE_RANK", rank), ("PET_MASTER_ADDR", "mnist-node-0-0.mnist"),
            ("PET_MASTER_PORT", "29500")]
    assert count_events(job_events(client, done), "TrainJobResourcesCreationFailed") == 0


def test_a_missing_runtime_waits_with_trainers_warning_then_runs_once_it_is_made(
    client: KubeClient, ns: str
) -> None:
    name = f"rt-{ns}"
    client.create(TRAINJOBS, trainjob("waits", ns, name, numNodes=1), ns)
    message = ("TrainJob resources reconciliation failed: not found ClusterTrainingRuntime "
               f"specified in TrainJob: clustertrainingruntimes.trainer.kubeflow.org "
               f"\"{name}\" not found")

    def warned(events: list[Obj]) -> bool:
        return any(e["reason"] == "TrainJobResourcesCreationFailed" for e in events)

    job = get(client, ns, "waits")
    assert job is not None
    events = wait_for(lambda: job_events(client, job), warned, what="the runtime warning")
    warning = next(e for e in events if e["reason"] == "TrainJobResourcesCreationFailed")
    assert (warning["type"], warning["message"]) == ("Warning", message)
    try:
        client.get(JOBSETS, "waits", ns)
        raise AssertionError("a JobSet was made without its runtime")
    except NotFound:
        pass
    assert conditions(get(client, ns, "waits")) == {}

    client.create(CLUSTER_RUNTIMES, runtime(name))
    try:
        done = wait_for_condition(client, ns, "waits", "Complete")
    finally:
        client.delete(CLUSTER_RUNTIMES, name)
    pods, _ = client.list(PODS, ns, label_selector="jobset.sigs.k8s.io/jobset-name=waits")
    assert [env_of(p)["FROM_RUNTIME"] for p in pods] == ["1"]
    jobset = client.get(JOBSETS, "waits", ns)  # the runtime template's metadata, as Trainer's
    assert jobset["metadata"]["labels"]["example.com/team"] == "ml"
    assert jobset["metadata"]["annotations"]["example.com/note"] == "from the runtime"
    assert orjson.loads(done["metadata"]["annotations"]["jobmachine.dev/status"])["phase"] == (
        "Complete")


def test_a_failed_jobset_fails_the_trainjob_with_its_reason(
    client: KubeClient, ns: str
) -> None:
    name = f"rt-fail-{ns}"
    client.create(CLUSTER_RUNTIMES, runtime(name, exit_code="3"))
    try:
        client.create(TRAINJOBS, trainjob("breaks", ns, name), ns)
        done = wait_for_condition(client, ns, "breaks", "Failed")
    finally:
        client.delete(CLUSTER_RUNTIMES, name)
    failed = conditions(done)["Failed"]
    assert (failed["reason"], failed["message"]) == (
        "FailedJobs", "jobset failed due to one or more job failures (first failed job: "
        "breaks-node-0)")


def test_a_trainjob_past_its_deadline_fails_and_its_jobset_is_deleted(
    client: KubeClient, ns: str
) -> None:
    name = f"rt-slow-{ns}"
    client.create(CLUSTER_RUNTIMES, runtime(name, run_s=60))
    try:
        job = trainjob("slow", ns, name)
        job["spec"]["activeDeadlineSeconds"] = 2
        client.create(TRAINJOBS, job, ns)
        wait_for(lambda: client.list(JOBSETS, ns)[0], lambda found: len(found) == 1,
                 what="the JobSet")
        done = wait_for_condition(client, ns, "slow", "Failed")
    finally:
        client.delete(CLUSTER_RUNTIMES, name)
    failed = conditions(done)["Failed"]
    assert (failed["reason"], failed["message"]) == (
        "DeadlineExceeded", "TrainJob exceeded its active deadline")
    wait_for(lambda: client.list(JOBSETS, ns)[0], lambda found: found == [],
             what="the JobSet deleted")


def test_a_trainjob_naming_another_controller_is_left_alone(
    client: KubeClient, ns: str
) -> None:
    job = trainjob("elsewhere", ns, "torch-distributed")
    job["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    client.create(TRAINJOBS, job, ns)
    client.create(TRAINJOBS, trainjob("here", ns, "torch-distributed"), ns)

    wait_for_condition(client, ns, "here", "Complete")
    assert [j["metadata"]["name"] for j in client.list(JOBSETS, ns)[0]] == ["here"]
    assert (get(client, ns, "elsewhere") or {}).get("status") is None


def test_a_namespaced_training_runtime_is_found_in_the_trainjobs_namespace(
    client: KubeClient, ns: str
) -> None:
    local = runtime("local") | {"kind": "TrainingRuntime"}
    client.create(NAMED["TrainingRuntime"], local, ns)
    job = trainjob("local", ns, "local", numNodes=1)
    job["spec"]["runtimeRef"]["kind"] = "TrainingRuntime"
    client.create(TRAINJOBS, job, ns)

    wait_for_condition(client, ns, "local", "Complete")
    pods, _ = client.list(PODS, ns, label_selector="jobset.sigs.k8s.io/jobset-name=local")
    assert [env_of(p)["FROM_RUNTIME"] for p in pods] == ["1"]
