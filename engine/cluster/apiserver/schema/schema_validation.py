"""Custom resources against their CRD's structural schema: prune, default, validate.

`CompiledSchema` is built once per CRD version (CEL rules compiled then) and
applied on create, update and read, in the real server's order: unknown fields
pruned (reported in `pruned` so the HTTP layer can honour `fieldValidation`),
non-nullable nulls without a default dropped, defaults applied (nested ones
too), then OpenAPI keywords checked, then `x-kubernetes-validations` rules
unless a type error already makes the object unreadable.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.cluster.apiserver.encoding.json_documents import json_copy
from engine.cluster.apiserver.errors import Cause
from engine.cluster.apiserver.schema.cel_rules import Rule, compile_rule, evaluate
from engine.cluster.apiserver.schema.schema_values import check_keywords, check_type, render
from engine.cluster.apiserver.schema.structural import structural_causes, walk_schema

OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)
_TYPE_META = ("apiVersion", "kind")
_BLOCKED = (
    "some validation rules were not checked because the object was invalid; correct the existing "
    "errors to complete validation"
)


@dataclass(frozen=True)
class SchemaResult:
    """The pruned and defaulted copy, what is wrong with it, and what was pruned."""

    obj: dict[str, Any]
    causes: list[Cause] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)


@dataclass
class _Node:
    """One schema node with its children and rules compiled."""

    schema: Mapping[str, Any]
    properties: dict[str, _Node]
    items: _Node | None
    additional: _Node | None
    combined: list[_Node]
    rules: list[Rule]
    ratchets: bool = False
    """No rule in this subtree reads `oldSelf`: an unchanged value here needs no rule
    evaluated (see `_rules`)."""

    @classmethod
    def build(cls, schema: Mapping[str, Any]) -> _Node:
        additional = schema.get("additionalProperties")
        node = cls(
            schema=schema,
            properties={k: cls.build(v) for k, v in (schema.get("properties") or {}).items()},
            items=cls.build(schema["items"]) if isinstance(schema.get("items"), Mapping) else None,
            additional=cls.build(additional) if isinstance(additional, Mapping) else None,
            combined=[
                cls.build(s) for key in ("allOf", "anyOf", "oneOf") for s in schema.get(key) or []
            ],
            rules=[compile_rule(r) for r in schema.get("x-kubernetes-validations") or []],
        )
        children = [*node.properties.values(), node.items, node.additional]
        node.ratchets = not any(rule.transition for rule in node.rules) and all(
            child.ratchets for child in children if child is not None)
        return node

    @property
    def preserves_unknown(self) -> bool:
        return bool(self.schema.get("x-kubernetes-preserve-unknown-fields"))

    @property
    def embedded(self) -> bool:
        return bool(self.schema.get("x-kubernetes-embedded-resource"))

    def child(self, key: str) -> _Node | None:
        return self.properties.get(key) or self.additional


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class CompiledSchema:
    """A CRD version's openAPIV3Schema, ready to apply to objects of that version."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.root = _Node.build(schema)

    def apply(
        self,
        obj: dict[str, Any],
        old: dict[str, Any] | None = None,
        *,
        checks: Callable[[dict[str, Any]], list[Cause]] | None = None,
    ) -> SchemaResult:
        """`checks` run after the OpenAPI keywords and before the CEL rules (the place of
        upstream's scale subresource checks)."""
        new = json_copy(obj)
        pruned: list[str] = []
        _prune(new, self.root, "", pruned, root=True)
        _default(new, self.root)
        causes = _validate(new, self.root, "")
        if checks is not None:
            causes += checks(new)
        if not any(c.reason == "FieldValueTypeInvalid" for c in causes):
            causes += _rules(new, self.root, "", old, correlated=old is not None)
        elif _has_rules(self.root):
            causes.append(Cause("", f'Invalid value: "null": {_BLOCKED}'))
        return SchemaResult(new, causes, pruned)


def check_crd_schema(schema: Mapping[str, Any], path: str) -> list[Cause]:
    """Why a CRD version's openAPIV3Schema is not structural, or its rules or defaults are bad."""
    causes = structural_causes(schema, path)
    if causes:
        return causes
    for node_path, node_schema in walk_schema(schema, path):
        if "default" in node_schema:
            causes += _default_causes(node_schema, f"{node_path}.default")
    return causes


def _default_causes(schema: Mapping[str, Any], path: str) -> list[Cause]:
    """A default must survive pruning unchanged and validate against its own node."""
    node = _Node.build(schema)
    value = copy.deepcopy(schema["default"])
    pruned: list[str] = []
    _prune(value, node, "default", pruned)
    causes = [
        Cause(path, f'Invalid value: {render(schema["default"])}: unknown field "{p}"')
        for p in pruned
    ]
    _default(value, node)
    found = _validate(value, node, "default")
    if not found:
        found = _rules(value, node, "default", None, correlated=False)
    return causes + [Cause(path, c.message, c.reason) for c in found]


def _prune(value: Any, node: _Node, path: str, pruned: list[str], *, root: bool = False) -> None:
    if isinstance(value, list) and node.items is not None:
        for index, item in enumerate(value):
            _prune(item, node.items, f"{path}[{index}]", pruned)
        return
    if not isinstance(value, dict):
        return
    keep_meta = root or node.embedded
    for key in list(value):
        child = node.child(key)
        if keep_meta and key in _TYPE_META:
            continue
        if keep_meta and key == "metadata" and isinstance(value[key], dict):
            _prune_metadata(value[key], _join(path, key), pruned)
            continue
        if child is not None:
            _prune(value[key], child, _join(path, key), pruned)
        elif not node.preserves_unknown:
            del value[key]
            pruned.append(_join(path, key))


