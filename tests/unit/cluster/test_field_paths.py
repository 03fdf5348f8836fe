"""Field paths and sets: FieldsV1 written in upstream's order and read back, paths printed as
conflicts print them, and the set algebra ownership is computed with."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.cluster.apiserver.patch.field_paths import (
    FieldSet,
    Path,
    PathElement,
    element_key,
    element_order,
    field,
    fields_v1,
    from_fields_v1,
    key_element,
    path_string,
    value_element,
)

PORT = key_element({"protocol": "TCP", "containerPort": 80})
CONTAINERS = (field("spec"), field("containers"))


def test_fields_v1_orders_fields_keys_values_and_marks_members() -> None:
    fields = FieldSet.of(
        (*CONTAINERS, key_element({"name": "b"})),
        (*CONTAINERS, key_element({"name": "b"}), field("image")),
        (*CONTAINERS, key_element({"name": "a"})),
        (field("metadata"), field("finalizers"), value_element("z")),
        (field("metadata"), field("finalizers"), value_element("a")),
        (field("data"),),
        (field("data"), field("k")),
    )
    text = json.dumps(fields_v1(fields), separators=(",", ":"))
    assert text == (
        '{"f:data":{".":{},"f:k":{}},'
        '"f:metadata":{"f:finalizers":{"v:\\"a\\"":{},"v:\\"z\\"":{}}},'
        '"f:spec":{"f:containers":{"k:{\\"name\\":\\"a\\"}":{},'
        '"k:{\\"name\\":\\"b\\"}":{".":{},"f:image":{}}}}}'
    )


def test_key_elements_are_written_with_sorted_field_names() -> None:
    fields = FieldSet.of((*CONTAINERS, key_element({"name": "c"}), field("ports"), PORT))
    document = fields_v1(fields)
    ports = document["f:spec"]["f:containers"]['k:{"name":"c"}']["f:ports"]
    assert list(ports) == ['k:{"containerPort":80,"protocol":"TCP"}']


def test_html_characters_are_escaped_as_go_writes_them() -> None:
    fields = FieldSet.of((field("l"), key_element({"name": "a<b>&c"})))
    assert list(fields_v1(fields)["f:l"]) == ['k:{"name":"a\\u003cb\\u003e\\u0026c"}']


def test_reading_fields_v1_restores_members_and_children() -> None:
    document = {"f:data": {".": {}, "f:k": {}}, "f:spec": {"f:x": {}}, "z:unknown": {}}
    fields = from_fields_v1(document)
    assert fields == FieldSet.of(
        (field("data"),), (field("data"), field("k")), (field("spec"), field("x"))
    )


def test_malformed_fields_v1_is_refused() -> None:
    with pytest.raises(ValueError, match="2 characters"):
        from_fields_v1({"x": {}})
    with pytest.raises(ValueError, match="not an object"):
        from_fields_v1({"f:a": 1})


def test_path_strings_read_like_upstream_conflicts() -> None:
    path = (*CONTAINERS, key_element({"name": "main"}), field("ports"), PORT, field("hostPort"))
    assert path_string(path) == (
        '.spec.containers[name="main"].ports[containerPort=80,protocol="TCP"].hostPort'
    )
    assert path_string((field("f"), value_element("a"))) == '.f[="a"]'
    assert path_string((field("args"), ("i", 2))) == ".args[2]"


def test_true_is_not_one() -> None:
    assert value_element(True) != value_element(1)
    assert FieldSet.of((value_element(True),)) != FieldSet.of((value_element(1),))


def test_recursive_difference_drops_what_is_below_a_member() -> None:
    owned = FieldSet.of((field("status"), field("phase")), (field("spec"), field("x")))
    assert owned.recursive_difference(FieldSet.of((field("status"),))) == FieldSet.of(
        (field("spec"), field("x"))
    )
    assert owned.difference(FieldSet.of((field("status"),))) == owned


_names = st.sampled_from(["a", "b", "c", "spec", "data"])
_elements = st.one_of(
    _names.map(field),
    st.integers(0, 3).map(value_element),
    _names.map(lambda n: key_element({"name": n})),
)
_paths = st.lists(_elements, min_size=1, max_size=4).map(tuple)
# One level of a set, with every kind of element and keys and values of every JSON type.
_json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(-2, 2),
                          st.sampled_from(["", "a", "b"]))
_any_elements = st.one_of(
    _names.map(field),
    st.integers(0, 5).map(lambda i: ("i", i)),
    _json_scalars.map(value_element),
    st.dictionaries(st.sampled_from(["name", "port", "protocol"]), _json_scalars,
                    min_size=1, max_size=2).map(key_element),
)
_sets = st.lists(_paths, max_size=8).map(lambda ps: FieldSet.of(*ps))


@given(_sets)
def test_fields_v1_round_trips(fields: FieldSet) -> None:
    assert from_fields_v1(json.loads(json.dumps(fields_v1(fields)))) == fields


@given(st.sets(_any_elements, max_size=8))
def test_fields_v1_writes_each_level_in_upstreams_element_order(
    elements: set[PathElement],
) -> None:
    """Fields by name, then list keys, set values and indexes, whatever their JSON types:
    the order of the keys in the FieldsV1 document."""
    level = FieldSet.of(*((pe,) for pe in elements))
    wanted = [element_key(pe) for pe in sorted(elements, key=element_order)]
    assert list(fields_v1(level)) == wanted


@given(_sets, _sets)
def test_set_algebra_agrees_with_path_sets(a: FieldSet, b: FieldSet) -> None:
    pa, pb = set(a.paths()), set(b.paths())
    assert set(a.union(b).paths()) == pa | pb
    assert set(a.intersection(b).paths()) == pa & pb
    assert set(a.difference(b).paths()) == pa - pb
    below = {p for p in pa if any(p[: len(q)] == q for q in pb)}
    assert set(a.recursive_difference(b).paths()) == pa - below


@given(_sets, _paths)
def test_has_matches_membership(fields: FieldSet, path: Path) -> None:
    assert fields.has(path) == (path in set(fields.paths()))
