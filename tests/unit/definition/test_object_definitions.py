"""Definitions stored as StateMachine API objects: no lines, so problems carry field paths."""

from __future__ import annotations

from typing import Any

from ruamel.yaml import YAML

from engine.definition.errors import Diagnostic
from engine.definition.loader import build_definitions, object_definition
from engine.definition.validate import check_definitions
from tests.unit.definition.texts import JOB, abstract, document, extending

BAD_GUARD = "restarts == 'x'"


def as_object(text: str) -> dict[str, Any]:
    """A definition as the API server returns it: with server-side metadata and a status."""
    obj: dict[str, Any] = YAML(typ="safe", pure=True).load(text)
    obj["metadata"] |= {"uid": "0d5f", "resourceVersion": "42", "labels": {"team": "ml"}}
    obj["status"] = {"observedGeneration": 1}
    return obj


def diagnose(obj: dict[str, Any], *bases: dict[str, Any]) -> list[Diagnostic]:
    raw = object_definition(obj)
    definitions, found = build_definitions([raw], bases=[object_definition(b) for b in bases])
    return found + check_definitions(definitions)


def located(found: list[Diagnostic]) -> list[tuple[str, str, str]]:
    return [(d.position.file, d.position.field_path, d.message) for d in found]


def test_an_object_keeps_only_what_defines_the_machine() -> None:
    raw = object_definition(as_object(document()))
    assert set(raw.data) == {"apiVersion", "kind", "metadata", "spec"}
    assert raw.data["metadata"] == {"name": "demo"}
    assert raw.path == raw.positions.file == "StateMachine demo"
    when = raw.positions.value(("spec", "job", "transitions", 0, "when"))
    assert (when.line, when.column, when.field_path) == (0, 0, "spec.job.transitions[0].when")


def test_a_cel_error_in_an_objects_transition_is_located_by_field_path() -> None:
    job = JOB + f'      - {{from: Running, to: Done, "on": deleting, when: "{BAD_GUARD}"}}\n'
    assert located(diagnose(as_object(document(job=job)))) == [(
        "StateMachine demo", "spec.job.transitions[1].when",
        "CEL type error: found no matching overload for '_==_' applied to '(int, string)' "
        "(line 1, column 10 of the expression)",
    )]


def test_a_schema_error_in_an_object_is_located_by_field_path() -> None:
    obj = as_object(document(job=JOB.replace("Running: {}", "Running: {colour: red}")))
    ((file, path, message),) = located(diagnose(obj))
    assert (file, path) == ("StateMachine demo", "spec.job.states.Running.colour")
    assert message.startswith("unknown field 'colour'")


def test_an_inherited_problem_points_at_the_base_objects_own_field() -> None:
    base = abstract(document(job=JOB.replace('when: "restarts == 0"',
                                             f'when: "{BAD_GUARD}", name: finish')))
    child = extending(
        '  job:\n    transitions:\n'
        '      - {name: stop, before: finish, from: Running, to: Done, "on": deleting}\n'
        "      - {name: finish, reason: done}\n"
    )
    found = sorted(located(diagnose(as_object(child), as_object(base))))
    assert [(file, path) for file, path, _ in found] == [
        # The merged machine has `finish` at index 1; the base object has it at 0.
        ("StateMachine base", "spec.job.transitions[0].when"),
        ("StateMachine child", "spec.job.transitions[1].reason"),
    ]
    assert found[0][2].startswith("CEL type error")
    assert found[1][2].startswith("reason 'done' must be CamelCase")


def test_merge_problems_of_objects_are_located_by_field_path() -> None:
    base = as_object(abstract(document(job=JOB.replace('when: "restarts == 0"',
                                                       "name: finish"))))
    child = as_object(extending(
        "  job:\n    transitions:\n      - {name: finish}\n      - {name: nope, remove: true}\n"
    ))
    assert located(diagnose(child, base)) == [
        ("StateMachine child", "spec.job.transitions[1].remove",
         "no transition named 'nope' to remove"),
    ]
    assert located(diagnose(child)) == [
        ("StateMachine child", "spec.extends", "no machine named 'base' to extend"),
    ]


def test_an_object_whose_metadata_is_no_mapping_keeps_it_for_the_schema_to_refuse() -> None:
    obj = as_object(document())
    obj["metadata"] = "demo"
    raw = object_definition(obj)
    assert (raw.data["metadata"], raw.path) == ("demo", "StateMachine None")
    definitions, found = build_definitions([raw])
    assert definitions == []
    assert [(d.position.field_path, d.message) for d in found] == [
        ("metadata", "'metadata' must be a mapping, not a string")]
