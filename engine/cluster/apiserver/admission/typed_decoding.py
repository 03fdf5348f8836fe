"""What decoding a request body into a built-in kind's Go type does to it, before anything else.

kube-apiserver reads every body into typed structs: `[]byte` values must be
base64 (Secret data, ConfigMap binaryData) and are kept in canonical form,
scalars must have their Go type, an empty map is left out (omitempty), a
non-omitempty integer reads 0 when absent, and the v1 conversion folds a
Secret's write-only `stringData` into `data` (stringData wins) and drops it.
What the decoder refuses is a 400, worded as the real one; the scalar types of the
batch kinds are checked in `batch_decoding.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.cluster.apiserver.admission.batch_decoding import decode_cronjob, decode_job
from engine.cluster.apiserver.admission.go_json import go_json_kind
from engine.cluster.apiserver.encoding.go_numbers import INT64
from engine.cluster.apiserver.errors import ApiError, cannot_decode
from engine.cluster.apiserver.patch.apply_schema import (
    LIST,
    MAP,
    SCALAR,
    UNTYPED,
    TypeNode,
    builtin_type,
)
from engine.cluster.apiserver.registry.builtins import (
    CONFIGMAPS,
    CONTROLLER_REVISIONS,
    CRONJOBS,
    JOBS,
    PRIORITY_CLASSES,
    SECRETS,
)
from engine.cluster.apiserver.registry.resources import ResourceType
from engine.cluster.apiserver.storage.objects import Obj, TypeKey
from engine.cluster.apiserver.validation import base64_values

_INT32 = range(-(1 << 31), 1 << 31)
# PriorityClass's scalar fields besides `value`, with their Go types.
_PRIORITY_CLASS_FIELDS = (
    ("globalDefault", bool, "bool"),
    ("description", str, "string"),
    ("preemptionPolicy", str, "v1.PreemptionPolicy"),
)


def decode_typed(rt: ResourceType, obj: Obj, stored: Obj | None = None) -> Obj:
    """`obj` as the real server holds it after decoding; the body is never changed in place.
    `stored` is the object an update replaces: what the write leaves equal to it has the
    shapes it was stored with, so only what changed is walked again."""
    decoder = _DECODERS.get(rt.key)
    decoded = obj if decoder is None else decoder(rt, obj)
    if rt.schema is None:
        _check_shape(rt, decoded, stored)
    return decoded


def check_type(value: object, expected: type, *, kind: str, field: str, go_type: str,
               version: str = "v1") -> None:
    """400 as Go's decoder words it when `value` (not null) is not of `expected`."""
    if value is None or (isinstance(value, expected) and not (
            isinstance(value, bool) and expected is not bool)):
        return
    raise _unmarshal_error(kind, version, field, value, go_type)


def _unmarshal_error(kind: str, version: str, field: str, value: Any, go_type: str) -> ApiError:
    """The 400 Go's decoder answers for a value of the wrong JSON kind in a struct field."""
    return cannot_decode(kind, version, f"json: cannot unmarshal {go_json_kind(value)} into Go "
                         f"struct field {kind}.{field} of type {go_type}")


_SHAPE_NAMES = {MAP: "object", LIST: "array", SCALAR: "a scalar"}


def _check_shape(rt: ResourceType, obj: Obj, stored: Obj | None) -> None:
    """400 where a value's JSON shape (object, array, scalar) cannot be the Go field's, found
    by the kind's server-side apply schema, so later validation meets only the right shapes.
    Fields the schema does not know are left to pruning. Every write runs this, so a quick
    pass decides; only a misfit walks again to word the error (over the whole object)."""
    root = builtin_type(rt.group, rt.kind)
    if not _shapes_fit(root, obj, stored):
        _raise_misfit(rt, root, obj)


def _shapes_fit(root: TypeNode, obj: Obj, stored: Obj | None = None) -> bool:
    """Whether every value under `obj` has its node's shape (the walk of `_raise_misfit`,
    without the paths). An untyped node takes any value, and so does everything below it.
    A field whose value equals the `stored` object's at that place is not walked: equal JSON
    values have the same shape everywhere (an object never equals an array or a scalar), and
    the stored one was checked when it was written. A status write so walks its status, not
    the pod's spec again."""
    stack: list[tuple[TypeNode, Any, Any]] = [(root, obj, stored)]
    pop, push = stack.pop, stack.append
    while stack:
        node, value, before = pop()
        kind = node.kind
        if kind == UNTYPED:
            continue
        if isinstance(value, dict):
            if kind != MAP:
                return False
            field_type = node.field_type
            old = before if isinstance(before, dict) else _NOTHING
            for name, child in value.items():
                if child is None:
                    continue
                child_node = field_type(name)
                if child_node is None:
                    continue
                if child_node.kind == SCALAR:
                    if isinstance(child, (dict, list)):
                        return False
                    continue
                was = old.get(name)
                if was is not None and (was is child or was == child):
                    continue
                push((child_node, child, was))
        elif isinstance(value, list):
            if kind != LIST:
                return False
            item = node.item_type()
            earlier = before if isinstance(before, list) else []
            for index, child in enumerate(value):
                if child is None:
                    continue
                was = earlier[index] if index < len(earlier) else None
                if was is not None and (was is child or was == child):
                    continue
                push((item, child, was))
        elif kind != SCALAR:
            return False
    return True


