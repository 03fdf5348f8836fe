"""A kind's validation rules judged for one job (rendering.broken_rules): each broken rule
as `fieldPath: message`, the job's own words from messageExpression when it can say them,
else the rule's message."""

from __future__ import annotations

from typing import Any

from engine.definition import compile_definition, load_text
from engine.definition.compiled import CompiledDefinition
from engine.definition.rendering import broken_rules
from tests.unit.definition.texts import document


def machine(said: str, field_path: str = "") -> CompiledDefinition:
    rule = ("  validations:\n    - rule: \"job.spec.names.all(n, n != 'x')\"\n"
            "      message: a name is x\n"
            f"      messageExpression: \"{said}\"\n")
    if field_path:
        rule += f"      fieldPath: {field_path}\n"
    (loaded,) = load_text(document(extra=rule), "demo.yaml")
    return compile_definition(loaded)


def names(*given: Any) -> dict[str, Any]:
    return {"spec": {"names": list(given)}}


def test_a_message_expression_that_cannot_say_leaves_the_message() -> None:
    failing = machine("'name ' + job.spec.other")
    assert broken_rules(failing, names("x")) == ["a name is x"]
    empty = machine("''")
    assert broken_rules(empty, names("x")) == ["a name is x"]
    saying = machine("'names: ' + job.spec.names.join(', ')")
    assert broken_rules(saying, names("a", "x")) == ["names: a, x"]
    assert broken_rules(saying, names("a")) == []


def test_a_rule_that_cannot_be_evaluated_is_broken_with_the_reason() -> None:
    (found,) = broken_rules(machine("''", ".spec.names"), {"spec": {}})
    assert found.startswith(".spec.names: a name is x (the rule cannot be evaluated: ")
