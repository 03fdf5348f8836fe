"""spec.child: replicas that are objects of another kind (a JobSet's Jobs), not pods.

The section is checked where it is written, its status expressions make the replica's
observation, and the object made for a replica is the replica spec's template as that kind.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from engine.controller.reconcile.children import ReplicaId, controller_uid
from engine.controller.reconcile.jobspec import read_job_spec
from engine.controller.reconcile.manifests import FIELDS_HASH_ANNOTATION, build_child
from engine.controller.reconcile.objects import content_hash
from engine.controller.reconcile.observe import observe_child
from engine.definition import (
    ChildDecorations,
    CompiledDefinition,
    compile_definition,
    load_file,
    load_text,
    render_child_decorations,
)
from engine.definition.cel import CelEvaluationError
from engine.definition.validate import validate_text
from engine.modelcheck.check import check_paths
from engine.modelcheck.shapes import Bounds
from engine.simulation.loading import ScenarioError, load_scenario

MACHINE = Path(__file__).parent / "children" / "jobs.yaml"
TEXT = MACHINE.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def definition() -> CompiledDefinition:
    (loaded,) = load_file(MACHINE)
    return compile_definition(loaded)


def problems(text: str) -> list[str]:
    return [str(d) for d in validate_text(text, "jobs.yaml") if d.is_error]


def job(replicas: int = 2) -> dict[str, Any]:
    template = {"metadata": {"labels": {"team": "ml"}, "annotations": {"note": "kept"}},
                "spec": {"backoffLimit": 0, "template": {"spec": {
                    "restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}}
    return {"apiVersion": "example.com/v1", "kind": "JobsJob",
            "metadata": {"name": "trio", "namespace": "ml", "uid": "u-1", "generation": 1},
            "spec": {"workers": {"Worker": {"replicas": replicas, "template": template}}}}


def batch_job(*conditions: tuple[str, str, str], ready: int = 0,
              deleting: bool = False) -> dict[str, Any]:
    """A Job as the parent's watch shows it: its conditions (type, reason, message)."""
    metadata: dict[str, Any] = {"name": "trio-worker-0", "uid": "j-1"}
    if deleting:
        metadata["deletionTimestamp"] = "2027-01-15T08:00:00Z"
    return {"metadata": metadata, "status": {
        "ready": ready,
        "conditions": [{"type": t, "status": "True", "reason": r, "message": m}
                       for t, r, m in conditions]}}


def test_the_machine_is_valid() -> None:
    assert problems(TEXT) == []


def test_a_pods_words_in_a_machine_of_children_are_errors_at_their_line() -> None:
    text = TEXT.replace("onEnter: [createChild]", "onEnter: [createPod]").replace(
        '"on": childReady', '"on": podRunning')
    found = problems(text)
    assert [line.split(": error: ")[0] for line in found] == ["jobs.yaml:42:27",
                                                              "jobs.yaml:49:42"]
    assert all("is about a replica's pod, and this machine's replicas are children "
               "(spec.child)" in line for line in found), found


def test_a_childs_words_in_a_machine_of_pods_are_errors() -> None:
    start = TEXT.index("  child:")
    end = TEXT.index("  job:")
    found = problems(TEXT[:start] + TEXT[end:])
    assert len(found) == 5, found  # createChild and the four child observations
    assert all("is about a replica's child object, and this machine's replicas are pods: add "
               "a spec.child section" in line for line in found), found


def test_pod_and_child_sections_do_not_go_together() -> None:
    found = problems(TEXT.replace("  job:\n", "  pod: {container: c}\n  job:\n", 1))
    assert any("a pod section or a child section, not both" in line for line in found), found


def test_a_status_expression_of_the_wrong_type_is_an_error_where_it_is_written() -> None:
    as_text = TEXT.replace('ready: "has(child.status)', 'ready: "string(has(child.status)')
    found = problems(as_text.replace('child.status.ready > 0"', 'child.status.ready > 0)"'))
    assert found == ["jobs.yaml:18:14: error: this expression must give bool, but it gives "
                     "string"], found


@pytest.mark.parametrize(("child", "observation"), [
    (None, "childMissing"),
    (batch_job(), "childPending"),
    (batch_job(ready=1), "childReady"),
    (batch_job(("Complete", "", "")), "childSucceeded"),
    (batch_job(("Complete", "", ""), deleting=True), "childSucceeded"),
    (batch_job(ready=1, deleting=True), "childGone"),
])
def test_the_status_expressions_make_the_observation(
    definition: CompiledDefinition, child: dict[str, Any] | None, observation: str
) -> None:
    facts = observe_child(child, job=job(), definition=definition)
    assert facts.observation == observation
    assert facts.child == (child or {})


def test_a_failed_child_says_why_in_its_own_words(definition: CompiledDefinition) -> None:
    failed = batch_job(("Failed", "BackoffLimitExceeded",
                        "Job has reached the specified backoff limit"))
    facts = observe_child(failed, job=job(), definition=definition)
    assert (facts.observation, facts.reason) == ("childFailed", "BackoffLimitExceeded")
    assert facts.termination == (
        "BackoffLimitExceeded: Job has reached the specified backoff limit")
    assert facts.terminal and not facts.active


def test_a_status_expression_that_fails_leaves_the_child_pending_and_says_why(
    definition: CompiledDefinition,
) -> None:
    odd = {"metadata": {"name": "trio-worker-0"}, "status": {"ready": "many"}}
    facts = observe_child(odd, job=job(), definition=definition)
    assert facts.observation == "childPending"
    assert facts.error.startswith("child trio-worker-0: ")


