"""The types CEL expressions are checked against: the engine's own variables field by field,
and the job against its kind's schema.

Google's checker knows object types only as protobuf messages, so each structured variable
becomes a message made here, in a descriptor pool of its own: the engine's structs
(vocabulary.STRUCTS, the replica summary with one count per phase word of the machine at
hand), the run policy from its model, and the job from the kind's structural schema when
one is known (as kube-apiserver types a CRD's validation rules against its schema). The
messages are for checking only; expressions are still evaluated on plain values.

A schema node maps as kube-apiserver's CEL maps it: an object with properties is a message
(its fields the properties), an object with `additionalProperties` a `map(string, V)`, an
array a `list(T)`, `integer`/`number`/`boolean`/`string` the scalars, and anything open
(`x-kubernetes-int-or-string`, `x-kubernetes-preserve-unknown-fields`, no type) is `dyn`.
Two deliberate differences: a `date-time` or `duration` string stays a string (the
evaluator sees the JSON text), and an object whose property names are not all CEL
identifiers is an untyped `map(string, dyn)` (kube-apiserver escapes such names instead),
the job itself too when a top-level property is so named, so nothing valid is ever refused.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, struct_pb2

from engine.definition.vocabulary import STRUCTS, SUMMARY_STRUCT, Struct, Variable

PACKAGE = "jobmachine.cel"
_FieldProto = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    "int": _FieldProto.TYPE_INT64, "uint": _FieldProto.TYPE_UINT64,
    "double": _FieldProto.TYPE_DOUBLE, "string": _FieldProto.TYPE_STRING,
    "bool": _FieldProto.TYPE_BOOL, "bytes": _FieldProto.TYPE_BYTES,
}
_SCHEMA_SCALARS = {"integer": "int", "number": "double", "boolean": "bool", "string": "string"}
_DYN, _STRUCT = ".google.protobuf.Value", ".google.protobuf.Struct"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Words CEL's grammar reserves: a field so named cannot be selected with a dot.
_CEL_RESERVED = frozenset({
    "in", "true", "false", "null", "as", "break", "const", "continue", "else", "for",
    "function", "if", "import", "let", "loop", "package", "return", "var", "void", "while",
})


@dataclass(frozen=True, eq=False)
class JobSchema:
    """A kind's structural schema of its objects (`openAPIV3Schema`), compared by content."""

    schema: Mapping[str, Any]
    kind: str = ""
    digest: str = field(init=False)

    def __post_init__(self) -> None:
        text = json.dumps(self.schema, sort_keys=True, default=str)
        object.__setattr__(self, "digest", hashlib.sha256(text.encode()).hexdigest())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JobSchema) and other.digest == self.digest

    def __hash__(self) -> int:
        return hash(self.digest)


SchemaLookup = Callable[[str, str], JobSchema | None]
"""(apiVersion, kind) -> the kind's schema, None when it is not known."""


@dataclass(frozen=True)
class TypeContext:
    """What the variables' types depend on beyond the vocabulary: the machine's replica
    phase words (the replica summary has a count for each) and the kind's schema, if known."""

    phase_words: tuple[str, ...] = ()
    job_schema: JobSchema | None = None
    references: tuple[str, ...] = ()
    """The names of the machine's governs.references: the fields of `references`."""


REFERENCES_STRUCT = "References"
"""The type of `references`: one `map(string, dyn)` field per reference the machine names."""

UNTYPED_JOB = TypeContext()
"""No phase words and no schema: the job is an untyped map (tests, tools)."""


@dataclass(frozen=True)
class MessageInfo:
    """How to speak of a message in an error: what it is and its fields, in order."""

    label: str
    fields: tuple[str, ...]


@dataclass
class CelTypes:
    """A descriptor pool holding the messages of one context, the checker type signature
    of each struct name, and what each message is, for error messages."""

    pool: descriptor_pool.DescriptorPool
    struct_types: dict[str, str]
    messages: dict[str, MessageInfo]


