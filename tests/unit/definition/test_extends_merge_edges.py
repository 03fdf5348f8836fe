"""`spec.extends` at the edges of its merge rules (extends.py): a list merged by name that
the extending machine writes as no list, or with an item that is no mapping; changes after
a name written twice; where the merged list is indexed; child objects merged by name; a
moved item's missing anchor; a name that is no string; a level the base lacks; a base's own
`extends`; the root of a later document; the merged machine's file, document and errors; a
base not found where no places were searched."""

from __future__ import annotations

from engine.definition.errors import Position
from engine.definition.extends import resolve
from engine.definition.loader import parse_text, read_text
from engine.definition.validate import validate_text
from tests.unit.definition.test_extends import (
    BASE,
    BASE_REST,
    NAMED_REPLICA,
    merged,
    names,
    parsed,
)
from tests.unit.definition.texts import abstract, document, extending


def test_a_named_list_written_as_no_list_is_the_extending_machines_shape_error() -> None:
    # The base's list is not merged into it: the schema says what is wrong where it is written.
    for body, words in (
        ("  job:\n    transitions: {finish: 1}\n", "8:18: error: 'transitions' must be a list, "
                                                   "not a mapping"),
        ("  job:\n    transitions: 3\n", "8:18: error: 'transitions' must be a list, not an "
                                         "integer"),
        ("  objects: {a: 1}\n", "7:12: error: 'objects' must be a list, not a mapping"),
    ):
        definitions, problems = parsed(body)
        assert (definitions, problems) == ([], [f"child.yaml:{words}"])


def test_the_changes_after_a_name_written_twice_are_still_merged_and_checked() -> None:
    body = """\
  job:
    transitions:
      - {name: extra, from: Running, to: Done, "on": deleting}
      - {name: extra, from: Running, to: Broken, "on": resumed}
      - {name: late, before: nothing, from: Running, to: Done, "on": resumed}
"""
    assert parsed(body)[1] == [
        "child.yaml:10:16: error: transition name 'extra' is already used earlier in this "
        "machine: name each change once",
        "child.yaml:11:30: error: no transition named 'nothing' to go before; named "
        "transitions: finish, break, extra",
    ]


def test_a_merged_list_is_indexed_where_the_extending_machine_wrote_it() -> None:
    # Line 7 on is the extending machine's (child.yaml); the replica's list is the base's.
    child = merged("""\
  job:
    transitions:
      - {name: extra, from: Running, to: Done, "on": deleting}
""")
    transitions = ("spec", "job", "transitions")
    assert child.positions.value(transitions) == Position("child.yaml", 9, 7, transitions)
    assert child.positions.key(transitions) == Position("child.yaml", 8, 5, transitions)
    assert str(child.positions.value(("spec", "replica", "transitions"))) == "base.yaml:23:7"


def test_an_item_that_is_no_mapping_goes_last_and_is_a_shape_error_where_written() -> None:
    assert parsed("  job:\n    transitions:\n      - just words\n")[1] == [
        "child.yaml:9:9: error: 'transitions item 3' must be a mapping, not a string"
    ]


OBJECTS = """\
  objects:
    - {name: keys, apiVersion: v1, kind: Secret}
    - {name: hosts, apiVersion: v1, kind: ConfigMap}
"""


def test_child_objects_are_merged_by_name_like_transitions() -> None:
    child = merged("""\
  objects:
    - {name: keys, remove: true}
    - {name: extra, before: hosts, apiVersion: v1, kind: ConfigMap}
    - {name: hosts, kind: Secret}
""", BASE + OBJECTS)
    assert [(o.name, o.kind) for o in child.definition.spec.objects] == [
        ("extra", "ConfigMap"), ("hosts", "Secret")]


def test_a_changed_item_moved_next_to_a_name_not_there_is_an_error_naming_its_kind() -> None:
    assert parsed("  job:\n    transitions:\n      - {name: finish, before: nothing}\n")[1] == [
        "child.yaml:9:32: error: no transition named 'nothing' to go before; named "
        "transitions: break"
    ]
    assert parsed("  objects:\n    - {name: hosts, after: nothing}\n", BASE + OBJECTS)[1] == [
        "child.yaml:8:28: error: no object named 'nothing' to go after; named objects: keys"
    ]


def test_a_name_that_is_no_string_names_nothing_to_merge() -> None:
    # Two transitions `name: 3` are two new ones, not a name written twice: each is the
    # schema's error alone.
    body = """\
  job:
    transitions:
      - {name: 3, from: Running, to: Done, "on": deleting}
      - {name: 3, from: Running, to: Broken, "on": resumed}
"""
    assert parsed(body)[1] == [
        "child.yaml:9:16: error: 'name' must be a string, not an integer",
        "child.yaml:10:16: error: 'name' must be a string, not an integer",
    ]


def test_a_level_the_base_lacks_is_merged_by_the_rules_all_the_same() -> None:
    # `before:` still places the transition, and is not kept as a field of it.
    base = abstract(document(job="", replica=NAMED_REPLICA, extra=BASE_REST))
    child = merged("""\
  job:
    initial: Running
    states:
      Running: {phase: Active}
      Done: {terminal: success}
    transitions:
      - {name: finish, from: Running, to: Done, "on": deleting}
      - {name: first, before: finish, from: Running, to: Done, "on": resumed}
""", base)
    assert names(child, "job") == ["first", "finish"]
    assert "before" not in child.data["spec"]["job"]["transitions"][0]


def test_a_bases_own_extends_is_not_inherited_even_when_it_names_nothing() -> None:
    # `extends: 3` ends the base's chain (it names no machine); it is the base's problem,
    # reported when the base is checked, not the extending machine's.
    base = BASE.replace("  abstract: true\n", "  abstract: true\n  extends: 3\n")
    assert base != BASE
    assert parsed("", base)[1] == []


def test_a_problem_at_the_root_of_a_later_document_is_at_that_documents_start() -> None:
    child = extending("").replace("apiVersion: jobmachine.dev/v1alpha1\n", "")
    assert [str(d) for d in validate_text(BASE + "---\n" + child, "two.yaml")] == [
        "two.yaml:35:1: error: missing required field 'apiVersion'"
    ]


def test_a_merged_machine_is_its_own_document_of_its_own_file() -> None:
    text = BASE + "---\n" + extending(name="one") + "---\n" + extending(name="two", kind="Other")
    definitions, problems = parse_text(text, "f.yaml")
    assert problems == []
    assert [(d.name, d.path, d.document) for d in definitions] == [
        ("base", "f.yaml", 0), ("one", "f.yaml", 1), ("two", "f.yaml", 2)]


def test_an_extending_machine_read_with_errors_yields_no_machine_once_merged() -> None:
    child = extending("  pod:\n    env: {A: \"'x'\", A: \"'y'\"}\n")
    definitions, problems = parse_text(BASE + "---\n" + child, "f.yaml")
    assert [d.name for d in definitions] == ["base"]
    assert [str(p) for p in problems] == ["f.yaml:42:21: error: duplicate key 'A'"]


def test_a_base_not_found_names_no_places_when_none_are_given() -> None:
    # As the admission of StateMachine objects asks: no folders were searched.
    (raw,), _ = read_text(extending(), "child.yaml")
    resolved, problems = resolve(raw, lambda name: None)
    assert resolved is None
    assert [str(p) for p in problems] == [
        "child.yaml:5:12: error: no machine named 'base' to extend"]