def test_the_child_is_the_replica_specs_template_as_the_childs_kind(
    definition: CompiledDefinition,
) -> None:
    made = job()
    spec = read_job_spec(made, definition)
    assert spec.error == ""  # a Job template has no containers of its own: not a pod's
    (worker,) = spec.replica_types
    child = build_child(made, definition, worker, ReplicaId("Worker", 1),
                        ChildDecorations(None, {"example.com/replica": "Worker-1"}, {}),
                        attempt=2)
    assert (child["apiVersion"], child["kind"]) == ("batch/v1", "Job")
    metadata = child["metadata"]
    assert (metadata["name"], metadata["namespace"]) == ("trio-worker-1", "ml")
    assert metadata["labels"] == {
        "team": "ml", "example.com/replica": "Worker-1",
        "jobmachine.dev/job-name": "trio", "jobmachine.dev/job-uid": "u-1",
        "jobmachine.dev/replica-type": "Worker", "jobmachine.dev/replica-index": "1",
        "jobmachine.dev/restart-attempt": "2"}
    assert metadata["annotations"] == {"note": "kept"}
    assert controller_uid(child) == "u-1"
    assert "finalizers" not in metadata
    assert child["spec"] == made["spec"]["workers"]["Worker"]["template"]["spec"]


def test_simulate_names_the_machine_a_child_kind_lacks(tmp_path: Path) -> None:
    """simulate plays each child with its own machine (tests/unit/simulation/test_nested.py);
    with none for the child's kind among the machines given it says which kind and where."""
    machines = tmp_path / "machines"
    machines.mkdir()
    (machines / "jobs.yaml").write_text(TEXT)
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(
        "job:\n  apiVersion: example.com/v1\n  kind: JobsJob\n  metadata: {name: trio}\n"
        "  spec: {workers: {Worker: {replicas: 1, template: {spec: {}}}}}\n"
        "expect: {state: Succeeded}\n")
    with pytest.raises(ScenarioError) as raised:
        load_scenario(scenario, machines=machines)
    (problem,) = raised.value.diagnostics
    assert (f"machine jobsofjobs's replicas are Job objects (spec.child), and no machine in "
            f"{machines} governs batch/v1 Job: simulate plays a child with its own machine"
            ) in str(problem)


def test_check_explores_a_machine_of_children_with_the_shipped_machine_of_their_kind() -> None:
    """Checked alone, its Jobs move as the shipped batch-job machine makes them
    (tests/unit/modelcheck/test_children.py has more)."""
    report = check_paths([MACHINE], Bounds())
    assert report.ok
    assert report.diagnostics == []
    (machine,) = report.machines
    assert machine.definition.name == "jobsofjobs"
    assert machine.situations > 1


def test_forced_fields_are_set_at_their_paths_with_their_hash(
    definition: CompiledDefinition,
) -> None:
    made = job()
    (worker,) = read_job_spec(made, definition).replica_types
    forced = {"spec.suspend": True, "spec.template.spec.subdomain": "trio"}
    with_fields = replace(definition, child=replace(
        definition.child, fields={path: definition.child.status["ready"] for path in forced}))
    child = build_child(made, with_fields, worker, ReplicaId("Worker", 0),
                        ChildDecorations(None, {}, {}, forced))
    assert child["spec"]["suspend"] is True
    assert child["spec"]["template"]["spec"]["subdomain"] == "trio"
    assert child["spec"]["template"]["spec"]["restartPolicy"] == "Never"  # the rest is kept
    assert child["spec"]["backoffLimit"] == 0
    assert child["metadata"]["annotations"][FIELDS_HASH_ANNOTATION] == content_hash(forced)
    assert content_hash(forced) != content_hash({**forced, "spec.suspend": False})


@pytest.mark.parametrize(("path", "message"), [
    ("spec..suspend", "'spec..suspend' is not a dotted path of field names"),
    ("metadata.labels", "'metadata.labels' is set by the engine"),
])
def test_a_forced_field_must_be_a_path_the_engine_leaves_to_the_machine(
    path: str, message: str
) -> None:
    text = TEXT.replace("    status:\n      ready:", f"    fields:\n      {path}: 'true'\n"
                        "    status:\n      ready:", 1)
    found = problems(text)
    assert len(found) == 1 and message in found[0], found


def test_metadata_gives_labels_and_annotations_known_only_at_run_time() -> None:
    text = TEXT.replace("    labels:\n      example.com/replica:", (
        "    metadata: >-\n"
        "      {'labels': {'example.com/from': job.metadata.name, 'example.com/replica': 'x'},\n"
        "       'annotations': {'example.com/note': 'made'}}\n"
        "    labels:\n      example.com/replica:"), 1)
    (loaded,) = load_text(text, "jobs.yaml")
    compiled = compile_definition(loaded)
    made = render_child_decorations(compiled, {
        "job": job(), "replica": {"type": "Worker", "index": 1, "restarts": 0, "desired": 2}})
    # The per-key labels win over the map's.
    assert made.labels == {"example.com/from": "trio", "example.com/replica": "Worker-1"}
    assert made.annotations == {"example.com/note": "made"}


def test_metadata_that_is_not_a_map_of_maps_is_an_evaluation_error() -> None:
    text = TEXT.replace("    labels:\n      example.com/replica:", (
        "    metadata: \"{'labels': job.metadata.name}\"\n"
        "    labels:\n      example.com/replica:"), 1)
    (loaded,) = load_text(text, "jobs.yaml")
    with pytest.raises(CelEvaluationError, match=r"child\.metadata\.labels gave 'trio'"):
        render_child_decorations(compile_definition(loaded), {
            "job": job(), "replica": {"type": "Worker", "index": 1, "restarts": 0,
                                      "desired": 2}})