class _Builder:
    def __init__(self) -> None:
        self.file = descriptor_pb2.FileDescriptorProto(
            name="jobmachine/cel_types.proto", package=PACKAGE, syntax="proto3",
            dependency=[struct_pb2.DESCRIPTOR.name])
        self.messages: dict[str, MessageInfo] = {}
        self._names: set[str] = set()

    def _message(self, name: str) -> tuple[descriptor_pb2.DescriptorProto, str]:
        """A new message named `name` (an identifier), numbered when the name is taken:
        `spec.a_b` and `spec_a.b` are both `Job_spec_a_b`."""
        unique, counter = name, 1
        while unique in self._names:
            counter += 1
            unique = f"{name}_{counter}"
        self._names.add(unique)
        return self.file.message_type.add(name=unique), f"{PACKAGE}.{unique}"

    def struct(self, struct: Struct, known: Mapping[str, str],
               extra: tuple[Variable, ...] = ()) -> str:
        """The message of an engine struct whose fields may name the `known` structs (by
        their message types); its type name."""
        message, full = self._message(struct.name)
        fields = (*struct.fields, *extra)
        for number, spec in enumerate(fields, start=1):
            if spec.cel_type in known:
                self._add(message, spec.name, number, _FieldProto.TYPE_MESSAGE,
                          "." + known[spec.cel_type])
            else:
                self._signature_field(message, full, spec.name, spec.cel_type, number)
        self.messages[full] = MessageInfo(struct.label, tuple(f.name for f in fields))
        return full

    def _signature_field(self, message: descriptor_pb2.DescriptorProto, owner: str, name: str,
                         signature: str, number: int) -> None:
        """A field typed by a vocabulary signature: a scalar, dyn, list(T) or map(string, T)."""
        if signature.startswith("map(string, ") and signature.endswith(")"):
            value = signature[len("map(string, "):-1]
            self._map_field(message, owner, name, number, self._element_type(value))
            return
        if signature.startswith("list(") and signature.endswith(")"):
            element = signature[len("list("):-1]
            self._add(message, name, number, *self._element_type(element), repeated=True)
            return
        self._add(message, name, number, *self._element_type(signature))

    def _element_type(self, signature: str) -> tuple[int, str]:
        if signature in _SCALARS:
            return _SCALARS[signature], ""
        return _FieldProto.TYPE_MESSAGE, _DYN

    @staticmethod
    def _add(message: descriptor_pb2.DescriptorProto, name: str, number: int, kind: int,
             type_name: str = "", *, repeated: bool = False) -> None:
        label = _FieldProto.LABEL_REPEATED if repeated else _FieldProto.LABEL_OPTIONAL
        added = message.field.add(name=name, number=number, type=kind, label=label)
        if type_name:
            added.type_name = type_name

    def _map_field(self, message: descriptor_pb2.DescriptorProto, owner: str, name: str,
                   number: int, value: tuple[int, str]) -> None:
        entry = message.nested_type.add(name=f"{name[:1].upper()}{name[1:]}Entry")
        entry.options.map_entry = True
        self._add(entry, "key", 1, _FieldProto.TYPE_STRING)
        self._add(entry, "value", 2, *value)
        self._add(message, name, number, _FieldProto.TYPE_MESSAGE,
                  f".{owner}.{entry.name}", repeated=True)

    def schema(self, node: Mapping[str, Any], name: str, label: str) -> tuple[int, str, str]:
        """A schema node as a field type: (proto type, message type name, container):
        container is '' for a plain field, 'list' or 'map'. Members of a list or map that
        are maps are dyn (protobuf has no list or map of maps), and so are members that are
        arrays (as `_schema_value` gives any node it does not type)."""
        if node.get("type") == "array":
            items = node.get("items") or {}
            if _is_map(items):
                return _FieldProto.TYPE_MESSAGE, _DYN, "list"
            return (*self._schema_value(items, name, f"{label}[]"), "list")
        if _is_map(node):
            values = node["additionalProperties"]
            if _is_map(values):
                return _FieldProto.TYPE_MESSAGE, _DYN, "map"
            return (*self._schema_value(values, name, f"{label}[*]"), "map")
        return (*self._schema_value(node, name, label), "")

    def _schema_value(self, node: Mapping[str, Any], name: str, label: str) -> tuple[int, str]:
        """A node that is neither an array nor a map (`schema` took those): a scalar, an
        object's message, an open object as `Struct` (`map(string, dyn)`), else dyn."""
        kind = node.get("type")
        if node.get("x-kubernetes-int-or-string") or kind not in (*_SCHEMA_SCALARS, "object"):
            return _FieldProto.TYPE_MESSAGE, _DYN
        if kind != "object":
            return _SCALARS[_SCHEMA_SCALARS[kind]], ""
        properties = node.get("properties")
        if not isinstance(properties, Mapping) or (
                node.get("x-kubernetes-preserve-unknown-fields")) or not all(
                _selectable(key) for key in properties):
            return _FieldProto.TYPE_MESSAGE, _STRUCT
        return _FieldProto.TYPE_MESSAGE, "." + self.object(properties, name, label)

    def object(self, properties: Mapping[str, Any], name: str, label: str) -> str:
        """The message of an object schema's properties; its type name."""
        message, full = self._message(name)
        for number, (key, written) in enumerate(sorted(properties.items()), start=1):
            child = written if isinstance(written, Mapping) else {}
            kind, type_name, container = self.schema(child, f"{name}_{key}", f"{label}.{key}")
            if container == "map":
                self._map_field(message, full, key, number, (kind, type_name))
            else:
                self._add(message, key, number, kind, type_name, repeated=container == "list")
        self.messages[full] = MessageInfo(label, tuple(sorted(properties)))
        return full

    def pool(self) -> descriptor_pool.DescriptorPool:
        pool = descriptor_pool.DescriptorPool()
        pool.Add(descriptor_pb2.FileDescriptorProto.FromString(struct_pb2.DESCRIPTOR.serialized_pb))
        pool.Add(self.file)
        return pool


