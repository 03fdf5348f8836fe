"""The label selector of a Job, Deployment, ReplicaSet or ReplicationController, judged as
apimachinery's ValidateLabelSelector judges it: the field each cause names (matchLabels
as a whole, an expression's operator, key or one value), and its words; the selector as
the server then reads it, and the semantic equality immutability checks compare with."""

from __future__ import annotations

from typing import Any

import pytest

from engine.cluster.apiserver.validation.label_selectors import (
    label_selector_causes,
    parsed_selector,
    semantic,
)

PATH = "spec.selector"
EXPR = f"{PATH}.matchExpressions[0]"
NAME_RULE = "name part must consist of alphanumeric characters"
VALUE_RULE = "a valid label must be an empty string or consist of alphanumeric characters"


def lines(selector: dict[str, Any]) -> list[str]:
    return [f"{c.field}: {c.message}" for c in label_selector_causes(selector, PATH)]


def expression(**fields: Any) -> dict[str, Any]:
    return {"matchExpressions": [fields]}


def test_a_selector_of_labels_and_every_operator_passes() -> None:
    assert lines({
        "matchLabels": {"app": "etl", "example.com/tier": ""},
        "matchExpressions": [
            {"key": "env", "operator": "In", "values": ["prod", "staging"]},
            {"key": "env", "operator": "NotIn", "values": ["dev"]},
            {"key": "example.com/owner", "operator": "Exists"},
            {"key": "legacy", "operator": "DoesNotExist", "values": []},
        ],
    }) == []


def test_a_bad_label_key_and_value_are_both_named_at_match_labels() -> None:
    found = lines({"matchLabels": {"a b": "c d"}})
    assert [line.split(": ")[0] for line in found] == [f"{PATH}.matchLabels"] * 2
    assert found[0].startswith(f'{PATH}.matchLabels: Invalid value: "a b": {NAME_RULE}')
    assert found[1].startswith(f'{PATH}.matchLabels: Invalid value: "c d": {VALUE_RULE}')


@pytest.mark.parametrize("operator", ["In", "NotIn"])
def test_in_and_not_in_need_values(operator: str) -> None:
    expected = [f"{EXPR}.values: Required value: must be specified when `operator` is 'In' or "
                "'NotIn'"]
    assert lines(expression(key="a", operator=operator)) == expected
    assert lines(expression(key="a", operator=operator, values=[])) == expected


@pytest.mark.parametrize("operator", ["Exists", "DoesNotExist"])
def test_exists_and_does_not_exist_forbid_values(operator: str) -> None:
    assert lines(expression(key="a", operator=operator, values=["x"])) == [
        f"{EXPR}.values: Forbidden: may not be specified when `operator` is 'Exists' or "
        "'DoesNotExist'"]


def test_an_operator_outside_the_four_is_invalid_gt_included() -> None:
    assert lines(expression(key="a", operator="Gt", values=["1"])) == [
        f'{EXPR}.operator: Invalid value: "Gt": not a valid selector operator']


def test_a_missing_operator_is_the_empty_string_go_decodes() -> None:
    expected = [f'{EXPR}.operator: Invalid value: "": not a valid selector operator']
    assert lines(expression(key="a")) == expected
    assert lines(expression(key="a", operator="")) == expected


def test_the_key_must_be_a_qualified_name() -> None:
    (bad,) = lines(expression(key="a b", operator="Exists"))
    assert bad.startswith(f'{EXPR}.key: Invalid value: "a b": {NAME_RULE}')
    missing = lines(expression(operator="Exists"))
    assert missing and missing[0] == f'{EXPR}.key: Invalid value: "": name part must be non-empty'


def test_each_value_is_judged_at_its_own_index() -> None:
    (bad,) = lines(expression(key="a", operator="In", values=["ok", "not ok"]))
    assert bad.startswith(f'{EXPR}.values[1]: Invalid value: "not ok": {VALUE_RULE}')


def test_each_expression_is_judged_at_its_own_index() -> None:
    selector = {"matchExpressions": [{"key": "a", "operator": "Exists"},
                                     {"key": "b", "operator": "In"}]}
    assert lines(selector) == [
        f"{PATH}.matchExpressions[1].values: Required value: must be specified when "
        "`operator` is 'In' or 'NotIn'"]


def test_the_parsed_selector_matches_as_the_server_reads_it() -> None:
    parsed = parsed_selector({"matchLabels": {"app": "etl"},
                              "matchExpressions": [{"key": "env", "operator": "NotIn",
                                                    "values": ["dev"]}]})
    assert parsed is not None
    assert parsed.matches({"app": "etl", "env": "prod"})
    assert not parsed.matches({"app": "etl", "env": "dev"})
    assert not parsed.matches({"env": "prod"})


def test_a_selector_that_does_not_parse_reads_as_none() -> None:
    assert parsed_selector(expression(key="a", operator="In", values=[])) is None
    assert parsed_selector(expression(key="a", operator="Sometimes")) is None


def test_semantic_equality_takes_unset_null_and_empty_collections_alike() -> None:
    assert semantic({"matchLabels": {}, "matchExpressions": [], "x": None}) == semantic({})
    assert semantic({"a": {"b": {}}}) == {}
    assert semantic({"matchLabels": {"app": "etl"}}) != semantic({})
    assert semantic({"n": 0, "s": "", "f": False}) == {"n": 0, "s": "", "f": False}
    assert semantic([{"x": None}, {}]) == [{}, {}]