_NOTHING: dict[str, Any] = {}


def _raise_misfit(rt: ResourceType, root: TypeNode, obj: Obj) -> None:
    """The 400 for the first value (in walk order) whose shape misfits, named by its path."""
    stack: list[tuple[TypeNode, Any, str]] = [(root, obj, "")]
    while stack:
        node, value, path = stack.pop()
        node = node.for_value(value)
        if value is None or node.kind == UNTYPED:
            continue
        shape = MAP if isinstance(value, dict) else LIST if isinstance(value, list) else SCALAR
        if shape != node.kind:
            raise _unmarshal_error(rt.kind, rt.version, path.removeprefix("."), value,
                                   _SHAPE_NAMES[node.kind])
        if isinstance(value, dict):
            for name, child in value.items():
                child_node = node.field_type(name)
                if child_node is not None:
                    stack.append((child_node, child, f"{path}.{name}"))
        elif isinstance(value, list):
            item = node.item_type()
            stack.extend((item, child, path) for child in value)


def _configmap(rt: ResourceType, obj: Obj) -> Obj:
    _string_map(rt, obj, "data")
    return _with_map(obj, "binaryData", _byte_map(rt, obj, "binaryData"))


def _secret(rt: ResourceType, obj: Obj) -> Obj:
    data = _byte_map(rt, obj, "data")
    for key, value in _string_map(rt, obj, "stringData").items():
        data[key] = base64_values.encode(value.encode())
    kind = obj.get("type")
    if kind is not None and not isinstance(kind, str):
        raise _wrong_type(rt, "type", kind, "v1.SecretType")
    return _with_map(_without(obj, "stringData"), "data", data)


def _controller_revision(rt: ResourceType, obj: Obj) -> Obj:
    revision = obj.get("revision")
    if revision is None:
        return {**obj, "revision": 0}
    if isinstance(revision, bool) or not isinstance(revision, int) or revision not in INT64:
        raise _wrong_type(rt, "revision", revision, "int64")
    return obj


def _priority_class(rt: ResourceType, obj: Obj) -> Obj:
    """`value` is an int32 without omitempty (absent or null reads 0); null is unset elsewhere,
    and a false globalDefault or empty description is left out, as Go writes them."""
    value = obj.get("value")
    if isinstance(value, bool) or not isinstance(value, int | float | None):
        raise _wrong_type(rt, "value", value, "int32")
    if isinstance(value, float) or (value is not None and value not in _INT32):
        detail = f"json: cannot unmarshal number {value} into Go struct field PriorityClass.value"
        raise cannot_decode(rt.kind, rt.version, f"{detail} of type int32")
    for field, python_type, go_type in _PRIORITY_CLASS_FIELDS:
        given = obj.get(field)
        if given is not None and not isinstance(given, python_type):
            raise _wrong_type(rt, field, given, go_type)
    decoded = {key: item for key, item in obj.items() if _priority_class_keeps(key, item)}
    return {**decoded, "value": value or 0}


def _priority_class_keeps(key: str, item: Any) -> bool:
    if item is None:
        return key == "metadata"
    if key == "globalDefault":
        return item is not False
    return key != "description" or item != ""


def _byte_map(rt: ResourceType, obj: Obj, field: str) -> dict[str, str]:
    """A `map[string][]byte` field in canonical base64; null values read as empty."""
    entries = _map(rt, obj, field, "map[string][]uint8")
    canonical: dict[str, str] = {}
    for key, value in entries.items():
        if value is None:
            canonical[key] = ""
            continue
        if not isinstance(value, str):
            raise _wrong_type(rt, field, value, "[]uint8")
        try:
            canonical[key] = base64_values.encode(base64_values.decode(value))
        except base64_values.Base64Error as exc:
            raise cannot_decode(rt.kind, rt.version, f"{field}[{key}]: {exc}") from exc
    return canonical


def _string_map(rt: ResourceType, obj: Obj, field: str) -> dict[str, str]:
    entries = _map(rt, obj, field, "map[string]string")
    for value in entries.values():
        if value is not None and not isinstance(value, str):
            raise _wrong_type(rt, field, value, "string")
    return {key: value or "" for key, value in entries.items()}


def _map(rt: ResourceType, obj: Obj, field: str, go_type: str) -> dict[str, Any]:
    entries = obj.get(field)
    if entries is None:
        return {}
    if not isinstance(entries, dict):
        raise _wrong_type(rt, field, entries, go_type)
    return entries


def _with_map(obj: Obj, field: str, entries: dict[str, str]) -> Obj:
    """`obj` with `field` set to `entries`, or without it when they are empty (omitempty)."""
    if entries:
        return {**obj, field: entries}
    return _without(obj, field)


def _without(obj: Obj, field: str) -> Obj:
    return {k: v for k, v in obj.items() if k != field} if field in obj else obj


def _wrong_type(rt: ResourceType, field: str, value: Any, go_type: str) -> ApiError:
    return _unmarshal_error(rt.kind, rt.version, field, value, go_type)


_DECODERS: dict[TypeKey, Callable[[ResourceType, Obj], Obj]] = {
    CONFIGMAPS.key: _configmap,
    SECRETS.key: _secret,
    CONTROLLER_REVISIONS.key: _controller_revision,
    PRIORITY_CLASSES.key: _priority_class,
    JOBS.key: decode_job,
    CRONJOBS.key: decode_cronjob,
}
