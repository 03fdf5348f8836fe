"""The engine's validation of a job: one shared model of a replicated job plus each kind's
machine rules accept Kubeflow's examples and reject what the API server rejects.

Job kinds are data, so nothing here names a Python model of a kind: the shipped
machine of each kind says where its replica specs are and what its own rules are.
"""

from __future__ import annotations

import pytest

from engine.api.status import JobStatus
from engine.controller.reconcile.jobspec import read_job_spec, validation_error
from tests.kinds import shipped_definitions
from tests.unit.api.cases import INVALID, Invalid, changed, example


def error_of(document: dict[str, object]) -> str:
    return validation_error(document, shipped_definitions()[str(document["kind"])])


@pytest.mark.parametrize("kind", ["PyTorchJob", "TFJob", "MachineJob"])
def test_the_examples_are_valid(kind: str) -> None:
    assert error_of(example(kind)) == ""


def test_kubeflow_tf_example_reads_its_replicas_and_the_machines_defaults() -> None:
    spec = read_job_spec(example("TFJob"), shipped_definitions()["TFJob"])

    assert {t.name: t.replicas for t in spec.replica_types} == {"PS": 2, "Worker": 4}
    assert spec.replica_type("PS") is not None
    assert spec.run_policy["cleanPodPolicy"] == "None"


def test_replicas_default_to_one_and_restart_policy_to_the_machines_choice() -> None:
    doc = changed(
        example("PyTorchJob"),
        "spec.pytorchReplicaSpecs.Worker",
        {"template": {"spec": {"containers": [{"name": "pytorch", "image": "x"}]}}},
    )

    worker = read_job_spec(doc, shipped_definitions()["PyTorchJob"]).replica_type("Worker")

    assert worker is not None
    assert (worker.replicas, worker.restart_policy) == (1, "OnFailure")


def test_zero_replicas_is_allowed() -> None:
    assert error_of(changed(example("TFJob"), "spec.tfReplicaSpecs.Worker.replicas", 0)) == ""


def test_a_kinds_own_replica_fields_are_left_to_its_crd() -> None:
    doc = changed(example("MachineJob"), "spec.replicaSpecs.Worker.dependsOn",
                  [{"replicaType": "Launcher"}])

    assert error_of(doc) == ""


def test_a_dependency_cycle_is_an_error() -> None:
    doc = changed(example("MachineJob"), "spec.replicaSpecs.Worker.dependsOn",
                  [{"replicaType": "Launcher"}])
    doc = changed(doc, "spec.replicaSpecs.Launcher.dependsOn", [{"replicaType": "Worker"}])

    assert "dependsOn forms a cycle" in error_of(doc)


def test_a_jobsets_depends_on_names_a_replicated_job_and_is_left_to_its_machine() -> None:
    """JobSet's dependsOn entries are {name, status} (Trainer's initializer runtimes wait
    so); the replicaType check must not read them as MachineJob's."""
    job = {"name": "node", "groupName": "default", "replicas": 1, "template": {"spec": {
        "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}}
    doc = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
           "metadata": {"name": "js", "namespace": "n"},
           "spec": {"replicatedJobs": [
               job | {"name": "init"},
               job | {"dependsOn": [{"name": "init", "status": "Complete"}]}]}}

    assert error_of(doc) == ""


def test_the_error_names_the_field() -> None:
    doc = changed(example("PyTorchJob"), "spec.pytorchReplicaSpecs.Worker.template",
                  {"spec": {"containers": [{"name": "pytorch"}]}})

    assert error_of(doc) == (
        "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].image: every container "
        "needs an image"
    )


def test_status_keeps_the_engines_own_fields() -> None:
    status = JobStatus.model_validate({
        "phase": "Running",
        "restarts": 2,
        "history": [{"state": "Running", "at": "2025-01-01T00:00:00Z"}],
        "conditions": [{"type": "Running", "status": "True", "lastUpdateTime": None}],
        "replicaStatuses": {"Worker": {"active": 4}},
    })

    assert (status.phase, status.restarts) == ("Running", 2)
    assert status.model_extra == {"history": [{"state": "Running", "at": "2025-01-01T00:00:00Z"}]}
    assert status.replica_statuses["Worker"].active == 4


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_invalid_manifests_are_rejected(case: Invalid) -> None:
    assert (case.engine_message or case.message) in error_of(case.document())
