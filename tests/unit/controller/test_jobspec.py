"""What a job asks for, read through its machine's `governs` block: types, policies, errors."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from engine.api.replicated import read_path
from engine.controller.reconcile.jobspec import ValidationVerdicts, read_job_spec
from engine.definition.validate import load_with_positions
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
    assert view.run_policy == {"cleanPodPolicy": "All", "suspend": False, "backoffLimit": 3,
                               "recreationBackoff": False}
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


def judged(job: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    """`job` as the server stores it: with a uid and a generation (and `metadata`)."""
    job["metadata"] = {**job["metadata"], "uid": "uid-1", "generation": 1, **metadata}
    return job


def test_a_verdict_is_judged_once_per_spec_generation() -> None:
    """The server raises the generation at every spec change; until then the verdict holds,
    so a job reconciled again is not validated again (about a tenth of the engine's CPU)."""
    verdicts = ValidationVerdicts()
    job = judged(pytorch_job())
    assert read_job_spec(job, PYTORCH, verdicts=verdicts).error == ""
    job["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 2  # not a real server: same gen
    assert read_job_spec(job, PYTORCH, verdicts=verdicts).error == ""
    job["metadata"]["generation"] = 2
    assert "Master must have exactly 1 replica" in read_job_spec(
        job, PYTORCH, verdicts=verdicts).error


METADATA_EDITS = [
    {"labels": {"team": "a"}}, {"annotations": {"note": "x"}}, {"finalizers": ["f"]},
    {"deletionTimestamp": "2026-11-25T10:00:00Z"}, {"ownerReferences": [{"uid": "o"}]},
]


def reading(source: str) -> Any:
    """PyTorchJob's machine with `source` or-ed into its first rule's words (the verdict reads
    the words to know what the rules read; the rule evaluated stays PyTorchJob's)."""
    first = PYTORCH.validations[0]
    rule = dataclasses.replace(first.rule, source=f"{first.rule.source} || {source}")
    return dataclasses.replace(PYTORCH, validations=(
        dataclasses.replace(first, rule=rule), *PYTORCH.validations[1:]))


@pytest.mark.parametrize("change", METADATA_EDITS)
def test_metadata_no_rule_reads_keeps_the_verdict(change: dict[str, Any]) -> None:
    """PyTorchJob's rules read only the spec: the engine's own finalizer, added at the first
    pass and removed at the end, does not have the job judged again (nor does a label)."""
    verdicts = ValidationVerdicts()
    job = judged(pytorch_job())
    assert verdicts.error(job, PYTORCH) == ""
    job["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 2  # not a real server: same gen
    job["metadata"] = {**job["metadata"], **change}
    assert verdicts.error(job, PYTORCH) == ""


def assert_judged_again(rule: str, change: dict[str, Any]) -> None:
    """A job judged valid under a machine whose rule reads `rule` is judged again (and found
    invalid, as its spec now is) once its metadata changes by `change`."""
    machine = reading(rule)
    verdicts = ValidationVerdicts()
    job = judged(pytorch_job())
    assert verdicts.error(job, machine) == ""
    job["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 2
    job["metadata"] = {**job["metadata"], **change}
    assert "Master must have exactly 1 replica" in verdicts.error(job, machine)


@pytest.mark.parametrize(("field", "change"), [(next(iter(c)), c) for c in METADATA_EDITS])
def test_metadata_a_rule_reads_is_judged_again(field: str, change: dict[str, Any]) -> None:
    assert_judged_again(f"has(job.metadata.{field})", change)


@pytest.mark.parametrize("whole", ["job.metadata == {}", "job == {}", "size(job) == 0"])
@pytest.mark.parametrize("change", METADATA_EDITS)
def test_a_rule_reading_the_metadata_whole_is_judged_again_at_any_edit(
        whole: str, change: dict[str, Any]) -> None:
    assert_judged_again(whole, change)


def test_another_machine_revision_is_judged_again() -> None:
    verdicts = ValidationVerdicts()
    job = judged(machine_job(Worker={"template": template()}))
    assert verdicts.error(job, MACHINEJOB) == ""
    job["spec"]["machine"] = "other"
    stricter = dataclasses.replace(MACHINEJOB)
    assert "only the StateMachine named job" in verdicts.error(job, stricter)


def test_rules_that_read_the_status_are_always_judged_afresh() -> None:
    verdicts = ValidationVerdicts()
    first = MACHINEJOB.validations[0]
    rule = dataclasses.replace(first.rule, source=first.rule.source + " || job.status == {}")
    reading = dataclasses.replace(MACHINEJOB, validations=(
        dataclasses.replace(first, rule=rule),))
    job = judged(machine_job(Worker={"template": template()}))
    assert verdicts.error(job, reading) == ""
    job["spec"]["machine"] = "other"
    assert verdicts.error(job, reading) != ""


def test_jobs_without_uid_or_generation_are_judged_every_time() -> None:
    verdicts = ValidationVerdicts()
    job = pytorch_job()
    del job["metadata"]["generation"]
    assert verdicts.error(job, PYTORCH) == ""
    job["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 2
    assert verdicts.error(job, PYTORCH) != ""


def test_the_least_recently_used_verdicts_are_forgotten_first() -> None:
    verdicts = ValidationVerdicts(size=2)
    jobs = [judged(pytorch_job(f"j{i}"), uid=f"uid-{i}") for i in range(3)]
    for job in jobs:
        assert verdicts.error(job, PYTORCH) == ""
        job["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 2
    assert verdicts.error(jobs[2], PYTORCH) == ""  # remembered
    assert verdicts.error(jobs[0], PYTORCH) != ""  # forgotten: judged again


# pod.replacementPolicy: when a deleted pod is judged -----------------------------------------

BATCH = DEFINITIONS["Job"]


def batch_job(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "j", "namespace": "team", "uid": "uid-j"},
        "spec": {"completions": 1, "parallelism": 1, **spec, "template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}},
    }


POLICY = {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}


@pytest.mark.parametrize(
    ("spec", "when_ended"),
    [
        ({}, False),
        ({"podFailurePolicy": POLICY}, True),
        ({"podReplacementPolicy": "Failed"}, True),
        ({"podReplacementPolicy": "TerminatingOrFailed"}, False),
    ],
    ids=["default", "default-with-a-pod-failure-policy", "failed", "terminating-or-failed"],
)
def test_a_batch_jobs_deleted_pods_are_judged_as_its_pod_replacement_policy_says(
    spec: dict[str, Any], when_ended: bool
) -> None:
    view = read_job_spec(batch_job(**spec), BATCH)
    assert view.error == ""
    assert view.judge_deleted_when_ended is when_ended


def test_a_machine_without_a_replacement_policy_judges_deleted_pods_at_once() -> None:
    assert read_job_spec(pytorch_job(), PYTORCH).judge_deleted_when_ended is False


def test_a_replacement_policy_value_that_is_neither_makes_the_job_invalid() -> None:
    view = read_job_spec(batch_job(podReplacementPolicy="Sometimes"), BATCH)
    assert "pod.replacementPolicy gave 'Sometimes'" in view.error
    assert view.replica_types == ()


def test_a_list_of_named_replica_specs_gives_its_types_in_the_lists_order() -> None:
    listed = Path(__file__).parents[1] / "modelcheck" / "machines" / "listed.yaml"
    [(_, definition)], _ = load_with_positions([str(listed)])
    tasks = [{"name": name, "replicas": count, "template": template()}
             for name, count in (("workers", 3), ("driver", 1))]
    job = {"apiVersion": "example.com/v1", "kind": "TaskJob",
           "metadata": {"name": "t", "namespace": "team", "uid": "u"}, "spec": {"tasks": tasks}}
    spec = read_job_spec(job, definition)
    assert spec.error == ""
    assert [(t.name, t.replicas) for t in spec.replica_types] == [("workers", 3), ("driver", 1)]
    as_map = {**job, "spec": {"tasks": {"workers": tasks[0]}}}
    assert read_job_spec(as_map, definition).error == (
        "spec.tasks: must be a list of replica specs with at least 1 entry")
