"""The shape server-side apply sees in an object: structs, maps, list types, atomic parts.

Field ownership depends on structure, not just on JSON: a struct's fields are
named (`f:spec` is implied by `f:spec.f:replicas`) while a map's keys are
members of their own; a list is atomic, a set (`v:`) or a list map keyed by
some fields (`k:{...}`); a struct or map may be atomic. Built-in kinds read
that from `builtin_schema_data` (k8s.io/api's own markers); custom resources
from their CRD's structural schema (`x-kubernetes-list-type`,
`x-kubernetes-list-map-keys`, `x-kubernetes-map-type`, preserved unknown
fields). Anything a schema does not describe is *deduced* from the value, as
structured-merge-diff does for untyped fields.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from engine.cluster.apiserver.patch.builtin_schema_data import BUILTIN_TYPES

SCALAR, MAP, LIST, UNTYPED = "scalar", "map", "list", "untyped"
Resolver = Callable[[], "TypeNode"]


@dataclass(eq=False)
class TypeNode:
    """One node of a schema. Maps with `fields` are structs; lists have `keys` or `is_set`."""

    kind: str
    atomic: bool = False
    fields: dict[str, TypeNode | Resolver] = field(default_factory=dict)
    element: TypeNode | Resolver | None = None  # map values not in `fields`; list items
    keys: tuple[str, ...] = ()
    is_set: bool = False
    key_defaults: dict[str, Any] = field(default_factory=dict)

    def field_type(self, name: str) -> TypeNode | None:
        """The type of a struct field or map value; None when the schema has no room for it.

        A named type is resolved on first use and kept in its place: every write walks
        these nodes, and the resolvers (`named_type`) always answer the same node."""
        ref = self.fields.get(name)
        if ref is None:
            return self.item_type() if self.element is not None else None
        if isinstance(ref, TypeNode):
            return ref
        node = self.fields[name] = ref()
        return node

    def has_field(self, name: str) -> bool:
        """Whether `name` is a declared (named) field, which ownership treats as a struct field."""
        return name in self.fields

    def item_type(self) -> TypeNode:
        ref = self.element
        if ref is None:
            return DEDUCED
        if isinstance(ref, TypeNode):
            return ref
        node = self.element = ref()
        return node

    @property
    def associative(self) -> bool:
        return self.kind == LIST and not self.atomic

    def for_value(self, value: Any) -> TypeNode:
        """The node that applies to `value`: untyped nodes take the value's own shape."""
        if self.kind != UNTYPED:
            return self
        if isinstance(value, dict):
            return ATOMIC_MAP if self.atomic else DEDUCED_MAP
        if isinstance(value, list):
            return ATOMIC_LIST
        return SCALAR_NODE


SCALAR_NODE = TypeNode(SCALAR)
DEDUCED = TypeNode(UNTYPED)
UNTYPED_ATOMIC = TypeNode(UNTYPED, atomic=True)
ATOMIC_LIST = TypeNode(LIST, atomic=True, element=UNTYPED_ATOMIC)
ATOMIC_MAP = TypeNode(MAP, atomic=True, element=UNTYPED_ATOMIC)
DEDUCED_MAP = TypeNode(MAP, element=DEDUCED)


# --- built-in kinds -------------------------------------------------------------------------

_BUILTIN_ROOTS = {
    ("", "Namespace"): "Namespace",
    ("", "Pod"): "Pod",
    ("", "Service"): "Service",
    ("", "Event"): "Event",
    ("", "ConfigMap"): "ConfigMap",
    ("", "Secret"): "Secret",
    ("", "Node"): "Node",
    ("apps", "ControllerRevision"): "apps.ControllerRevision",
    ("coordination.k8s.io", "Lease"): "coordination.Lease",
    ("scheduling.k8s.io", "PriorityClass"): "scheduling.PriorityClass",
    ("batch", "Job"): "batch.Job",
    ("batch", "CronJob"): "batch.CronJob",
    ("apps", "Deployment"): "apps.Deployment",
    ("apps", "ReplicaSet"): "apps.ReplicaSet",
    ("", "ReplicationController"): "ReplicationController",
}


def builtin_type(group: str, kind: str) -> TypeNode:
    """The schema of a built-in kind; a deduced map for kinds the table lacks."""
    if (group, kind) == ("apiextensions.k8s.io", "CustomResourceDefinition"):
        return _crd_kind()
    name = _BUILTIN_ROOTS.get((group, kind))
    return named_type(name) if name is not None else DEDUCED_MAP


@cache
def named_type(name: str) -> TypeNode:
    """One entry of the built-in table, parsed once."""
    spec = BUILTIN_TYPES[name].split()
    node = TypeNode(MAP)
    if spec and spec[0] == "!":
        node.atomic = True
        spec = spec[1:]
    for entry in spec:
        field_name, _, rest = entry.partition(":")
        equals = rest.find("=", rest.rfind("]") + 1)  # `[m=key]` is part of the type
        text = rest if equals < 0 else rest[:equals]
        ref = _parse_type(text)
        if field_name == "*":
            node.element = ref
            continue
        node.fields[field_name] = ref
        if equals >= 0:
            default = rest[equals + 1 :]
            node.key_defaults[field_name] = int(default) if default.isdigit() else default
    return node


