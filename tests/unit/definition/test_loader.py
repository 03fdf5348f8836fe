"""Loading: YAML syntax, duplicate keys and schema errors at the offending node."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml.error import MarkedYAMLError

from engine.definition import DefinitionError, load_file, load_text, loader
from engine.definition.loader import parse_text, read_text
from tests.unit.definition.texts import HEADER, JOB, REPLICA, document


def messages(text: str) -> list[str]:
    _, diagnostics = parse_text(text, "demo.yaml")
    return [str(d) for d in diagnostics]


def test_a_valid_document_loads_with_its_positions() -> None:
    (loaded,) = load_text(document(), "demo.yaml")
    assert loaded.name == "demo"
    assert loaded.path == "demo.yaml"
    assert loaded.definition.spec.job.initial == "Running"
    assert str(loaded.positions.value(("spec", "job", "initial"))) == "demo.yaml:7:14"
    assert str(loaded.positions.key(("spec", "job", "states", "Done"))) == "demo.yaml:10:7"
    assert str(loaded.positions.value(("spec", "job", "transitions", 0))) == "demo.yaml:12:9"


def test_several_documents_load_and_empty_ones_are_skipped() -> None:
    second = document().replace("name: demo", "name: other")
    loaded = load_text("---\n" + document() + "---\n---\n" + second, "two.yaml")
    assert [(d.name, d.document) for d in loaded] == [("demo", 0), ("other", 2)]


def test_load_file_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "demo.yaml"
    path.write_text(document())
    (loaded,) = load_file(path)
    assert loaded.path == str(path)


READ_UNDER_LOCALE = ("import sys; from engine.definition.loader import read_file; "
                     "raws, problems = read_file(sys.argv[1]); "
                     "print(ascii([str(p) for p in problems] or raws[0].data['metadata']))")


def test_a_file_is_read_as_utf_8_whatever_the_locale(tmp_path: Path) -> None:
    """Machine files are UTF-8 (YAML's own encoding): one with a non-ASCII annotation loads
    the same in a process whose locale is ASCII (the C locale without Python's UTF-8 mode,
    as in some containers), not 'cannot read the file'."""
    path = tmp_path / "demo.yaml"
    path.write_text(document().replace("{name: demo}", "{name: demo, annotations: {a: café}}"),
                    encoding="utf-8")
    raws, problems = loader.read_file(path)
    assert problems == [] and raws[0].data["metadata"]["annotations"] == {"a": "café"}
    env = {**os.environ, "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    out = subprocess.run([sys.executable, "-c", READ_UNDER_LOCALE, str(path)], env=env,
                         check=True, capture_output=True, text=True).stdout.strip()
    assert out == ascii(raws[0].data["metadata"])


def test_load_file_raises_with_every_diagnostic(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(HEADER + "  job: [1\n")
    with pytest.raises(DefinitionError) as caught:
        load_file(path)
    assert [str(d) for d in caught.value.diagnostics] == [
        f"{path}:7:1: error: YAML syntax: while parsing a flow sequence, "
        "expected ',' or ']', but got '<stream end>'"
    ]


def test_yaml_syntax_error() -> None:
    assert messages(HEADER + "  job: {initial: A\n  replica: x\n") == [
        "demo.yaml:7:10: error: YAML syntax: while parsing a flow mapping, "
        "expected ',' or '}', but got ':'"
    ]


def test_yaml_that_libyaml_refuses_is_read_as_yaml_1_2_reads_it() -> None:
    """libyaml (the fast parser) refuses a colon inside a plain scalar of a flow mapping,
    which YAML 1.2 allows: such a file is read by the pure parser, not refused."""
    raws, problems = read_text("a: {image: example/train:1, b: [x:1]}\n", "m.yaml")
    assert problems == []
    assert raws[0].data == {"a": {"image": "example/train:1", "b": ["x:1"]}}
    assert raws[0].positions.value(("a", "image")).column == 12


def test_duplicate_state_name() -> None:
    job = JOB.replace("      Done: {terminal: success}\n",
                      "      Done: {terminal: success}\n      Running: {}\n")
    assert messages(document(job=job)) == [
        "demo.yaml:11:7: error: duplicate state name 'Running' (a state is defined once)"
    ]


def test_duplicate_key_elsewhere() -> None:
    job = JOB.replace("    initial: Running\n", "    initial: Running\n    initial: Done\n")
    assert messages(document(job=job)) == ["demo.yaml:8:5: error: duplicate key 'initial'"]


def test_unknown_field_lists_the_allowed_ones() -> None:
    job = JOB.replace("Running: {}", "Running: {colour: red}")
    assert messages(document(job=job)) == [
        "demo.yaml:9:17: error: unknown field 'colour'; allowed fields: phase, condition, "
        "terminal, onEnter, requeueAfter, timeout, holdReplicas, description, reachedOnlyBy, "
        "steady"
    ]


def test_wrong_type() -> None:
    job = JOB.replace("Running: {}", "Running: {holdReplicas: [1]}")
    assert messages(document(job=job)) == [
        "demo.yaml:9:31: error: 'holdReplicas' must be true or false, not a list"
    ]


def test_wrong_type_in_a_list_names_the_item() -> None:
    job = JOB.replace("from: Running", "from: [Running, 3]")
    assert messages(document(job=job)) == [
        "demo.yaml:12:26: error: 'from item 2' must be a string, not an integer"
    ]


def test_missing_field_points_at_its_mapping() -> None:
    job = JOB.replace("    initial: Running\n", "")
    assert messages(document(job=job)) == ["demo.yaml:7:5: error: missing required field 'initial'"]


def test_missing_section() -> None:
    assert messages(HEADER + REPLICA) == [
        "demo.yaml:5:3: error: missing required field 'job'"
    ]


def test_value_not_among_the_choices() -> None:
    job = JOB.replace("{terminal: success}", "{terminal: done}")
    assert messages(document(job=job)) == [
        "demo.yaml:10:24: error: 'terminal' must be one of: success, failure (got 'done')"
    ]


def test_bad_metadata_name() -> None:
    text = document().replace("name: demo", "name: Demo_1")
    assert messages(text) == [
        "demo.yaml:3:18: error: metadata.name 'Demo_1' is not a valid name: use lower-case "
        "letters, digits, '-' and '.', starting and ending with a letter or digit"
    ]


def test_wrong_api_version() -> None:
    text = document().replace("jobmachine.dev/v1alpha1", "jobmachine.dev/v1")
    assert messages(text) == [
        "demo.yaml:1:13: error: 'apiVersion' must be one of: jobmachine.dev/v1alpha1 "
        "(got 'jobmachine.dev/v1')"
    ]


def test_another_kind_is_not_a_definition() -> None:
    text = document().replace("kind: StateMachine", "kind: ConfigMap")
    assert messages(text) == ["demo.yaml:2:7: error: kind must be StateMachine, not 'ConfigMap'"]


def test_a_document_that_is_not_a_mapping() -> None:
    assert messages("- a\n- b\n") == [
        "demo.yaml:1:1: error: a document must be a StateMachine mapping, not a list"
    ]


def test_an_action_written_in_the_wrong_shape() -> None:
    job = JOB.replace('when: "restarts == 0"', "actions: [{a: 1, b: 2}, 5]")
    assert messages(document(job=job)) == [
        "demo.yaml:12:45: error: an action is a name (createPod) or a one-key mapping "
        "(cleanupPods: {policy: All}); got a mapping with keys a, b",
        "demo.yaml:12:59: error: an action is a name (createPod) or a one-key mapping "
        "(cleanupPods: {policy: All}); got an integer",
    ]


def test_action_arguments_that_are_not_a_mapping() -> None:
    job = JOB.replace('when: "restarts == 0"', "actions: [{cleanupPods: [All]}]")
    assert messages(document(job=job)) == [
        "demo.yaml:12:59: error: 'arguments of actions item 1' must be a mapping, not a list"
    ]


def test_a_condition_written_in_the_wrong_shape() -> None:
    job = JOB.replace("Running: {}", "Running: {condition: 5}")
    assert messages(document(job=job)) == [
        "demo.yaml:9:28: error: a condition is a type name or a mapping with type, status, "
        "reason, message, sticky, copyFrom, moveFrom or replaces; got an integer"
    ]


def test_actions_and_conditions_in_their_short_forms() -> None:
    job = JOB.replace("Running: {}", "Running: {condition: Running, onEnter: [cleanupPods]}")
    (loaded,) = load_text(document(job=job))
    running = loaded.definition.spec.job.states["Running"]
    assert running.condition is not None and running.condition.type == "Running"
    assert [a.name for a in running.on_enter] == ["cleanupPods"]


def test_an_empty_value_is_reported_at_its_key() -> None:
    job = JOB.split("    transitions:")[0] + "    transitions:\n"
    assert messages(document(job=job)) == [
        "demo.yaml:11:5: error: 'transitions' must be a list, not nothing (null)"
    ]


def test_a_yaml_error_that_names_no_place_is_said_at_the_files_start(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Both parsers refuse the text with an error that carries no mark: the problem is
    still one diagnostic, at line 1, column 1, in the parser's words."""

    class Refusing:
        def __init__(self, **_: object) -> None:
            pass

        def compose_all(self, _: str) -> list[object]:
            raise MarkedYAMLError(context="while reading", problem="found nothing usable")

    monkeypatch.setattr(loader, "YAML", Refusing)
    assert [str(d) for d in read_text("a: b\n", "m.yaml")[1]] == [
        "m.yaml:1:1: error: YAML syntax: while reading, found nothing usable"]
