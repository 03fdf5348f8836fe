"""pydantic models -> Kubernetes structural schemas (a CRD version's openAPIV3Schema).

`model_json_schema()` is JSON Schema 2020-12, which the API server does not take:
it has `$ref`s, `anyOf [X, null]`, `const`, `additionalProperties: false`,
`propertyNames`, `patternProperties`. This module rewrites it into the structural subset (every node
typed, nothing to resolve), turning what a schema keyword cannot say there into
CEL rules, and refuses, naming the field, what it cannot express at all.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

Schema = dict[str, Any]
Shorthand = Callable[[Schema], Schema]
"""How a node whose model also accepts a shorter YAML form (a before-validator) is written."""

_SHORTHAND = "x-jobmachine-shorthand"
_PRESERVE = "x-kubernetes-preserve-unknown-fields"
_RULES = "x-kubernetes-validations"
_KEPT = frozenset(
    {
        "type",
        "description",
        "format",
        "default",
        "enum",
        "nullable",
        "required",
        "properties",
        "additionalProperties",
        "items",
        "maximum",
        "minimum",
        "exclusiveMaximum",
        "exclusiveMinimum",
        "multipleOf",
        "maxLength",
        "minLength",
        "pattern",
        "maxItems",
        "minItems",
        "maxProperties",
        "minProperties",
        _PRESERVE,
        _RULES,
        "x-kubernetes-int-or-string",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type",
    }
)
_DROPPED = frozenset({"title", "$defs"})


class NotStructuralError(ValueError):
    """A model has a field whose type has no structural schema."""


class _MarkShorthands(GenerateJsonSchema):
    """Marks every node a before-validator guards: its model accepts more than its schema says."""

    def function_before_schema(
        self, schema: core_schema.BeforeValidatorFunctionSchema
    ) -> JsonSchemaValue:
        inner = super().function_before_schema(schema)
        validator = schema["function"]["function"]
        return {**inner, _SHORTHAND: getattr(validator, "__qualname__", repr(validator))}


def accept_anything(node: Schema) -> Schema:
    """A shorthand of another type (a bare name for a mapping): any value; the model checks it."""
    described = {"description": node["description"]} if "description" in node else {}
    return {**described, _PRESERVE: True}


def accept_null(node: Schema) -> Schema:
    """A shorthand that is an empty value (`Running:` with nothing after it)."""
    return {**node, "nullable": True}


def structural_schema(
    model: type[BaseModel], *, shorthands: Mapping[str, Shorthand] | None = None
) -> Schema:
    """The model's validation schema as a structural schema.

    `shorthands` names, by validator (`Class._method`), how to write each node a
    before-validator guards; one not named is an error, so a new shorthand in a
    model cannot silently make the CRD reject documents the model accepts.
    """
    raw = model.model_json_schema(schema_generator=_MarkShorthands)
    defs = raw.pop("$defs", {})
    return _Converter(defs, shorthands or {}).convert(raw, model.__name__, ())


class _Converter:
    def __init__(self, defs: Mapping[str, Schema], shorthands: Mapping[str, Shorthand]) -> None:
        self.defs = defs
        self.shorthands = shorthands

    def convert(self, node: Schema, path: str, seen: tuple[str, ...]) -> Schema:
        if "$ref" in node:
            return self._inline(node, path, seen)
        if "anyOf" in node:
            return self._union(node, path, seen)
        if _SHORTHAND in node:
            return self._shorthand(node, path, seen)
        node = self._map_keys(node, path)
        out: Schema = {}
        for key, value in node.items():
            out.update(self._keyword(key, value, path, seen))
        if out.get("additionalProperties") and "properties" in out:
            raise NotStructuralError(f"{path}: a map cannot also have named properties")
        return out

    @staticmethod
    def _map_keys(node: Schema, path: str) -> Schema:
        """A map whose keys are constrained: CRD schemas say that only with a CEL rule."""
        if "patternProperties" in node:
            ((pattern, values),) = node["patternProperties"].items()
            rest = {k: v for k, v in node.items() if k != "patternProperties"}
            node = {**rest, "additionalProperties": values, "propertyNames": {"pattern": pattern}}
        if "propertyNames" not in node:
            return node
        rest = {k: v for k, v in node.items() if k != "propertyNames"}
        return {**rest, _RULES: [*node.get(_RULES, []), key_rule(node["propertyNames"], path)]}

    def _inline(self, node: Schema, path: str, seen: tuple[str, ...]) -> Schema:
        name = node["$ref"].rsplit("/", 1)[-1]
        if name in seen:
            raise NotStructuralError(f"{path}: {name} contains itself; a CRD schema cannot recurse")
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        target = self.defs[name]
        rules = [*target.get(_RULES, []), *siblings.get(_RULES, [])]
        merged = {**target, **siblings, **({_RULES: rules} if rules else {})}
        return self.convert(merged, path, (*seen, name))

    def _union(self, node: Schema, path: str, seen: tuple[str, ...]) -> Schema:
        """`X | None` and `int | str`; other unions have no structural form.

        An optional field whose default is None becomes X alone: the API server
        drops a null it is not told to keep, so null reads as "unset", as it does
        for the model (and as controller-gen writes `*T` fields). Only where null
        is a value of its own (a default that is not None) is the node nullable.
        """
        options = [o for o in node["anyOf"] if o != {"type": "null"}]
        rest = {k: v for k, v in node.items() if k != "anyOf"}
        nullable = len(options) < len(node["anyOf"]) and rest.get("default", ...) is not None
        if rest.get("default", ...) is None:
            del rest["default"]
        if len(options) == 1:
            out = self.convert({**options[0], **rest}, path, seen)
        elif sorted(o.get("type", "") for o in options) == ["integer", "string"] and all(
            len(o) == 1 for o in options
        ):
            out = self.convert({**rest, "x-kubernetes-int-or-string": True}, path, seen)
        else:
            shown = ", ".join(json.dumps(o, sort_keys=True) for o in options)
            raise NotStructuralError(f"{path}: the union of {shown} has no structural schema")
        return {**out, "nullable": True} if nullable else out

    def _shorthand(self, node: Schema, path: str, seen: tuple[str, ...]) -> Schema:
        validator = node[_SHORTHAND]
        if validator not in self.shorthands:
            raise NotStructuralError(
                f"{path}: {validator} accepts a shorthand form; say how to write it (shorthands=)"
            )
        inner = {k: v for k, v in node.items() if k != _SHORTHAND}
        return self.shorthands[validator](self.convert(inner, path, seen))

    def _keyword(self, key: str, value: Any, path: str, seen: tuple[str, ...]) -> Schema:
        if key in _DROPPED:
            return {}
        if key == "properties":
            return {key: {n: self.convert(s, f"{path}.{n}", seen) for n, s in value.items()}}
        if key == "items":
            return {key: self.convert(value, f"{path}[]", seen)}
        if key == "additionalProperties":
            return self._additional(value, path, seen)
        if key == "const":
            return {"enum": [value]}
        if key in ("exclusiveMinimum", "exclusiveMaximum") and not isinstance(value, bool):
            return {key.replace("exclusiveM", "m"): value, key: True}
        if key not in _KEPT:
            raise NotStructuralError(f"{path}: {key!r} cannot be said in a CRD schema")
        return {key: copy.deepcopy(value)}

    def _additional(self, value: Any, path: str, seen: tuple[str, ...]) -> Schema:
        if value is False:
            return {}
        if value is True or value == {}:
            return {_PRESERVE: True}
        return {"additionalProperties": self.convert(value, f"{path}.*", seen)}


def key_rule(names: Schema, path: str) -> dict[str, str]:
    """A map's key constraint as a CEL rule: CRD schemas have no `propertyNames`."""
    if set(names) == {"enum"}:
        test = f"k in [{', '.join(json.dumps(n) for n in names['enum'])}]"
        wanted = f"must be one of {', '.join(names['enum'])}"
    elif set(names) == {"pattern"}:
        test = f"k.matches({json.dumps(names['pattern'])})"
        wanted = f"must match {names['pattern']}"
    else:
        raise NotStructuralError(f"{path}: map keys constrained by {names} have no CEL form here")
    return {
        "rule": f"self.all(k, {test})",
        "message": f"keys {wanted}",
        "messageExpression": f"'unknown keys ' + self.filter(k, !({test})).join(', ') + "
        f"{json.dumps(': keys ' + wanted)}",
    }