def _parse_type(text: str) -> TypeNode | Resolver:
    if text == "s":
        return SCALAR_NODE
    if text == "?":
        return DEDUCED
    if text == "?a":
        return UNTYPED_ATOMIC
    if text.startswith("[a]"):
        return TypeNode(LIST, atomic=True, element=_parse_type(text[3:]))
    if text.startswith("[s]"):
        return TypeNode(LIST, is_set=True, element=_parse_type(text[3:]))
    if text.startswith("[m="):
        keys, _, item = text[3:].partition("]")
        return TypeNode(LIST, keys=tuple(keys.split(",")), element=_parse_type(item))
    if text.startswith("{a}"):
        return TypeNode(MAP, atomic=True, element=_parse_type(text[3:]))
    if text.startswith("{}"):
        return TypeNode(MAP, element=_parse_type(text[2:]))
    return lambda: named_type(text)


@cache
def _crd_kind() -> TypeNode:
    """CustomResourceDefinition (apiextensions.k8s.io/v1): versions and names lists are atomic,
    so the schemas inside are owned whole."""
    atomic_strings = TypeNode(LIST, atomic=True, element=SCALAR_NODE)
    name_fields: dict[str, TypeNode | Resolver] = {
        name: SCALAR_NODE for name in ("kind", "listKind", "plural", "singular")
    }
    names = TypeNode(
        MAP, fields=name_fields | {"categories": atomic_strings, "shortNames": atomic_strings}
    )
    conversion = TypeNode(MAP, fields={"strategy": SCALAR_NODE, "webhook": DEDUCED})
    spec = TypeNode(MAP, fields={
        "conversion": conversion,
        "group": SCALAR_NODE,
        "names": names,
        "preserveUnknownFields": SCALAR_NODE,
        "scope": SCALAR_NODE,
        "versions": TypeNode(LIST, atomic=True, element=UNTYPED_ATOMIC),
    })
    condition_fields: dict[str, TypeNode | Resolver] = {
        name: SCALAR_NODE
        for name in ("lastTransitionTime", "message", "reason", "status", "type")
    }
    condition = TypeNode(MAP, fields=condition_fields)
    status = TypeNode(MAP, fields={
        "acceptedNames": names,
        "conditions": TypeNode(LIST, keys=("type",), element=condition),
        "storedVersions": atomic_strings,
    })
    return TypeNode(MAP, fields={
        "apiVersion": SCALAR_NODE,
        "kind": SCALAR_NODE,
        "metadata": lambda: named_type("meta.ObjectMeta"),
        "spec": spec,
        "status": status,
    })


# --- custom resources -----------------------------------------------------------------------


def custom_resource_type(schema: Mapping[str, Any] | None) -> TypeNode:
    """The schema of a custom resource from its CRD version's openAPIV3Schema."""
    root = schema_type(schema or {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    if root.kind != MAP:
        root = TypeNode(MAP, element=DEDUCED)
    fields = dict(root.fields)
    fields["apiVersion"] = SCALAR_NODE
    fields["kind"] = SCALAR_NODE
    fields["metadata"] = lambda: named_type("meta.ObjectMeta")
    return TypeNode(MAP, atomic=root.atomic, fields=fields, element=root.element)


def schema_type(schema: Mapping[str, Any]) -> TypeNode:
    """One structural-schema node as a TypeNode."""
    kind = schema.get("type")
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    if schema.get("x-kubernetes-int-or-string"):
        return SCALAR_NODE
    if kind == "array":
        return _array_type(schema)
    if kind == "object" or schema.get("properties") or schema.get("x-kubernetes-embedded-resource"):
        return _object_type(schema, preserve=preserve)
    if kind in ("string", "integer", "number", "boolean"):
        return SCALAR_NODE
    return DEDUCED


def _array_type(schema: Mapping[str, Any]) -> TypeNode:
    items = schema.get("items")
    item = schema_type(items) if isinstance(items, Mapping) else DEDUCED
    list_type = schema.get("x-kubernetes-list-type", "atomic")
    if list_type == "map":
        keys = tuple(schema.get("x-kubernetes-list-map-keys") or ())
        defaults = {}
        if isinstance(items, Mapping):
            for key in keys:
                prop = (items.get("properties") or {}).get(key)
                if isinstance(prop, Mapping) and "default" in prop:
                    defaults[key] = prop["default"]
        node = TypeNode(LIST, keys=keys, element=item)
        if defaults and item.kind == MAP:
            item.key_defaults.update(defaults)
        return node
    if list_type == "set":
        return TypeNode(LIST, is_set=True, element=item)
    return TypeNode(LIST, atomic=True, element=item)


def _object_type(schema: Mapping[str, Any], *, preserve: bool) -> TypeNode:
    node = TypeNode(MAP, atomic=schema.get("x-kubernetes-map-type") == "atomic")
    for name, prop in (schema.get("properties") or {}).items():
        if isinstance(prop, Mapping):
            node.fields[name] = schema_type(prop)
    if schema.get("x-kubernetes-embedded-resource"):
        node.fields.setdefault("apiVersion", SCALAR_NODE)
        node.fields.setdefault("kind", SCALAR_NODE)
        node.fields.setdefault("metadata", lambda: named_type("meta.ObjectMeta"))
    additional = schema.get("additionalProperties")
    if isinstance(additional, Mapping):
        node.element = schema_type(additional)
    elif preserve or additional is True:
        node.element = DEDUCED
    return node
