"""Whether a CRD version's openAPIV3Schema is structural, as apiextensions-apiserver checks.

A CRD whose schema is not structural (a node without a type, `$ref`,
`properties` beside `additionalProperties`, extra metadata fields, a rule that
does not compile...) is rejected with a 422 naming the schema field, so the
objects it would serve can always be pruned, defaulted and validated.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from engine.cluster.apiserver.errors import Cause
from engine.cluster.apiserver.schema.cel_rules import RuleCompileError, compile_rule

_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean"})
_COMBINATORS = ("allOf", "anyOf", "oneOf")


def walk_schema(schema: Mapping[str, Any], path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every node of the schema that describes data, with its path in the CRD."""
    yield path, schema
    for name, child in (schema.get("properties") or {}).items():
        if isinstance(child, Mapping):
            yield from walk_schema(child, f"{path}.properties[{name}]")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), Mapping):
            yield from walk_schema(schema[key], f"{path}.{key}")


def _forbidden(path: str, detail: str) -> Cause:
    return Cause(path, f"Forbidden: {detail}", "FieldValueForbidden")


def _required(path: str, detail: str) -> Cause:
    return Cause(path, f"Required value: {detail}", "FieldValueRequired")


def structural_causes(schema: Mapping[str, Any], path: str) -> list[Cause]:
    """Structural-schema violations and rules that do not compile."""
    if not isinstance(schema, Mapping):
        return [_required(path, "must be an object")]
    causes: list[Cause] = []
    if schema.get("type") != "object":
        causes.append(
            _required(f"{path}.type", "must not be empty at the root")
            if not schema.get("type")
            else Cause(
                f"{path}.type",
                f'Unsupported value: "{schema["type"]}": supported values: "object"',
                "FieldValueNotSupported",
            )
        )
    causes += _metadata_causes(schema, path)
    for node_path, node in walk_schema(schema, path):
        causes += _node_causes(node, node_path, is_root=node_path == path)
    return causes


def _metadata_causes(schema: Mapping[str, Any], path: str) -> list[Cause]:
    metadata = (schema.get("properties") or {}).get("metadata")
    if not isinstance(metadata, Mapping):
        return []
    meta_path = f"{path}.properties[metadata]"
    allowed = {"type", "properties", "description"}
    names = set((metadata.get("properties") or {}).keys())
    if set(metadata) - allowed or names - {"name", "generateName"}:
        return [
            _forbidden(
                meta_path,
                "must not specify anything other than name and generateName, "
                "but metadata is implicitly specified",
            )
        ]
    return []


def _node_causes(node: Mapping[str, Any], path: str, *, is_root: bool) -> list[Cause]:
    causes: list[Cause] = []
    node_type = node.get("type")
    loose = node.get("x-kubernetes-int-or-string") or node.get(
        "x-kubernetes-preserve-unknown-fields"
    )
    if not node_type and not loose and not is_root:
        causes.append(_required(f"{path}.type", "must not be empty for specified object fields"))
    if node_type and node_type not in _TYPES:
        supported = ", ".join(f'"{t}"' for t in sorted(_TYPES))
        causes.append(
            Cause(
                f"{path}.type",
                f'Unsupported value: "{node_type}": supported values: {supported}',
                "FieldValueNotSupported",
            )
        )
    if node.get("x-kubernetes-int-or-string") and node_type:
        causes.append(
            Cause(
                f"{path}.type",
                f'Invalid value: "{node_type}": must be empty if '
                "x-kubernetes-int-or-string is true",
            )
        )
    if "$ref" in node:
        causes.append(_forbidden(f"{path}.$ref", "$ref is not supported"))
    additional = node.get("additionalProperties")
    if additional is not None and node.get("properties"):
        causes.append(
            _forbidden(
                f"{path}.additionalProperties",
                "additionalProperties and properties are mutual exclusive",
            )
        )
    if additional is False:
        causes.append(_forbidden(f"{path}.additionalProperties", "must not be false"))
    if node.get("uniqueItems") is True:
        causes.append(
            _forbidden(
                f"{path}.uniqueItems",
                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            )
        )
    if node_type == "array" and not isinstance(node.get("items"), Mapping):
        causes.append(_required(f"{path}.items", "must be specified"))
    causes += _list_type_causes(node, path)
    causes += _combinator_causes(node, path)
    causes += _rule_causes(node, path)
    return causes


def _list_type_causes(node: Mapping[str, Any], path: str) -> list[Cause]:
    list_type = node.get("x-kubernetes-list-type")
    if list_type is None:
        return []
    if list_type not in ("atomic", "set", "map"):
        return [
            Cause(
                f"{path}.x-kubernetes-list-type",
                f'Unsupported value: "{list_type}": supported values: "atomic", "set", "map"',
                "FieldValueNotSupported",
            )
        ]
    items: Mapping[str, Any] = node["items"] if isinstance(node.get("items"), Mapping) else {}
    if list_type == "map":
        keys = node.get("x-kubernetes-list-map-keys")
        if not keys:
            return [
                _required(
                    f"{path}.x-kubernetes-list-map-keys",
                    'must not be empty if x-kubernetes-list-type is "map"',
                )
            ]
        if items.get("type") != "object":
            return [
                Cause(
                    f"{path}.items.type",
                    f'Invalid value: "{items.get("type")}": must be object '
                    'if parent array\'s x-kubernetes-list-type is "map"',
                )
            ]
        known = items.get("properties") or {}
        return [
            _required(
                f"{path}.x-kubernetes-list-map-keys",
                f'entries must all be names of item properties: "{k}" is not',
            )
            for k in keys
            if k not in known
        ]
    if list_type == "set" and items.get("type") in ("object", "array"):
        return [
            Cause(
                f"{path}.items.type",
                f'Invalid value: "{items.get("type")}": must be a scalar '
                'type if parent array\'s x-kubernetes-list-type is "set"',
            )
        ]
    return []


def _combinator_causes(node: Mapping[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    subs = [(f"{path}.{k}[{i}]", s) for k in _COMBINATORS for i, s in enumerate(node.get(k) or [])]
    if isinstance(node.get("not"), Mapping):
        subs.append((f"{path}.not", node["not"]))
    for sub_path, sub in subs:
        if not isinstance(sub, Mapping):
            continue
        if "$ref" in sub:
            causes.append(_forbidden(f"{sub_path}.$ref", "$ref is not supported"))
        for key in ("default", "x-kubernetes-validations", "nullable", "additionalProperties"):
            if key in sub:
                causes.append(
                    _forbidden(
                        f"{sub_path}.{key}",
                        "must be false to be structural"
                        if key == "nullable"
                        else f"{key} is not allowed in value validations",
                    )
                )
    return causes


def _rule_causes(node: Mapping[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    for index, rule in enumerate(node.get("x-kubernetes-validations") or []):
        rule_path = f"{path}.x-kubernetes-validations[{index}]"
        if not isinstance(rule, Mapping):
            causes.append(Cause(rule_path, "Invalid value: must be an object"))
            continue
        try:
            compile_rule(rule)
        except RuleCompileError as error:
            shown = _quote(rule.get(error.field))
            causes.append(Cause(f"{rule_path}.{error.field}", f"Invalid value: {shown}: {error}"))
    return causes


def _quote(value: Any) -> str:
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'
