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


def required_values(schema: Mapping[str, Any], present: Mapping[str, Any] | None = None
                    ) -> dict[str, Any]:
    """The object's required properties with valid values ({} when none is required), and
    those of every object `present` says the job will have, though the schema does not
    require it (a TrainJob's `spec` is optional, and its `runtimeRef` required in it)."""
    found = _value(schema, 0, present)
    return found if isinstance(found, dict) else {}


def _value(schema: Mapping[str, Any], depth: int, present: Mapping[str, Any] | None = None
           ) -> Any:
    if "default" in schema and present is None:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if depth > _MAX_DEPTH:
        return None
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        there = {name: value for name, value in (present or {}).items()
                 if isinstance(value, Mapping) and name in properties}
        names = [n for n in schema.get("required") or () if isinstance(n, str)]
        return {name: _value(properties.get(name) or {}, depth + 1, there.get(name))
                for name in [*names, *(n for n in there if n not in names)]}
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
    """`over` with `base`'s keys added where it lacks them, recursively into mappings and
    into lists of mappings of one length (a listed layout's replica specs: JobSet's): what
    the check sets wins over the schema's least values and defaults."""
    merged = dict(base)
    for key, value in over.items():
        below = merged.get(key)
        if isinstance(below, Mapping) and isinstance(value, Mapping):
            merged[key] = merged_under(below, value)
        elif (isinstance(below, list) and isinstance(value, list) and len(below) == len(value)
              and all(isinstance(v, Mapping) for v in (*below, *value))):
            merged[key] = [merged_under(b, v) for b, v in zip(below, value, strict=True)]
        else:
            merged[key] = value
    return merged


def setting_variants(schema: Mapping[str, Any], source: str, limit: int
                     ) -> list[tuple[str, dict[str, Any]]]:
    """Optional settings of the job the machine reads, each as (words, the spec fields to
    add): for every optional object field of `spec` that `source` (the machine's
    expressions) names as `job.spec.<field>`, one variant per value of each enum field of
    it the machine reads (JobSet's failurePolicy.restartStrategy, successPolicy.operator,
    startupPolicy.startupPolicyOrder), with its required fields' least values and every
    integer field of it the machine reads set to `limit` (failurePolicy.maxRestarts: the
    check's backoff limit); one variant with the integers alone where it has no enum.
    The machine's validations and the schema later drop a variant no job can be."""
    spec = (schema.get("properties") or {}).get("spec") or {}
    required = set(spec.get("required") or ())
    found: list[tuple[str, dict[str, Any]]] = []
    for name, field in sorted((spec.get("properties") or {}).items()):
        if (name in required or f"job.spec.{name}" not in source
                or (field.get("type") != "object" and "properties" not in field)):
            continue
        inner = field.get("properties") or {}
        least = required_values(field)
        numbers = {k: limit for k, p in inner.items()
                   if p.get("type") == "integer" and f".{k}" in source}
        enums = [(k, p["enum"]) for k, p in sorted(inner.items())
                 if p.get("enum") and f".{k}" in source]
        limits = [f"{name}.{k} {v}" for k, v in sorted(numbers.items())]
        for key, values in enums:
            found += [(", ".join([f"{name}.{key} {value}", *limits]),
                       {name: {**least, **numbers, key: value}}) for value in values]
        if not enums and numbers:
            found.append((", ".join(limits), {name: {**least, **numbers}}))
    return found
