"""The CEL struct of `runPolicy` (engine.definition.vocabulary) names exactly the fields of
the kinds' RunPolicy model, with the CEL type of each: the definition layer cannot import
the model, so this keeps the two from drifting."""

from __future__ import annotations

from typing import Any

import pytest

from engine.api.runpolicy import RunPolicy, SchedulingPolicy
from engine.api.structural import structural_schema
from engine.definition.vocabulary import RUN_POLICY_STRUCT, SCHEDULING_POLICY_STRUCT, Struct

_CEL_TYPES = {"integer": "int", "boolean": "bool", "string": "string"}


def _cel_type(node: dict[str, Any]) -> str:
    if node.get("type") == "object" and "properties" in node:
        return "struct"
    if node.get("type") == "object":
        return "map(string, dyn)"
    return _CEL_TYPES[node["type"]]


@pytest.mark.parametrize(("struct", "model"), [(RUN_POLICY_STRUCT, RunPolicy),
                                               (SCHEDULING_POLICY_STRUCT, SchedulingPolicy)])
def test_the_struct_has_the_models_fields_and_types(struct: Struct, model: type) -> None:
    properties = structural_schema(model)["properties"]
    declared = {f.name: f.cel_type for f in struct.fields}
    assert declared.keys() == properties.keys()
    for name, node in properties.items():
        expected = _cel_type(node)
        if expected == "struct":
            assert declared[name] == "SchedulingPolicy"
        else:
            assert declared[name] == expected, name