def _prune_metadata(meta: dict[str, Any], path: str, pruned: list[str]) -> None:
    for key in [k for k in meta if k not in OBJECT_META_FIELDS]:
        del meta[key]
        pruned.append(f"{path}.{key}")


def _default(value: Any, node: _Node) -> None:
    if isinstance(value, list) and node.items is not None:
        for item in value:
            _default(item, node.items)
        return
    if not isinstance(value, dict):
        return
    for key, child in node.properties.items():
        has_default = "default" in child.schema
        if value.get(key, ...) is None and not child.schema.get("nullable"):
            del value[key]
        if key not in value and has_default:
            value[key] = copy.deepcopy(child.schema["default"])
    for key, item in value.items():
        sub = node.child(key)
        if sub is not None:
            _default(item, sub)


def _validate(value: Any, node: _Node, path: str) -> list[Cause]:
    schema = node.schema
    if value is None:
        if schema.get("nullable") or not (
            schema.get("type") or schema.get("x-kubernetes-int-or-string")
        ):
            return []
        cause = check_type(schema, value, path)
        return [cause] if cause else []
    type_cause = check_type(schema, value, path)
    if type_cause is not None:
        return [type_cause]
    causes = check_keywords(schema, value, path)
    if isinstance(value, list) and node.items is not None:
        for index, item in enumerate(value):
            causes += _validate(item, node.items, f"{path}[{index}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            child = node.child(key)
            if child is not None and not (path == "" and key in ("apiVersion", "kind", "metadata")):
                causes += _validate(item, child, _join(path, key))
    return causes + _combinators(value, node, path)


def _combinators(value: Any, node: _Node, path: str) -> list[Cause]:
    schema, causes = node.schema, []
    nodes = iter(node.combined)
    for sub in [next(nodes) for _ in schema.get("allOf") or []]:
        causes += _validate(value, sub, path)
    any_of = [next(nodes) for _ in schema.get("anyOf") or []]
    if any_of and all(_validate(value, sub, path) for sub in any_of):
        causes.append(
            Cause(
                path,
                f"Invalid value: {render(value)}: {path} in body must validate at least one "
                "schema (anyOf)",
            )
        )
    one_of = [next(nodes) for _ in schema.get("oneOf") or []]
    if one_of and sum(not _validate(value, sub, path) for sub in one_of) != 1:
        causes.append(
            Cause(
                path,
                f"Invalid value: {render(value)}: {path} in body must validate one and only one "
                "schema (oneOf)",
            )
        )
    if isinstance(schema.get("not"), Mapping) and not _validate(
        value, _Node.build(schema["not"]), path
    ):
        causes.append(
            Cause(
                path,
                f"Invalid value: {render(value)}: {path} in body must not validate the schema "
                "(not)",
            )
        )
    return causes


def _has_rules(node: _Node) -> bool:
    children = [*node.properties.values(), node.items, node.additional]
    return bool(node.rules) or any(_has_rules(c) for c in children if c is not None)


def _rules(value: Any, node: _Node, path: str, old: Any, *, correlated: bool) -> list[Cause]:
    """The causes of the rules broken under `node`.

    Ratcheting, as kube-apiserver does it (CRD validation ratcheting, on by default since
    1.30): a rule's error on a value equal to its correlated old value is not reported, so
    a subtree that did not change and holds no transition rule is not evaluated at all (a
    status write leaves the spec's rules alone, and a rule added to the CRD later does not
    block writes that leave old values as they were).
    """
    if value is None:
        return []
    unchanged = correlated and value == old
    if unchanged and node.ratchets:
        return []
    causes = []
    for rule in node.rules:
        if (rule.transition and not correlated) or (unchanged and not rule.transition):
            continue
        passed, message = evaluate(rule, value, old)
        if not passed:
            causes.append(
                _rule_cause(
                    rule, _join(path, rule.field_path) if rule.field_path else path, node, message
                )
            )
    if isinstance(value, dict):
        old_map = old if correlated and isinstance(old, dict) else {}
        for key, item in value.items():
            child = node.child(key)
            if child is not None:
                causes += _rules(
                    item, child, _join(path, key), old_map.get(key), correlated=key in old_map
                )
    elif isinstance(value, list) and node.items is not None:
        for index, item in enumerate(value):
            old_item = _correlate(item, node.schema, old if correlated else None)
            causes += _rules(
                item, node.items, f"{path}[{index}]", old_item, correlated=old_item is not None
            )
    return causes


def _correlate(item: Any, schema: Mapping[str, Any], old: Any) -> Any:
    """The old element of a list-type map with the same keys; other lists do not correlate."""
    if (
        schema.get("x-kubernetes-list-type") != "map"
        or not isinstance(old, list)
        or not isinstance(item, dict)
    ):
        return None
    keys = schema.get("x-kubernetes-list-map-keys") or []
    wanted = [item.get(k) for k in keys]
    return next(
        (o for o in old if isinstance(o, dict) and [o.get(k) for k in keys] == wanted), None
    )


def _rule_cause(rule: Rule, path: str, node: _Node, message: str) -> Cause:
    shown = node.schema.get("type") or "object"
    if rule.reason == "FieldValueForbidden":
        return Cause(path, f"Forbidden: {message}", rule.reason)
    if rule.reason == "FieldValueRequired":
        return Cause(path, f"Required value: {message}", rule.reason)
    if rule.reason == "FieldValueDuplicate":
        return Cause(path, f'Duplicate value: "{shown}"', rule.reason)
    return Cause(path, f'Invalid value: "{shown}": {message}', rule.reason)
