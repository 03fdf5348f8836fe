"""Kubeflow's labels on the pods and services of PyTorchJobs and TFJobs, beside jobmachine's.

Kubeflow's tools and users select a job's children by `training.kubeflow.org/*` labels, and
its master role (PyTorch's Master, TF's Chief or Master) by `job-role: master`; the services
carry the same labels as the pods, and select their pod by jobmachine's own labels.
"""

from __future__ import annotations

from typing import Any

from engine.kube.client import KubeClient
from engine.kube.resources import PODS, SERVICES, Resource
from tests.integration.engine.helpers import (
    JOB_NAME,
    PYTORCHJOBS,
    REPLICA_INDEX,
    REPLICA_TYPE,
    Replica,
    pytorchjob,
    wait_for,
)
from tests.integration.engine.machinejobs import get_obj
from tests.integration.engine.timeouts_support import TFJOBS, tfjob

Obj = dict[str, Any]

KUBEFLOW = "training.kubeflow.org/"
JOB_ROLE = KUBEFLOW + "job-role"
JOB_UID = "jobmachine.dev/job-uid"
ATTEMPT = "jobmachine.dev/restart-attempt"


def children(client: KubeClient, res: Resource, ns: str, job: str, count: int) -> dict[str, Obj]:
    """The job's `count` pods or services by name, once all of them exist."""
    items = wait_for(lambda: client.list(res, ns, label_selector=f"{JOB_NAME}={job}")[0],
                     lambda items: len(items) == count, what=f"{count} {res.plural} of {job}")
    return {item["metadata"]["name"]: item for item in items}


def running_job(client: KubeClient, res: Resource, ns: str, name: str, body: Obj) -> Obj:
    """Create the job and wait until the engine runs it; the job then (with its uid)."""
    client.create(res, body, ns)
    job = wait_for(lambda: get_obj(client, res, ns, name),
                   lambda job: (job or {}).get("status", {}).get("phase") == "Running",
                   what=f"{ns}/{name} running")
    assert job is not None
    return job


def assert_labelled(obj: Obj, job: Obj, replica_type: str, index: int, operator: str) -> None:
    """Kubeflow's four labels and jobmachine's four, for this replica."""
    labels = obj["metadata"]["labels"]
    assert labels[KUBEFLOW + "job-name"] == job["metadata"]["name"]
    assert labels[KUBEFLOW + "replica-type"] == replica_type.lower()
    assert labels[KUBEFLOW + "replica-index"] == str(index)
    assert labels[KUBEFLOW + "operator-name"] == operator
    assert labels[JOB_NAME] == job["metadata"]["name"]
    assert labels[JOB_UID] == job["metadata"]["uid"]
    assert labels[REPLICA_TYPE] == replica_type
    assert labels[REPLICA_INDEX] == str(index)


def assert_service_selects_its_pod(client: KubeClient, service: Obj, job: str,
                                   replica_type: str, index: int) -> None:
    """The selector is jobmachine's replica selector, and it selects that replica's pod only."""
    selector = service["spec"]["selector"]
    assert selector == {JOB_NAME: job, REPLICA_TYPE: replica_type, REPLICA_INDEX: str(index)}
    selected, _ = client.list(PODS, service["metadata"]["namespace"],
                              label_selector=",".join(f"{k}={v}" for k, v in selector.items()))
    assert [p["metadata"]["name"] for p in selected] == [service["metadata"]["name"]]


def test_pytorchjob_pods_and_services_carry_kubeflows_labels(client: KubeClient, ns: str) -> None:
    """Master + 2 Workers: only the master pod has job-role master; every pod and service has
    job-name, replica-type (lower case), replica-index and operator-name."""
    body = pytorchjob("ddp", ns, master=Replica(run_s=60), workers=Replica(count=2, run_s=60))
    job = running_job(client, PYTORCHJOBS, ns, "ddp", body)
    pods = children(client, PODS, ns, "ddp", 3)
    services = children(client, SERVICES, ns, "ddp", 3)

    replicas = [("Master", 0), ("Worker", 0), ("Worker", 1)]
    for replica_type, index in replicas:
        name = f"ddp-{replica_type.lower()}-{index}"
        pod, service = pods[name], services[name]
        assert_labelled(pod, job, replica_type, index, "pytorchjob-controller")
        assert_labelled(service, job, replica_type, index, "pytorchjob-controller")
        assert pod["metadata"]["labels"][ATTEMPT] == "0"
        assert_service_selects_its_pod(client, service, "ddp", replica_type, index)
    assert pods["ddp-master-0"]["metadata"]["labels"][JOB_ROLE] == "master"
    assert JOB_ROLE not in pods["ddp-worker-0"]["metadata"]["labels"]
    assert JOB_ROLE not in pods["ddp-worker-1"]["metadata"]["labels"]


def test_tfjob_chief_has_the_master_role(client: KubeClient, ns: str) -> None:
    """Chief + Worker: the chief pod is labelled job-role master, the worker's is not."""
    body = tfjob("tf", ns, chief=Replica(run_s=60), workers=Replica(run_s=60))
    job = running_job(client, TFJOBS, ns, "tf", body)
    pods = children(client, PODS, ns, "tf", 2)
    services = children(client, SERVICES, ns, "tf", 2)

    for replica_type in ("Chief", "Worker"):
        name = f"tf-{replica_type.lower()}-0"
        assert_labelled(pods[name], job, replica_type, 0, "tfjob-controller")
        assert_labelled(services[name], job, replica_type, 0, "tfjob-controller")
        assert pods[name]["metadata"]["labels"][ATTEMPT] == "0"
        assert_service_selects_its_pod(client, services[name], "tf", replica_type, 0)
    assert pods["tf-chief-0"]["metadata"]["labels"][JOB_ROLE] == "master"
    assert JOB_ROLE not in pods["tf-worker-0"]["metadata"]["labels"]
    assert JOB_ROLE not in services["tf-worker-0"]["metadata"]["labels"]