def _is_map(node: Mapping[str, Any]) -> bool:
    return node.get("type") == "object" and isinstance(node.get("additionalProperties"),
                                                       Mapping) and not node.get("properties")


def _selectable(name: str) -> bool:
    """Whether `a.<name>` is valid CEL and `name` a valid proto field name."""
    return bool(_IDENTIFIER.fullmatch(name)) and name not in _CEL_RESERVED


@lru_cache(maxsize=128)
def cel_types(context: TypeContext) -> CelTypes:
    """The messages of `context`, built once per context (bounded: an engine that sees its
    CRDs change for weeks keeps only the recent ones)."""
    builder = _Builder()
    struct_types: dict[str, str] = {}
    phase_counts = tuple(Variable(word, "int", "") for word in context.phase_words
                         if word not in {f.name for f in SUMMARY_STRUCT.fields})
    for struct in STRUCTS:
        extra = phase_counts if struct is SUMMARY_STRUCT else ()
        struct_types[struct.name] = builder.struct(struct, struct_types, extra)
    struct_types[REFERENCES_STRUCT] = builder.struct(Struct(
        REFERENCES_STRUCT, "references",
        tuple(Variable(name, "map(string, dyn)", "") for name in context.references)),
        struct_types)
    if context.job_schema is not None:
        properties = _job_properties(context.job_schema.schema)
        if all(_selectable(key) for key in properties):  # else job stays map(string, dyn)
            struct_types["Job"] = builder.object(properties, "Job", "job")
    return CelTypes(builder.pool(), struct_types, builder.messages)


def _job_properties(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The job's top-level properties: the kind's, with metadata as the engine gives it."""
    properties = dict(schema.get("properties") or {})
    properties.setdefault("apiVersion", {"type": "string"})
    properties.setdefault("kind", {"type": "string"})
    properties["metadata"] = _METADATA
    properties.setdefault("status", {"type": "object"})  # no properties: map(string, dyn)
    return properties


_STRINGS = {"type": "object", "additionalProperties": {"type": "string"}}
_METADATA: dict[str, Any] = {
    "type": "object",
    "properties": {
        **{key: {"type": "string"} for key in (
            "name", "generateName", "namespace", "uid", "resourceVersion",
            "creationTimestamp", "deletionTimestamp")},
        "generation": {"type": "integer"},
        "deletionGracePeriodSeconds": {"type": "integer"},
        "labels": _STRINGS,
        "annotations": _STRINGS,
        "finalizers": {"type": "array", "items": {"type": "string"}},
        "ownerReferences": {"type": "array", "items": {
            "type": "object", "properties": {
                "apiVersion": {"type": "string"}, "kind": {"type": "string"},
                "name": {"type": "string"}, "uid": {"type": "string"},
                "controller": {"type": "boolean"}, "blockOwnerDeletion": {"type": "boolean"},
            }}},
    },
}
"""ObjectMeta as a job's `metadata` holds it (managedFields left out, as `job_value` does)."""

