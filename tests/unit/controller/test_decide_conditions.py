"""The conditions a job's state changes set (`_record_job_transition`, `_condition`): the
condition a job leaves goes False with the transition's words unless the state entered sets
the same type; a condition copied from another takes its words as they stand (empty stays
empty); a condition removed in the same pass is not copied; every template that fails to
render is said.

Each test runs the shipped MachineJob machine with one of its lines changed, so that the
case the shipped machines never meet is met.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from engine.controller.reconcile.decide import ConditionUpdate
from engine.definition import load_definitions
from engine.kube.timestamps import format_time
from tests.kinds import MACHINES
from tests.scenarios.world import (
    DEFINITIONS,
    T0,
    World,
    exited,
    machine_job,
    running,
    worker,
)

Machine = Callable[[Mapping[str, str]], None]


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Machine:
    """`machine({old: new, ...})`: the worlds of this test run the shipped MachineJob
    machine with each `old` text of job.yaml (found once) replaced by `new`."""

    def changed(replacements: Mapping[str, str]) -> None:
        text = (MACHINES / "job.yaml").read_text()
        for old, new in replacements.items():
            assert text.count(old) == 1, old
            text = text.replace(old, new)
        folder = tmp_path / f"machines-{len(list(tmp_path.iterdir()))}"
        folder.mkdir()
        (folder / "job.yaml").write_text(text)
        [definition] = load_definitions([folder])
        monkeypatch.setitem(DEFINITIONS, "MachineJob", definition)

    return changed


def running_world(**run_policy: object) -> World:
    """A MachineJob whose one Worker runs: the job is Running."""
    world = World(machine_job(workers=1, policy="Never", run_policy=dict(run_policy)))
    world.reconcile()
    world.pods[worker(0)] = running()
    assert world.reconcile().phase == "Running"
    return world


SUSPENDED = """\
        condition:
          type: Suspended
          reason: JobSuspended"""


def test_the_condition_a_job_leaves_goes_false_with_the_transitions_reason_and_message() -> None:
    world = running_world()
    world.run_policy["suspend"] = True
    suspended = world.reconcile()
    assert suspended.phase == "Suspended"
    assert ConditionUpdate("Running", "False", "JobSuspended",
                           "MachineJob train is suspended.") in suspended.decision.conditions
    left = suspended.condition("Running")
    assert left is not None
    assert (left["status"], left["reason"], left["message"]) == (
        "False", "JobSuspended", "MachineJob train is suspended.")


def test_a_state_that_sets_the_type_the_job_leaves_keeps_it_true(machine: Machine) -> None:
    # Suspended sets Running here: leaving Running for it does not make Running False first,
    # so the condition's lastTransitionTime stays the time it became True.
    machine({SUSPENDED: SUSPENDED.replace("type: Suspended", "type: Running")})
    world = running_world()
    became_true = world.reconcile().condition("Running")
    assert became_true is not None
    world.advance(60)
    world.run_policy["suspend"] = True
    suspended = world.reconcile()
    assert suspended.phase == "Suspended"
    assert [u for u in suspended.decision.conditions if u.type == "Running"] == [
        ConditionUpdate("Running", "True", "JobSuspended", "MachineJob train is suspended.")]
    now = suspended.condition("Running")
    assert now is not None and now["reason"] == "JobSuspended"
    assert now["lastTransitionTime"] == became_true["lastTransitionTime"] == format_time(T0)


def test_a_copied_condition_without_reason_or_message_is_copied_empty() -> None:
    world = running_world(cleanPodPolicy="All")
    world.pods[worker(0)] = exited(1)
    assert world.reconcile().phase == "Failing"  # until its pod is gone
    # The FailureTarget condition as another writer left it: no reason, no message.
    for condition in world.job["status"]["conditions"]:
        if condition["type"] == "FailureTarget":
            del condition["reason"], condition["message"]
    world.pods.clear()
    failed = world.reconcile()
    assert failed.phase == "Failed"
    assert [u for u in failed.decision.conditions if u.type == "Failed"] == [
        ConditionUpdate("Failed", "True", "", "")]


def test_a_condition_removed_in_the_same_pass_is_not_copied(machine: Machine) -> None:
    # Succeeding replaces Created here, and Succeeded copies Created: entered in one pass,
    # Succeeded finds Created removed and keeps its transition's own words.
    machine({
        "condition: {type: SuccessCriteriaMet, sticky: true}":
            "condition: {type: SuccessCriteriaMet, sticky: true, replaces: [Created]}",
        "condition: {type: Succeeded, moveFrom: SuccessCriteriaMet}":
            "condition: {type: Succeeded, copyFrom: Created}",
    })
    world = running_world(cleanPodPolicy="None")
    world.pods[worker(0)] = exited(0)
    succeeded = world.reconcile()
    assert succeeded.job_path == [("Running", "Succeeding", "AllReplicasSucceeded"),
                                  ("Succeeding", "Succeeded", "JobSucceeded")]
    assert [u for u in succeeded.decision.conditions if u.type == "Succeeded"] == [
        ConditionUpdate("Succeeded", "True", "JobSucceeded",
                        "MachineJob train has succeeded; the pods its clean-pod policy "
                        "removes are gone.")]
    assert succeeded.condition("Created") is None


def test_each_condition_message_that_fails_to_render_is_said(machine: Machine) -> None:
    failing = "${ {'other': 'x'}[job.metadata.name] }"
    machine({
        "condition: {type: SuccessCriteriaMet, sticky: true}":
            f'condition: {{type: SuccessCriteriaMet, sticky: true, message: "{failing}"}}',
        "condition: {type: Succeeded, moveFrom: SuccessCriteriaMet}":
            f'condition: {{type: Succeeded, message: "{failing}"}}',
    })
    world = running_world(cleanPodPolicy="None")
    world.pods[worker(0)] = exited(0)
    succeeded = world.reconcile()
    assert succeeded.phase == "Succeeded"
    assert len(succeeded.decision.errors) == 2, succeeded.decision.errors
    assert all("train" in error for error in succeeded.decision.errors), (
        succeeded.decision.errors)


FAILING_SETS_RUNNING = ('- setCondition: {type: Running, status: "False", reason: "JobFailed", '
                        'message: "MachineJob ${job.metadata.name} has failed."}')


def test_a_set_condition_without_a_reason_takes_its_type_as_reason(machine: Machine) -> None:
    # And one that says only its type is True, with no message.
    machine({FAILING_SETS_RUNNING: FAILING_SETS_RUNNING.replace(' reason: "JobFailed",', "")
             + "\n          - setCondition: {type: Cleaned}"})
    world = running_world(cleanPodPolicy="None")
    world.pods[worker(0)] = exited(1)
    failed = world.reconcile()
    assert failed.decision.errors == ()
    assert ConditionUpdate("Running", "False", "Running",
                           "MachineJob train has failed.") in failed.decision.conditions
    assert [u for u in failed.decision.conditions if u.type == "Cleaned"] == [
        ConditionUpdate("Cleaned", "True", "Cleaned", "")]


def test_a_set_condition_whose_reason_is_no_condition_reason_is_an_error_and_sets_nothing(
    machine: Machine,
) -> None:
    machine({FAILING_SETS_RUNNING: FAILING_SETS_RUNNING.replace(
        '"JobFailed"', "\"${'Job failed'}\"")})
    world = running_world(cleanPodPolicy="None")
    world.pods[worker(0)] = exited(1)
    failed = world.reconcile()
    assert failed.decision.errors == (
        "setCondition Running: reason 'Job failed' is not a condition reason (a letter, then "
        "letters, digits, _ , :)",)
    # Running goes False as the job leaves it, not as the refused setCondition says.
    assert [u.message for u in failed.decision.conditions if u.type == "Running"] == [
        "MachineJob train has failed because replicas of type [\"Worker\"] failed. Last "
        "failure: Worker-0 (exit code 1)."]
