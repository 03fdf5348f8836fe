"""The least values a kind's schema asks of a checked job: required fields only, each valid
by the schema (default, enum, bounds), recursively; what the check sets wins."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from engine.modelcheck.schema_values import merged_under, required_values

SPEC = {
    "type": "object",
    "required": ["spec"],
    "properties": {"spec": {
        "type": "object",
        "required": ["input", "shards", "mode", "retries", "tags", "size", "nested"],
        "properties": {
            "input": {"type": "string"},
            "optional": {"type": "string"},
            "shards": {"type": "object", "additionalProperties": {"type": "object"}},
            "mode": {"type": "string", "enum": ["Fast", "Slow"]},
            "retries": {"type": "integer", "minimum": 3},
            "tags": {"type": "array", "minItems": 2, "items": {"type": "string", "minLength": 8}},
            "size": {"x-kubernetes-int-or-string": True, "default": "1Gi"},
            "nested": {"type": "object", "required": ["on"],
                       "properties": {"on": {"type": "boolean"}}},
        },
    }},
}


def test_required_fields_get_valid_values_and_optional_ones_none() -> None:
    assert required_values(SPEC) == {"spec": {
        "input": "xxxxx", "shards": {}, "mode": "Fast", "retries": 3,
        "tags": ["xxxxxxxx", "xxxxxxxx"], "size": "1Gi", "nested": {"on": False},
    }}


def test_what_the_check_sets_wins_and_the_rest_is_kept() -> None:
    least = required_values(SPEC)
    job = {"spec": {"shards": {"Shard": {"replicas": 1}}, "retries": 5}}
    assert merged_under(least, job)["spec"] == {
        **least["spec"], "shards": {"Shard": {"replicas": 1}}, "retries": 5}


@given(st.recursive(st.fixed_dictionaries({"type": st.sampled_from(
    ["string", "integer", "number", "boolean"])}), lambda inner: st.fixed_dictionaries({
        "type": st.just("object"),
        "properties": st.dictionaries(st.sampled_from("abcd"), inner, max_size=4)}).map(
        lambda node: {**node, "required": sorted(node["properties"])}), max_leaves=12))
def test_every_required_property_is_present_with_its_type(schema: dict) -> None:
    types = {"string": str, "integer": int, "number": float, "boolean": bool, "object": dict}

    def holds(node: dict, value: object) -> bool:
        if not isinstance(value, types[node["type"]]):
            return False
        if node["type"] != "object":
            return True
        assert isinstance(value, dict)
        return set(value) == set(node["required"]) and all(
            holds(node["properties"][key], value[key]) for key in node["required"])

    if schema["type"] == "object":
        assert holds(schema, required_values(schema))
