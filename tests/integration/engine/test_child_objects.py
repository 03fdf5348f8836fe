"""A job's child objects on the embedded cluster: made before its pods, kept, removed with it.

Each test makes its own kind (tests/integration/engine/custom_kinds.py) whose machine
declares the objects under test; the shipped MPIJob machine's hostfile is the
ConfigMap that must follow its Workers.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest

from engine.app.up import LocalCluster
from engine.controller.reconcile import objects
from engine.kube.client import KubeClient
from engine.kube.errors import NotFound
from engine.kube.resources import CONFIGMAPS, PODS, SECRETS, Resource
from tests.integration.engine.custom_kinds import (
    Lab,
    LabKind,
    get_machine,
    lab_job,
    machine,
    machine_condition,
    new_kind,
)
from tests.integration.engine.helpers import (
    Replica,
    count_events,
    get_job,
    job_events,
    pod_names,
    wait_for,
    wait_for_phase,
    wait_until,
)
from tests.kinds import KINDS

Obj = dict[str, Any]


@pytest.fixture
def lab(client: KubeClient) -> Iterator[Lab]:
    with Lab(client) as made:
        yield made


def with_objects(kind: LabKind, name: str, objects: list[Obj]) -> Obj:
    document = machine(name, kind)
    document["spec"]["objects"] = objects
    return document


def get(client: KubeClient, resource: Resource, namespace: str, name: str) -> Obj | None:
    try:
        return client.get(resource, name, namespace)
    except NotFound:
        return None


TOKEN = {
    "name": "token", "apiVersion": "v1", "kind": "Secret",
    "when": "!has(job.metadata.annotations) || !('lab/no-token' in job.metadata.annotations)",
    "fields": {"type": "'Opaque'",
               "stringData": "{'token': 'for-' + job.metadata.name}"},
}


def test_a_secret_the_machine_declares_exists_before_the_pods_and_goes_with_the_job(
    client: KubeClient, lab: Lab, ns: str
) -> None:
    kind = new_kind()
    lab.install(kind)
    lab.apply(with_objects(kind, kind.kind.lower(), [TOKEN]))
    wait_until(lambda: lab_ready(client, kind), what="the machine to govern the kind")
    client.create(kind.resource, lab_job(kind, "secretive", ns, Replica(run_s=1.0)), ns)

    secret = wait_for(lambda: get(client, SECRETS, ns, "secretive-token"),
                      lambda found: found is not None, what="the Secret")

    assert base64.b64decode(secret["data"]["token"]) == b"for-secretive"
    assert "stringData" not in secret
    assert secret["metadata"]["ownerReferences"][0]["name"] == "secretive"
    assert secret["metadata"]["labels"]["jobmachine.dev/object"] == "token"
    created = secret["metadata"]["creationTimestamp"]
    pods = wait_for(lambda: client_pods(client, ns, "secretive"), bool, what="the pod")
    assert all(pod["metadata"]["creationTimestamp"] >= created for pod in pods)
    wait_for_phase(client, ns, "secretive", "Succeeded", kind=kind.resource)

    client.delete(kind.resource, "secretive", ns)
    wait_for(lambda: get(client, SECRETS, ns, "secretive-token"), lambda found: found is None,
             what="the Secret to go with its job")


def test_an_object_whose_when_turns_false_is_deleted(
    client: KubeClient, lab: Lab, ns: str
) -> None:
    kind = new_kind()
    lab.install(kind)
    lab.apply(with_objects(kind, kind.kind.lower(), [TOKEN]))
    wait_until(lambda: lab_ready(client, kind), what="the machine to govern the kind")
    client.create(kind.resource, lab_job(kind, "shrinks", ns, Replica(run_s=30.0)), ns)
    wait_for(lambda: get(client, SECRETS, ns, "shrinks-token"), lambda found: found is not None,
             what="the Secret")

    client.patch(kind.resource, "shrinks",
                 {"metadata": {"annotations": {"lab/no-token": "yes"}}}, namespace=ns)

    wait_for(lambda: get(client, SECRETS, ns, "shrinks-token"), lambda found: found is None,
             what="the Secret to be deleted once its `when` is false")


def test_a_foreign_object_of_the_same_name_holds_the_pods_back_and_is_left_alone(
    client: KubeClient, lab: Lab, ns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The engine runs in this process: its look-again delay for a taken name (30 s) is
    # shortened so that the test does not wait half a minute for it.
    monkeypatch.setattr(objects, "_LATER_S", 3.0)
    kind = new_kind()
    lab.install(kind)
    lab.apply(with_objects(kind, kind.kind.lower(), [TOKEN]))
    wait_until(lambda: lab_ready(client, kind), what="the machine to govern the kind")
    client.create(SECRETS, {"apiVersion": "v1", "kind": "Secret",
                            "metadata": {"name": "taken-token"},
                            "stringData": {"token": "someone else's"}}, ns)
    client.create(kind.resource, lab_job(kind, "taken", ns), ns)

    job = wait_for(lambda: get_job(client, ns, "taken", kind=kind.resource),
                   lambda found: found is not None and count_events(
                       job_events(client, found), "NameConflict") > 0,
                   what="a NameConflict event")

    assert pod_names(client, ns, "taken") == []
    secret = get(client, SECRETS, ns, "taken-token")
    assert secret is not None and base64.b64decode(secret["data"]["token"]) == b"someone else's"
    assert "ownerReferences" not in secret["metadata"]
    assert job is not None

    client.delete(SECRETS, "taken-token", ns)
    # The foreign object had none of our labels, so no watch event says it went: the job
    # looks again that delay after it found the name taken.
    wait_for_phase(client, ns, "taken", "Succeeded", kind=kind.resource, timeout=60)


def test_the_mpi_hostfile_follows_the_workers(cluster: LocalCluster, client: KubeClient,
                                              ns: str) -> None:
    mpijobs = KINDS["MPIJob"]
    container = {"name": "mpi", "image": "mpi:1",
                 "command": ["mpirun"]}
    client.create(mpijobs, {
        "apiVersion": "kubeflow.org/v1", "kind": "MPIJob", "metadata": {"name": "grows"},
        "spec": {"mpiReplicaSpecs": {
            "Launcher": {"template": {"metadata": {"annotations": {
                "sim.jobmachine.dev/run-seconds": "60"}}, "spec": {"containers": [container]}}},
            "Worker": {"replicas": 1, "template": {"spec": {"containers": [container]}}},
        }},
    }, ns)
    wait_for(lambda: hostfile(client, ns, "grows"), lambda text: text == "grows-worker-0 slots=1\n",
             what="the hostfile of one Worker")

    client.patch(mpijobs, "grows", {"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 3}}}},
                 namespace=ns)

    wait_for(lambda: hostfile(client, ns, "grows"),
             lambda text: text == "".join(f"grows-worker-{i} slots=1\n" for i in range(3)),
             what="the hostfile of three Workers")
    wait_for(lambda: sorted(pod_names(client, ns, "grows")),
             lambda names: len(names) == 4, what="three Workers and the Launcher")
    client.delete(mpijobs, "grows", ns)


def hostfile(client: KubeClient, namespace: str, job: str) -> str | None:
    config = get(client, CONFIGMAPS, namespace, f"{job}-config")
    return None if config is None else str(config["data"]["hostfile"])


def client_pods(client: KubeClient, namespace: str, job: str) -> list[Obj]:
    items, _ = client.list(PODS, namespace, label_selector=f"jobmachine.dev/job-name={job}")
    return items


def lab_ready(client: KubeClient, kind: LabKind) -> bool:
    return machine_condition(get_machine(client, kind.kind.lower()), "Governing").get(
        "status") == "True"
