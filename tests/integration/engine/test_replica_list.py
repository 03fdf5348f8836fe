"""A kind whose replica specs are a list of named specs (JobSet's replicatedJobs, Volcano's
tasks), on the embedded cluster: its CRD made from a kind description with
`replicaSpecs.list`, its machine with `governs.replicaList`, types named by the list and
started in its order.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from engine.api.kind_description import JobKind
from engine.kube.client import KubeClient
from engine.kube.errors import Invalid
from engine.kube.resources import PODS
from tests.integration.engine.custom_kinds import Lab, LabKind, wait_for_verdict
from tests.integration.engine.helpers import (
    Replica,
    get_job,
    replica_spec,
    status,
    wait_for_phase,
)

Obj = dict[str, Any]

IN_ORDER = (
    "!runPolicy.suspend && replicas.all(t, replicas[t].position >= "
    "replicas[replica.type].position || replicas[t].running + replicas[t].succeeded == "
    "replicas[t].desired)"
)
"""The shipped `create` guard plus a start-up order: a type's pods are made once every type
before it in the list has all its pods running (or done), as JobSet's InOrder."""


@pytest.fixture
def lab(client: KubeClient) -> Iterator[Lab]:
    with Lab(client) as made:
        yield made


def listed_kind() -> LabKind:
    name = f"Lab{uuid.uuid4().hex[:8]}Job"
    return LabKind(JobKind.model_validate({
        "apiVersion": "jobmachine.dev/v1alpha1", "kind": "JobKind",
        "metadata": {"name": name.lower()},
        "spec": {"group": "lab.jobmachine.dev", "version": "v1", "names": {"kind": name},
                 "replicaSpecs": {"field": "tasks", "list": True}, "mainContainer": "main"},
    }))


def listed_machine(kind: LabKind) -> Obj:
    return {
        "apiVersion": "jobmachine.dev/v1alpha1", "kind": "StateMachine",
        "metadata": {"name": kind.kind.lower()},
        "spec": {
            "extends": "kubeflow",
            "governs": {"apiVersion": kind.resource.api_version, "kind": kind.kind,
                        "replicaSpecs": "spec.tasks", "replicaList": True,
                        "defaultRestartPolicy": "ExitCode"},
            "replica": {"transitions": [{"name": "create", "when": IN_ORDER}]},
            "pod": {"container": "main"},
        },
    }


def task(name: str, replica: Replica) -> Obj:
    return {"name": name, **replica_spec(replica, "main")}


def pod_history(client: KubeClient, ns: str, stop: threading.Event, seen: list[str]) -> None:
    """Append `<pod> <phase>` for every pod event in `ns`, in the server's order."""
    _, version = client.list(PODS, ns)
    while not stop.is_set():
        for event in client.watch(PODS, ns, resource_version=version, timeout_seconds=1):
            pod = event["object"]
            version = pod["metadata"].get("resourceVersion") or version
            if event["type"] in ("ADDED", "MODIFIED"):
                seen.append(f"{pod['metadata']['name']} {pod['status'].get('phase')}")


def test_listed_types_are_named_by_the_list_and_start_in_its_order(
    client: KubeClient, lab: Lab, ns: str
) -> None:
    kind = listed_kind()
    lab.install(kind)
    lab.apply(listed_machine(kind))
    wait_for_verdict(client, kind.kind.lower(), accepted="Valid", governing="Governing")
    seen: list[str] = []
    stop = threading.Event()
    watcher = threading.Thread(target=pod_history, args=(client, ns, stop, seen), daemon=True)
    watcher.start()
    try:
        client.create(kind.resource, {
            "apiVersion": kind.resource.api_version, "kind": kind.kind,
            "metadata": {"name": "ordered", "namespace": ns},
            "spec": {"tasks": [task("driver", Replica(run_s=2.0)),
                               task("workers", Replica(count=2, run_s=0.5))]},
        }, ns)
        done = wait_for_phase(client, ns, "ordered", "Succeeded", kind=kind.resource)
    finally:
        stop.set()
        watcher.join(10)

    names = [line.split()[0] for line in seen]
    assert sorted(set(names)) == ["ordered-driver-0", "ordered-workers-0", "ordered-workers-1"]
    driver_running = seen.index("ordered-driver-0 Running")
    first_worker = min(names.index(n) for n in ("ordered-workers-0", "ordered-workers-1"))
    assert driver_running < first_worker, f"a worker's pod came before the driver ran: {seen}"
    assert set(status(done)["replicaStatuses"]) == {"driver", "workers"}
    assert status(done)["replicaStatuses"]["workers"]["succeeded"] == 2


def test_the_kinds_crd_refuses_two_specs_of_one_name(
    client: KubeClient, lab: Lab, ns: str
) -> None:
    kind = listed_kind()
    lab.install(kind)
    twice = {"apiVersion": kind.resource.api_version, "kind": kind.kind,
             "metadata": {"name": "twice", "namespace": ns},
             "spec": {"tasks": [task("a", Replica()), task("a", Replica())]}}

    with pytest.raises(Invalid) as refused:
        client.create(kind.resource, twice, ns)

    assert "spec.tasks[1]" in str(refused.value), str(refused.value)
    assert get_job(client, ns, "twice", kind=kind.resource) is None
