"""The kinds' models accept Kubeflow's own examples and reject what the API server would."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from engine.api.machinejob import MachineJob
from engine.api.pytorchjob import PyTorchJob
from engine.api.tfjob import TFJob
from tests.unit.api.cases import INVALID, Invalid, changed, example

MODELS: dict[str, type[BaseModel]] = {
    "PyTorchJob": PyTorchJob,
    "TFJob": TFJob,
    "MachineJob": MachineJob,
}


def test_kubeflow_pytorch_mnist_example_validates() -> None:
    job = PyTorchJob.model_validate(example("PyTorchJob"))

    assert set(job.spec.pytorch_replica_specs) == {"Master", "Worker"}
    master = job.spec.pytorch_replica_specs["Master"]
    assert (master.replicas, master.restart_policy) == (1, "OnFailure")
    assert master.template["spec"]["containers"][0]["name"] == "pytorch"
    assert job.spec.run_policy.suspend is False
    assert job.status.conditions == []


def test_kubeflow_tf_mnist_example_with_ps_and_workers_validates() -> None:
    job = TFJob.model_validate(example("TFJob"))

    specs = job.spec.tf_replica_specs
    assert {t: s.replicas for t, s in specs.items()} == {"PS": 2, "Worker": 4}
    assert specs["PS"].restart_policy == "Never"
    assert job.spec.success_policy is None
    assert job.spec.enable_dynamic_worker is False


def test_machinejob_example_reads_every_general_form() -> None:
    job = MachineJob.model_validate(example("MachineJob"))

    assert job.spec.machine == "job"
    assert job.spec.success_policy is not None
    assert (job.spec.success_policy.mode, job.spec.success_policy.count) == ("Any", 2)
    actions = [rule.action for rule in job.spec.failure_rules]
    assert actions == ["FailJob", "Ignore", "RestartJob", "Count"]
    first = job.spec.failure_rules[0].on_exit_codes
    assert first is not None and first.values == [1, 2, 3]
    assert job.spec.run_policy.scheduling_policy is not None
    assert job.spec.run_policy.scheduling_policy.min_resources == {
        "cpu": "4",
        "memory": "8Gi",
        "nvidia.com/gpu": 1,
    }


def test_replicas_default_to_one_and_restart_policy_to_the_machines_choice() -> None:
    doc = changed(
        example("PyTorchJob"),
        "spec.pytorchReplicaSpecs.Worker",
        {"template": {"spec": {"containers": [{"name": "pytorch", "image": "x"}]}}},
    )

    worker = PyTorchJob.model_validate(doc).spec.pytorch_replica_specs["Worker"]

    assert (worker.replicas, worker.restart_policy) == (1, None)


def test_zero_replicas_is_allowed() -> None:
    doc = changed(example("TFJob"), "spec.tfReplicaSpecs.Worker.replicas", 0)

    assert TFJob.model_validate(doc).spec.tf_replica_specs["Worker"].replicas == 0


def test_round_trip_keeps_kubeflow_field_names() -> None:
    doc = example("MachineJob")

    dumped = MachineJob.model_validate(doc).model_dump(exclude_defaults=True)

    assert dumped["spec"]["replicaSpecs"]["Worker"]["restartPolicy"] == "ExitCode"
    assert dumped["spec"]["runPolicy"]["ttlSecondsAfterFinished"] == 600
    assert dumped["spec"]["failureRules"][0]["onExitCodes"]["containerName"] == "main"


def test_unknown_spec_field_is_rejected() -> None:
    doc = changed(example("PyTorchJob"), "spec.pytorchReplicaSpecs.Worker.replica", 2)

    with pytest.raises(ValidationError, match="replica"):
        PyTorchJob.model_validate(doc)


def test_status_keeps_the_engines_own_fields() -> None:
    doc = changed(
        example("TFJob"),
        "status",
        {
            "phase": "Running",
            "restarts": 2,
            "history": [{"state": "Running", "at": "2025-01-01T00:00:00Z"}],
            "conditions": [{"type": "Running", "status": "True", "lastUpdateTime": None}],
            "replicaStatuses": {"Worker": {"active": 4}},
        },
    )

    status = TFJob.model_validate(doc).status

    assert (status.phase, status.restarts) == ("Running", 2)
    assert status.model_extra == {"history": [{"state": "Running", "at": "2025-01-01T00:00:00Z"}]}
    assert status.replica_statuses["Worker"].active == 4


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.id)
def test_invalid_manifests_are_rejected(case: Invalid) -> None:
    with pytest.raises(ValidationError) as caught:
        MODELS[case.kind].model_validate(case.document())

    assert case.message in str(caught.value)
