"""The static checks at their edges: what an earlier transition shadows, a YAML boolean
among an argument's choices, job-level-only state fields, objects named like the job and
their fields, a child's words in a machine of pods, one kind governed twice beside an
abstract machine."""

from __future__ import annotations

from pathlib import Path

from engine.definition.validate import validate_paths, validate_text
from tests.unit.definition.texts import JOB, REPLICA, abstract, document


def lines(text: str) -> list[str]:
    return [str(d) for d in validate_text(text, "demo.yaml")]


def test_an_earlier_transition_on_the_same_observation_shadows_a_later_one() -> None:
    text = REPLICA + "      - {from: Pending, to: Failed, \"on\": podRunning}\n"
    assert lines(document(replica=text)) == [
        "demo.yaml:25:9: warning: this transition can never fire: an earlier transition from "
        "the same state with no 'when' (line 22) always wins"
    ]


def test_an_earlier_transition_on_another_observation_does_not_shadow() -> None:
    text = REPLICA + "      - {from: Pending, to: Failed, \"on\": podPending}\n"
    assert lines(document(replica=text)) == []


def test_yaml_true_is_read_as_its_choice() -> None:
    for status in ("True", "true", "False"):
        action = f"actions: [{{setCondition: {{type: Ready, status: {status}}}}}]"
        assert lines(document(job=JOB.replace('when: "restarts == 0"', action))) == []


def test_steady_is_a_job_state_that_does_not_end_the_job() -> None:
    assert lines(document(replica=REPLICA.replace("Running: {}", "Running: {steady: true}"))) == [
        "demo.yaml:17:17: error: 'steady' is only allowed at job level: a replica that runs "
        "for ever stays in a state with a transition out"
    ]
    assert lines(document(job=JOB.replace(
        "Done: {terminal: success}", "Done: {terminal: success, steady: true}"))) == [
        "demo.yaml:10:33: error: a terminal state ends the job; 'steady' is for a state the "
        "job rests in without ending"
    ]
    assert lines(document(job=JOB.replace("Running: {}", "Running: {steady: true}"))) == []
    assert lines(document(replica=REPLICA.replace(
        "Running: {}", "Running: {holdReplicas: true}"))) == [
        "demo.yaml:17:17: error: 'holdReplicas' is only allowed at job level"
    ]


def test_one_object_of_a_kind_may_be_named_like_the_job() -> None:
    extra = ("  objects:\n"
             "    - {name: a, apiVersion: v1, kind: ConfigMap, naming: JobName}\n"
             "    - {name: b, apiVersion: v1, kind: ConfigMap, naming: JobName}\n"
             "    - {name: c, apiVersion: v1, kind: Secret, naming: JobName}\n"
             "    - {name: d, apiVersion: v2, kind: ConfigMap, naming: JobName}\n")
    assert lines(document(extra=extra)) == [
        "demo.yaml:27:58: error: objects[0] is already a ConfigMap (v1) named like the job: "
        "two would have the same name"
    ]


def test_the_fields_of_an_object_leave_its_type_and_metadata_to_the_engine() -> None:
    extra = ("  objects:\n    - {name: cm, apiVersion: v1, kind: ConfigMap, fields: "
             "{apiVersion: \"'v2'\", kind: \"'x'\", metadata: \"'x'\", data: \"'x'\"}}\n")
    set_by_engine = ("is set by the engine (from apiVersion, kind and name, labels and "
                     "annotations), not by 'fields'")
    assert lines(document(extra=extra)) == [
        f"demo.yaml:26:60: error: 'apiVersion' {set_by_engine}",
        f"demo.yaml:26:80: error: 'kind' {set_by_engine}",
        f"demo.yaml:26:93: error: 'metadata' {set_by_engine}",
    ]


def test_a_transition_shadowed_from_only_some_of_its_states_may_still_fire() -> None:
    job = """\
  job:
    initial: Running
    states:
      Running: {}
      Waiting: {}
      Done: {terminal: success}
    transitions:
      - {from: Running, to: Waiting, when: "restarts > 0"}
      - {from: Running, to: Done, reason: First}
      - {from: [Running, Waiting], to: Done, reason: Later}
      - {from: Waiting, to: Done, reason: Last}
"""
    assert lines(document(job=job)) == [
        "demo.yaml:16:9: warning: this transition can never fire: an earlier transition from "
        "the same state with no 'when' (line 15) always wins"
    ]


