"""What a job asks for, read through its machine's `governs` block: types, policies, errors."""

from __future__ import annotations

from typing import Any

from engine.api.replicated import read_path
from engine.controller.jobspec import read_job_spec
from tests.scenarios.world import DEFINITIONS, pytorch_job

PYTORCH = DEFINITIONS["PyTorchJob"]
MACHINEJOB = DEFINITIONS["MachineJob"]


def machine_job(**types: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "jobmachine.dev/v1alpha1",
        "kind": "MachineJob",
        "metadata": {"name": "m", "namespace": "team", "uid": "u"},
        "spec": {"replicaSpecs": types},
    }


def template() -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "main", "image": "example/train:1"}]}}


def test_read_path_follows_dots_and_gives_none_for_a_missing_step() -> None:
    obj = {"spec": {"runPolicy": {"suspend": True}, "list": [1]}}
    assert read_path(obj, "spec.runPolicy.suspend") is True
    assert read_path(obj, "spec.missing.suspend") is None
    assert read_path(obj, "spec.list.0") is None


def test_replica_types_follow_the_kinds_order_whatever_the_spec_says() -> None:
    job = pytorch_job()
    specs = job["spec"]["pytorchReplicaSpecs"]
    job["spec"]["pytorchReplicaSpecs"] = {"Worker": specs["Worker"], "Master": specs["Master"]}
    view = read_job_spec(job, PYTORCH)
    assert [t.name for t in view.replica_types] == ["Master", "Worker"]
    assert view.replica_type("Worker") is view.replica_types[1]
    assert view.replica_type("Chief") is None


def test_a_kind_without_a_fixed_order_keeps_the_specs_order() -> None:
    view = read_job_spec(machine_job(Trainer={"replicas": 2, "template": template()},
                                     Eval={"template": template()}), MACHINEJOB)
    assert [(t.name, t.replicas) for t in view.replica_types] == [("Trainer", 2), ("Eval", 1)]


def test_restart_policies_default_per_kind_and_the_templates_own_is_remembered() -> None:
    job = pytorch_job(policy=None)
    job["spec"]["pytorchReplicaSpecs"]["Master"]["restartPolicy"] = "ExitCode"
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["restartPolicy"] = "Always"
    master, worker = read_job_spec(job, PYTORCH).replica_types
    assert (master.restart_policy, master.template_restart_policy) == ("ExitCode", None)
    assert (worker.restart_policy, worker.template_restart_policy) == ("OnFailure", "Always")


def test_the_run_policy_is_the_machines_defaults_overridden_by_the_job() -> None:
    view = read_job_spec(pytorch_job(run_policy={"cleanPodPolicy": "All", "backoffLimit": 3}),
                         PYTORCH)
    assert view.run_policy == {"cleanPodPolicy": "All", "suspend": False, "backoffLimit": 3}
    assert read_job_spec(machine_job(), MACHINEJOB).run_policy == {
        "backoffLimit": 6, "cleanPodPolicy": "Running", "suspend": False
    }


def test_an_invalid_job_has_an_error_and_no_replica_types() -> None:
    view = read_job_spec(pytorch_job(masters=2), PYTORCH)
    assert "Master must have exactly 1 replica" in view.error
    assert view.replica_types == ()
    assert view.run_policy["suspend"] is False


def test_a_job_breaking_its_machines_own_rule_is_invalid_with_the_rules_message() -> None:
    job = machine_job(Worker={"template": template()})
    job["spec"]["machine"] = "other"
    assert read_job_spec(job, MACHINEJOB).error == (
        "spec.machine: only the StateMachine named job governs MachineJob here"
    )
