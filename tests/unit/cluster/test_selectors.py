"""Label and field selectors: grammar, Kubernetes matching semantics, errors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.cluster.apiserver.registry.selectors import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    fields_for,
)

LABELS = {"app": "web", "tier": "front", "version": "3"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app=db", False),
        ("app!=db", True),
        ("app!=web", False),
        ("missing!=x", True),
        ("app in (web, db)", True),
        ("app in (db)", False),
        ("app notin (db,cache)", True),
        ("missing notin (a)", True),
        ("app notin (web)", False),
        ("tier", True),
        ("missing", False),
        ("!missing", True),
        ("!app", False),
        ("app=web,tier=front", True),
        ("app=web,tier=back", False),
        ("  app = web ,  tier  ", True),
        ("version>2", True),
        ("version<3", False),
        ("app>2", False),
        ("empty=", False),
    ],
)
def test_label_operators(text: str, expected: bool) -> None:
    assert LabelSelector.parse(text).matches(LABELS) is expected


def test_empty_value_matches_empty_label() -> None:
    assert LabelSelector.parse("a=").matches({"a": ""})
    assert LabelSelector.parse("a in (x,)").matches({"a": ""})


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("k@y=1", "unable to parse requirement"),
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("a in (x,,)", "found ')', expected: ',', or identifier"),
        ("a in (x", "expected"),
        ("a=b,", "expected: identifier"),
        ("a=v@l", "a valid label must be an empty string"),
        ("a>b", "for 'Gt', 'Lt' operators, the value must be an integer"),
        (f"{'x' * 64}=1", "name part must be no more than 63 characters"),
        ("Bad_Prefix/name=1", "prefix part"),
        ("/name=1", "prefix part must be non-empty"),
        ("a/b/c=1", "a qualified name must consist"),
        ("=x", "found '=', expected: !, identifier, or 'end of string'"),
    ],
)
def test_label_errors(text: str, fragment: str) -> None:
    with pytest.raises(SelectorError) as info:
        LabelSelector.parse(text)
    assert fragment in str(info.value)


def test_prefixed_key_and_rendering() -> None:
    selector = LabelSelector.parse("b in (y,x),app.kubernetes.io/name==web,!c")
    assert str(selector) == "app.kubernetes.io/name=web,b in (x,y),!c"
    assert selector.matches({"app.kubernetes.io/name": "web", "b": "x"})


def test_from_object() -> None:
    selector = LabelSelector.from_object(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["front", "back"]},
                {"key": "env", "operator": "NotIn", "values": ["prod"]},
                {"key": "version", "operator": "Exists"},
                {"key": "legacy", "operator": "DoesNotExist"},
            ],
        }
    )
    assert selector.matches(LABELS)
    assert not selector.matches({**LABELS, "legacy": "1"})
    assert not selector.matches({**LABELS, "env": "prod"})
    assert LabelSelector.from_object({}).matches({})


@pytest.mark.parametrize(
    "expr",
    [
        {"key": "a", "operator": "In", "values": []},
        {"key": "a", "operator": "Exists", "values": ["x"]},
        {"key": "a", "operator": "Bogus"},
        {"key": "a b", "operator": "Exists"},
    ],
)
def test_from_object_errors(expr: dict[str, object]) -> None:
    with pytest.raises(SelectorError):
        LabelSelector.from_object({"matchExpressions": [expr]})


# --- property tests: generated selectors against a reference predicate -----

KEYS = st.sampled_from(["a", "b", "app", "example.com/team", "x-y_z.w"])
VALUES = st.sampled_from(["", "1", "v", "web", "a.b-c_d"])
TERMS = st.one_of(
    st.tuples(KEYS, st.sampled_from(["=", "==", "!="]), VALUES.map(lambda v: [v])),
    st.tuples(KEYS, st.sampled_from(["in", "notin"]), st.lists(VALUES, min_size=1, max_size=3)),
    st.tuples(KEYS, st.sampled_from(["exists", "!"]), st.just([])),
)
LABEL_SETS = st.dictionaries(KEYS, VALUES, max_size=5)


def _render(term: tuple[str, str, list[str]]) -> str:
    key, op, values = term
    if op == "exists":
        return key
    if op == "!":
        return f"!{key}"
    if op in ("in", "notin"):
        # Sorted, the empty value first: apimachinery refuses an empty value written last
        # after another (`(1,,)`), though it takes `(,1)` and `(,)`.
        return f"{key} {op} ({', '.join(sorted(set(values))) if set(values) != {''} else ','})"
    return f"{key}{op}{values[0]}"


def _reference(term: tuple[str, str, list[str]], labels: dict[str, str]) -> bool:
    key, op, values = term
    if op in ("=", "==", "in"):
        return key in labels and labels[key] in values
    if op in ("!=", "notin"):
        return key not in labels or labels[key] not in values
    return (key in labels) == (op == "exists")


@given(st.lists(TERMS, max_size=4), LABEL_SETS)
def test_generated_selectors_match_reference(
    terms: list[tuple[str, str, list[str]]], labels: dict[str, str]
) -> None:
    selector = LabelSelector.parse(",".join(_render(t) for t in terms))
    assert selector.matches(labels) == all(_reference(t, labels) for t in terms)


@given(st.lists(TERMS, max_size=4), LABEL_SETS)
def test_rendering_round_trips(
    terms: list[tuple[str, str, list[str]]], labels: dict[str, str]
) -> None:
    selector = LabelSelector.parse(",".join(_render(t) for t in terms))
    again = LabelSelector.parse(str(selector))
    assert again == selector
    assert again.matches(labels) == selector.matches(labels)


# --- field selectors ---------------------------------------------------------

POD = {
    "metadata": {"name": "web-0", "namespace": "default"},
    "spec": {"nodeName": "node-1", "restartPolicy": "Never"},
    "status": {"phase": "Running"},
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", True),
        ("metadata.name=web-0", True),
        ("metadata.name==web-0", True),
        ("metadata.name!=web-0", False),
        ("status.phase=Running,spec.nodeName=node-1", True),
        ("status.phase=Running,spec.nodeName!=node-1", False),
        ("spec.serviceAccountName=", True),
        ("status.podIP!=", False),
        ("spec.hostNetwork=false", True),
    ],
)
def test_pod_field_selectors(text: str, expected: bool) -> None:
    assert FieldSelector.parse(text, fields_for("", "pods")).matches(POD) is expected


def test_event_field_selectors_as_kubectl_describe_sends_them() -> None:
    event = {
        "involvedObject": {"kind": "Pod", "name": "web-0", "namespace": "default", "uid": "u1"},
        "source": {"component": "kubelet"},
        "type": "Normal",
    }
    text = (
        "involvedObject.name=web-0,involvedObject.namespace=default,"
        "involvedObject.kind=Pod,involvedObject.uid=u1"
    )
    assert FieldSelector.parse(text, fields_for("", "events")).matches(event)
    assert FieldSelector.parse("source=kubelet,type=Normal", fields_for("", "events")).matches(
        event
    )


def test_unsupported_field_and_bad_term() -> None:
    with pytest.raises(SelectorError, match=r"field label not supported: status\.phase"):
        FieldSelector.parse("status.phase=Running", fields_for("", "configmaps"))
    with pytest.raises(SelectorError, match=r"can't understand 'metadata\.name'"):
        FieldSelector.parse("metadata.name", fields_for("", "pods"))


def test_escaped_values_and_exact() -> None:
    selector = FieldSelector.parse(r"metadata.name=a\,b\=c", fields_for("", "pods"))
    assert selector.exact("metadata.name") == "a,b=c"
    assert selector.matches({"metadata": {"name": "a,b=c"}})


def test_fields_for_lists() -> None:
    assert fields_for("stable.example.com", "widgets") == {"metadata.name", "metadata.namespace"}
    assert "spec.unschedulable" in fields_for("", "nodes")
    assert "status.phase" in fields_for("", "namespaces")
    assert "involvedObject.fieldPath" in fields_for("", "events")