def test_a_wildcard_over_no_state_that_can_be_left_shadows_nothing() -> None:
    job = ("  job:\n    initial: Done\n    states:\n      Done: {terminal: success}\n"
           "    transitions:\n      - {from: \"*\", to: Done}\n")
    assert lines(document(job=job)) == []


def test_a_childs_observation_in_a_machine_of_pods_is_named() -> None:
    text = document(replica=REPLICA.replace('"on": podRunning', '"on": childReady'))
    assert lines(text) == [
        "demo.yaml:22:44: error: 'childReady' is about a replica's child object, and this "
        "machine's replicas are pods: add a spec.child section to make them objects of "
        "another kind"
    ]


def test_one_kind_governed_twice_after_an_abstract_machine(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_text(abstract(document()) + "---\n" + document().replace("name: demo", "name: one")
                    + "---\n" + document().replace("name: demo", "name: two"))
    assert [str(d) for d in validate_paths([path])] == [
        f"{path}:55:12: error: example.dev/v1 Demo is already governed by definition 'one' "
        f"({path}:30:12)"
    ]


def test_a_pods_observation_in_a_machine_of_children_names_the_childs_words() -> None:
    machine = Path(__file__).parent / "children" / "jobs.yaml"
    text = machine.read_text(encoding="utf-8").replace('"on": childReady', '"on": podRunning')
    assert [str(d) for d in validate_text(text, "jobs.yaml")] == [
        "jobs.yaml:49:42: error: 'podRunning' is about a replica's pod, and this machine's "
        "replicas are children (spec.child): use childMissing, childPending, childReady, "
        "childSucceeded, childFailed, childGone, createChild and deleteChild"
    ]


def test_each_action_is_checked_after_an_unknown_one_and_named_in_its_error() -> None:
    actions = "actions: [nope, {cleanupPods: {policy: Some}}]"
    assert lines(document(job=JOB.replace('when: "restarts == 0"', actions))) == [
        "demo.yaml:12:45: error: unknown action 'nope'; job actions are: cleanupPods, "
        "restartJob, setCondition, event",
        "demo.yaml:12:74: error: argument 'policy' of 'cleanupPods' must be one of: All, "
        "Running, None (got 'Some')",
    ]
    text = document(replica=REPLICA.replace("actions: [createPod]", "actions: [createChild]"))
    assert lines(text) == [
        "demo.yaml:21:66: error: 'createChild' is about a replica's child object, and this "
        "machine's replicas are pods: add a spec.child section to make them objects of "
        "another kind"
    ]


def test_an_argument_written_as_cel_must_be_text() -> None:
    actions = "actions: [{restartJob: {count: 2}}]"
    assert lines(document(job=JOB.replace('when: "restarts == 0"', actions))) == [
        "demo.yaml:12:66: error: argument 'count' of 'restartJob' must be a string "
        "(a CEL expression)"
    ]


def test_a_suffix_written_that_another_object_has_is_said_at_the_suffix() -> None:
    extra = ("  objects:\n    - {name: launcher, apiVersion: v1, kind: ServiceAccount}\n"
             "    - {name: account, suffix: launcher, apiVersion: v1, kind: ServiceAccount}\n")
    assert lines(document(extra=extra)) == [
        "demo.yaml:27:31: error: objects[0] is already a ServiceAccount (v1) named "
        "<job>-launcher: two would have the same name"
    ]


def test_a_childs_field_refused_is_said_at_its_key() -> None:
    machine = Path(__file__).parent / "children" / "jobs.yaml"
    text = machine.read_text(encoding="utf-8").replace(
        "    status:\n      ready:", "    fields:\n      metadata.labels: 'true'\n"
        "      spec..x: 'true'\n    status:\n      ready:", 1)
    assert [str(d) for d in validate_text(text, "jobs.yaml") if d.is_error] == [
        "jobs.yaml:18:7: error: 'metadata.labels' is set by the engine (from apiVersion, kind, "
        "name, labels and annotations), not by 'fields'",
        "jobs.yaml:19:7: error: 'spec..x' is not a dotted path of field names (spec.suspend)",
    ]
