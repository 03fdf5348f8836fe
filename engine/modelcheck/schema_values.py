"""The least a kind's schema asks of a job: its required fields, filled with valid values.

`jobmachine check` builds its jobs from the machine's shape (replica specs, run policy);
a kind may require more (ShardedJob's `spec.input`), and a machine that reads such a
field would fail on a job without it, which no real job of the kind can be. So each
checked job gets, under what the check sets itself, every required field of the kind's
schema: its default when it has one, else its first enum value, else a value of its type
that meets the schema's bounds (minimum, minLength, minItems), recursively.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_MAX_DEPTH = 32


def required_values(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The object's required properties with valid values ({} when none is required)."""
    found = _value(schema, 0)
    return found if isinstance(found, dict) else {}


def _value(schema: Mapping[str, Any], depth: int) -> Any:
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if depth > _MAX_DEPTH:
        return None
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        return {name: _value(properties.get(name) or {}, depth + 1)
                for name in schema.get("required") or () if isinstance(name, str)}
    if kind == "array":
        items = schema.get("items") or {}
        return [_value(items, depth + 1) for _ in range(int(schema.get("minItems") or 0))]
    if kind == "integer":
        return max(int(schema.get("minimum", 0)), 0) if "minimum" in schema else 1
    if kind == "number":
        return float(schema.get("minimum", 1.0))
    if kind == "boolean":
        return False
    if schema.get("x-kubernetes-int-or-string"):
        return 1
    return "x" * max(int(schema.get("minLength") or 0), 5) if kind == "string" else {}


def merged_under(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """`over` with `base`'s keys added where it lacks them, recursively into mappings:
    what the check sets wins over the schema's least values."""
    merged = dict(base)
    for key, value in over.items():
        below = merged.get(key)
        if isinstance(below, Mapping) and isinstance(value, Mapping):
            merged[key] = merged_under(below, value)
        else:
            merged[key] = value
    return merged
