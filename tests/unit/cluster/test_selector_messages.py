"""Label and field selectors at their edges: kube-apiserver's exact words for each parse
error (a client shows them to the user), Gt/Lt at the bound, and field values as the
server renders them. The property tests cover parsing and matching in bulk; these pin
the words and boundaries one by one."""

from __future__ import annotations

from typing import Any

import pytest

from engine.cluster.apiserver.registry.selectors import (
    EQUALS,
    EXISTS,
    GT,
    IN,
    LT,
    FieldSelector,
    LabelSelector,
    SelectorError,
    field_value,
    requirement,
)

PREFIX = "unable to parse requirement: "


# apimachinery v0.32's labels.Parse, word for word (pkg/labels/selector.go): a mistake inside
# a requirement after PREFIX, one between requirements bare.
@pytest.mark.parametrize(("text", "message"), [
    ("a>x", PREFIX + "values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value "
                     "must be an integer"),
    ("a<1.5", PREFIX + "values[0]: Invalid value: \"1.5\": for 'Gt', 'Lt' operators, the value "
                       "must be an integer"),
    ("a>99999999999999999999", PREFIX + "values[0]: Invalid value: \"99999999999999999999\": "
                                        "for 'Gt', 'Lt' operators, the value must be an integer"),
    ("!", PREFIX + "found '', expected: identifier"),
    ("!=x", "found '!=', expected: !, identifier, or 'end of string'"),
    ("a b", PREFIX + "found 'b', expected: in, notin, =, ==, !=, gt, lt"),
    ("a=(", PREFIX + "found '(', expected: identifier"),
    ("a in x", PREFIX + "found 'x' expected: '('"),
    ("a in (x y)", PREFIX + "found 'y', expected: ',' or ')'"),
    ("a in (x", PREFIX + "found '', expected: ',' or ')'"),
    ("a in (=)", PREFIX + "found '=', expected: ',', ')' or identifier"),
    ("a in (x,,)", PREFIX + "found ')', expected: ',', or identifier"),
    ("a in (x,y", PREFIX + "found '', expected: ',' or ')'"),
    ("a=b c", "found 'c', expected: ',' or 'end of string'"),
    ("a=b=c", "found '=', expected: ',' or 'end of string'"),
    ("a=b!", "found '!', expected: ',' or 'end of string'"),
    ("!a=b", "found '=', expected: ',' or 'end of string'"),
    ("a,", "found '', expected: identifier after ','"),
    (",a", "found ',', expected: !, identifier, or 'end of string'"),
    ("-bad", PREFIX + "<nil>: Invalid value: \"-bad\": name part must consist of alphanumeric "
                      "characters, '-', '_' or '.', and must start and end with an alphanumeric "
                      "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                      "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
    ("a==", None),  # an empty value is a value
])
def test_label_selector_errors_are_kube_apiservers_words(text: str, message: str | None) -> None:
    if message is None:
        assert str(LabelSelector.parse(text)) == "a="
        return
    with pytest.raises(SelectorError) as refused:
        LabelSelector.parse(text)
    assert str(refused.value) == message


@pytest.mark.parametrize(("text", "values"), [
    ("a in ()", ("",)), ("a notin ()", ("",)), ("a in (,)", ("",)), ("a in (,x)", ("", "x")),
    ("a in (x,)", ("", "x")), ("a in (b,,c)", ("", "b", "c")), ("in in (notin)", ("notin",)),
])
def test_a_set_takes_empty_values_as_apimachinery_reads_them(
    text: str, values: tuple[str, ...],
) -> None:
    (found,) = LabelSelector.parse(text).requirements
    assert found.values == values


def test_several_problems_of_one_requirement_are_one_aggregate() -> None:
    with pytest.raises(SelectorError) as refused:
        requirement("-bad", IN, ["-also"])
    assert str(refused.value).startswith('[key: Invalid value: "-bad": ')
    assert ', values[0][-bad]: Invalid value: "-also": ' in str(refused.value)
    assert str(refused.value).endswith("]")


@pytest.mark.parametrize(("operator", "values", "message"), [
    ("=", ["a", "b"], 'values: Invalid value: []string{"a", "b"}: exact-match compatibility '
                      "requires one single value"),
    ("=", [], "values: Invalid value: []string{}: exact-match compatibility requires one "
              "single value"),
    (EXISTS, ["a"], 'values: Invalid value: []string{"a"}: values set must be empty for exists '
                    "and does not exist"),
    (IN, None, "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set "
               "can't be empty"),
    (GT, ["1", "2"], 'values: Invalid value: []string{"1", "2"}: for \'Gt\', \'Lt\' operators, '
                     "exactly one value is required"),
    ("~", [], 'operator: Unsupported value: "~": supported values: "in", "notin", "=", "==", '
              '"!=", "gt", "lt", "exists", "!"'),
])
def test_requirement_errors(operator: str, values: list[str] | None, message: str) -> None:
    with pytest.raises(SelectorError) as refused:
        requirement("k", operator, values)
    assert str(refused.value) == message


def test_matching_label_values_that_are_absent_read_as_empty() -> None:
    assert LabelSelector.parse("a in (,x)").matches({"a": ""})
    assert not LabelSelector.parse("a in (,x)").matches({})
    assert LabelSelector.parse("a!=").matches({"a": "x"})
    assert not LabelSelector.parse("a!=").matches({"a": ""})


@pytest.mark.parametrize(("text", "value", "matches"), [
    ("n>3", "4", True), ("n>3", "3", False), ("n<3", "2", True), ("n<3", "3", False),
    ("n>0", "1", True), ("n<0", "x", False),
])
def test_gt_and_lt_are_strict_and_need_an_integer_label(text: str, value: str,
                                                        matches: bool) -> None:
    assert LabelSelector.parse(text).matches({"n": value}) is matches
    assert not LabelSelector.parse(text).matches({})


def test_gt_and_lt_print_as_written() -> None:
    assert str(requirement("n", GT, ["3"])) == "n>3"
    assert str(requirement("n", LT, ["3"])) == "n<3"


def test_a_selector_object_with_an_unknown_or_missing_operator_is_refused() -> None:
    for expression in ({"key": "a", "operator": "Gt", "values": ["1"]}, {"key": "a"}):
        with pytest.raises(SelectorError) as refused:
            LabelSelector.from_object({"matchExpressions": [expression]})
        op = expression.get("operator", "")
        assert str(refused.value) == f'"{op}" is not a valid label selector operator'


def test_a_selector_object_without_a_key_is_an_invalid_key() -> None:
    with pytest.raises(SelectorError) as refused:
        LabelSelector.from_object({"matchExpressions": [{"operator": "Exists"}]})
    assert str(refused.value).startswith('key: Invalid value: "": ')


def test_a_negative_bound_is_no_label_value() -> None:
    """apimachinery checks every value as a label value, a Gt/Lt bound too: `-1` is refused."""
    with pytest.raises(SelectorError) as refused:
        LabelSelector.parse("n>-1")
    assert str(refused.value).startswith(PREFIX + 'values[0][n]: Invalid value: "-1": ')


POD: dict[str, Any] = {"metadata": {"name": "p", "namespace": "ml"},
                       "spec": {"nodeName": "n1", "hostNetwork": True}}


def test_field_values_as_the_server_renders_them() -> None:
    assert field_value(POD, "spec.hostNetwork") == "true"
    assert field_value({**POD, "spec": {"hostNetwork": False}}, "spec.hostNetwork") == "false"
    assert field_value({"spec": {}}, "spec.hostNetwork") == "false"  # absent: FormatBool
    assert field_value({}, "status.replicas") == "0"
    assert field_value({"metadata": "odd"}, "metadata.name") == ""
    assert field_value({"status": {"replicas": 3}}, "status.replicas") == "3"


SUPPORTED = {"metadata.name", "metadata.namespace", "spec.nodeName"}


def test_a_field_terms_value_keeps_further_equals_signs_and_escapes() -> None:
    selector = FieldSelector.parse(r"metadata.name=a=b,spec.nodeName=x\,y", SUPPORTED)
    assert [(t.field, t.value) for t in selector.terms] == [("metadata.name", "a=b"),
                                                             ("spec.nodeName", "x,y")]
    empty_parts = FieldSelector.parse(",metadata.name=p,,spec.nodeName!=n2,", SUPPORTED)
    assert [t.field for t in empty_parts.terms] == ["metadata.name", "spec.nodeName"]
    assert empty_parts.matches(POD)


def test_a_trailing_backslash_is_kept_as_it_is() -> None:
    selector = FieldSelector.parse("metadata.name=a\\", SUPPORTED)
    assert selector.terms[0].value == "a\\"


def test_an_unreadable_field_term_names_the_whole_selector_and_the_part() -> None:
    with pytest.raises(SelectorError) as refused:
        FieldSelector.parse("metadata.name=p,oops", SUPPORTED)
    assert str(refused.value) == "invalid selector: 'metadata.name=p,oops'; can't understand 'oops'"


def test_a_nul_ends_the_selector_as_it_ends_apimachinerys_lexer() -> None:
    """Go's lexer reads a NUL byte as the end of the string: what follows it is not read."""
    assert LabelSelector.parse("a=b\0c,!!!") == LabelSelector.parse("a=b")
    assert LabelSelector.parse("a=b \0 junk") == LabelSelector.parse("a=b")
    assert LabelSelector.parse("\0a=b").empty


def test_each_problem_of_a_key_is_said_joined_with_semicolons() -> None:
    key = "a" * 64 + "-"  # too long, and ends with '-'
    with pytest.raises(SelectorError) as refused:
        LabelSelector.parse(key)
    message = str(refused.value)
    assert message.startswith(f'{PREFIX}<nil>: Invalid value: "{key}": name part must be no '
                              "more than 63 characters; name part must consist of")
    with pytest.raises(SelectorError) as again:
        requirement(key, EXISTS)
    assert str(again.value).startswith(f'key: Invalid value: "{key}": name part must be no '
                                       "more than 63 characters; name part must consist of")


def test_each_problem_of_a_value_is_said_joined_with_semicolons() -> None:
    value = "v" * 64 + "-"
    with pytest.raises(SelectorError) as refused:
        requirement("k", EQUALS, [value])
    assert str(refused.value).startswith(f'values[0][k]: Invalid value: "{value}": must be no '
                                         "more than 63 characters; a valid label must be")
