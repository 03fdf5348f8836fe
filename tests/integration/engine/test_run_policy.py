"""runPolicy beyond restarts: managedBy, suspend and resume, and jobs that fail validation."""

from __future__ import annotations

import time

from engine.app.up import LocalCluster
from engine.kube.client import KubeClient
from tests.integration.engine.helpers import (
    CLEANUP,
    PYTORCHJOBS,
    Replica,
    condition,
    count_events,
    get_job,
    job_events,
    pod_names,
    pods_of,
    pytorchjob,
    reconciles,
    settle,
    status,
    wait_for_phase,
    wait_until,
)


def test_a_job_managed_by_another_controller_is_left_alone(
    cluster: LocalCluster, client: KubeClient, ns: str
) -> None:
    job = pytorchjob("theirs", ns, workers=Replica())
    job["spec"]["runPolicy"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    before = reconciles(cluster)
    client.create(PYTORCHJOBS, job, ns)
    settle(cluster, before)

    seen = get_job(client, ns, "theirs")
    assert seen is not None
    assert "status" not in seen or not seen["status"]
    assert CLEANUP not in (seen["metadata"].get("finalizers") or [])
    assert pod_names(client, ns, "theirs") == []


def test_kubeflows_own_managed_by_value_means_jobmachine_for_kubeflow_kinds(
    client: KubeClient, ns: str
) -> None:
    """A manifest written for Kubeflow naming its built-in controller runs here unchanged."""
    job = pytorchjob("kubeflows", ns, workers=Replica())
    job["spec"]["runPolicy"]["managedBy"] = "kubeflow.org/training-operator"
    client.create(PYTORCHJOBS, job, ns)

    done = wait_for_phase(client, ns, "kubeflows", "Succeeded")
    succeeded = condition(done, "Succeeded")
    assert succeeded is not None and succeeded["reason"] == "PyTorchJobSucceeded"


def test_resuming_restarts_the_deadline_clock_and_consumes_no_retries(
    client: KubeClient, ns: str
) -> None:
    """Suspended before it ran: no start time (as Kubeflow's controller and the Job API
    leave it) until the resume starts the clock; no restart is counted."""
    job = pytorchjob("paused", ns, workers=Replica(run_s=0.3), backoff_limit=0)
    job["spec"]["runPolicy"].update(suspend=True, activeDeadlineSeconds=600)
    client.create(PYTORCHJOBS, job, ns)
    suspended = wait_for_phase(client, ns, "paused", "Suspended")
    assert "startTime" not in status(suspended)
    time.sleep(1.1)  # start times have a resolution of one second
    resumed_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

    client.patch(PYTORCHJOBS, "paused", {"spec": {"runPolicy": {"suspend": False}}},
                 namespace=ns)
    finished = wait_for_phase(client, ns, "paused", "Succeeded")

    assert status(finished)["startTime"] >= resumed_at
    assert status(finished).get("restarts", 0) == 0
    suspended_condition = condition(finished, "Suspended")
    assert suspended_condition is not None and suspended_condition["status"] == "False"


def test_an_invalid_job_fails_validation_with_a_warning_naming_the_field(
    client: KubeClient, ns: str
) -> None:
    job = pytorchjob("broken", ns, workers=Replica())
    del job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0][
        "image"
    ]
    client.create(PYTORCHJOBS, job, ns)
    failed = wait_for_phase(client, ns, "broken", "Failed")

    reason = condition(failed, "Failed")
    assert reason is not None and reason["reason"] == "FailedValidation"
    assert "image" in reason["message"]
    wait_until(lambda: count_events(job_events(client, failed), "FailedValidation") == 1,
               what="one FailedValidation event")
    warning = next(e for e in job_events(client, failed) if e["reason"] == "FailedValidation")
    assert warning["type"] == "Warning"
    assert "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].image" in warning["message"]
    assert pod_names(client, ns, "broken") == []


def test_pods_carry_kubeflows_labels_beside_jobmachines(client: KubeClient, ns: str) -> None:
    client.create(PYTORCHJOBS, pytorchjob("labelled", ns, master=Replica(), workers=Replica(
        count=2)), ns)
    wait_for_phase(client, ns, "labelled", "Succeeded")

    pods = {p["metadata"]["name"]: p["metadata"]["labels"] for p in pods_of(client, ns,
                                                                            "labelled")}
    worker = pods["labelled-worker-1"]
    assert worker["training.kubeflow.org/job-name"] == "labelled"
    assert worker["training.kubeflow.org/operator-name"] == "pytorchjob-controller"
    assert worker["training.kubeflow.org/replica-type"] == "worker"
    assert worker["training.kubeflow.org/replica-index"] == "1"
    assert worker["jobmachine.dev/replica-type"] == "Worker"
