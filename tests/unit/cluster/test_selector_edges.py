"""Label and field selectors at their edges: a set of one value is printed as that value in
parentheses, the empty value alone as `()` (apimachinery's Requirement.String, which /scale
and `kubectl get -o wide` show),
and a backslash escapes the last character of a field selector as it does any other
(fields.ParseSelector's splitTerms, then UnescapeValue)."""

from __future__ import annotations

import pytest

from engine.cluster.apiserver.registry.selectors import FieldSelector, LabelSelector, fields_for


@pytest.mark.parametrize("value", ["web", "XXXX", "in", "a.b-c_d"])
def test_a_set_of_one_value_is_printed_as_that_value_in_parentheses(value: str) -> None:
    for operator in ("in", "notin"):
        selector = LabelSelector.parse(f"app {operator} ({value})")
        assert str(selector) == f"app {operator} ({value})"


def test_a_set_from_match_expressions_with_one_value_is_printed_as_that_value() -> None:
    selector = LabelSelector.from_object(
        {"matchExpressions": [{"key": "app", "operator": "In", "values": ["XXXX"]}]}
    )
    assert str(selector) == "app in (XXXX)"


@pytest.mark.parametrize("text", ["app in ()", "app in (,)", "app notin ()"])
def test_a_set_of_the_empty_value_alone_is_printed_as_empty_parentheses(text: str) -> None:
    """Requirement.String writes the lone value as it is, so `()`, which parseValues reads
    back as the set holding the empty value."""
    printed = str(LabelSelector.parse(text))
    assert printed == text.replace("(,)", "()")
    assert LabelSelector.parse(printed) == LabelSelector.parse(text)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (r"metadata.name=a\,", "a,"),
        (r"metadata.name=a\=", "a="),
        (r"metadata.name=a\\", "a\\"),
        (r"metadata.name=\,", ","),
    ],
    ids=["comma", "equals", "backslash", "comma alone"],
)
def test_an_escaped_last_character_of_a_field_selector_is_part_of_the_value(
    text: str, value: str
) -> None:
    selector = FieldSelector.parse(text, fields_for("", "pods"))
    assert [(term.field, term.value, term.negated) for term in selector.terms] == [
        ("metadata.name", value, False)
    ]
    assert selector.matches({"metadata": {"name": value}})
