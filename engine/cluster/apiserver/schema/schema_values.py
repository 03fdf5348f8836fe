"""OpenAPI v3 value keywords of one schema node, with kube-apiserver's messages.

The checks of a single value against a single node (type, enum, formats,
bounds, lengths, patterns, list-type uniqueness); `schema_validation.py` walks
the object and calls these. Messages are kube-openapi's, wrapped the way
apiextensions-apiserver wraps them into field errors.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import json
import re
from collections.abc import Callable, Mapping
from datetime import date, datetime
from typing import Any

from engine.cluster.apiserver.errors import Cause

_UUID = re.compile(
    r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}"
)
_HOSTNAME = re.compile(
    r"[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)*"
)
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
_DURATION = re.compile(r"-?((\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h))+|0")
_MAC = re.compile(r"([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}")


def render(value: Any) -> str:
    """A bad value as field errors print it: strings quoted, others as JSON."""
    if value is None:
        return '"null"'
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def type_matches(value: Any, wanted: str) -> bool:
    actual = json_type(value)
    if wanted == "integer" and actual == "number":
        return float(value).is_integer()
    return actual == wanted or (wanted == "number" and actual == "integer")


def invalid(path: str, value: Any, detail: str) -> Cause:
    return Cause(path, f"Invalid value: {render(value)}: {detail}", "FieldValueInvalid")


def type_error(path: str, value: Any, wanted: str) -> Cause:
    actual = json_type(value)
    return Cause(
        path,
        f'Invalid value: "{actual}": {path} in body must be of type {wanted}: "{actual}"',
        "FieldValueTypeInvalid",
    )


def _parses(parser: Callable[[str], Any], value: str) -> bool:
    try:
        parser(value)
    except ValueError:
        return False
    return True


def _is_datetime(value: str) -> bool:
    return bool(
        re.fullmatch(r"\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)", value)
    ) and _parses(
        lambda v: datetime.fromisoformat(v.replace("z", "Z").replace("Z", "+00:00")), value
    )


def _is_byte(value: str) -> bool:
    try:
        base64.b64decode(value, validate=True)
    except binascii.Error:
        return False
    return True


FORMATS: dict[str, Callable[[str], bool]] = {
    "date-time": _is_datetime,
    "datetime": _is_datetime,
    "date": lambda v: bool(re.fullmatch(r"\d{4}-\d\d-\d\d", v)) and _parses(date.fromisoformat, v),
    "byte": _is_byte,
    "uuid": lambda v: bool(_UUID.fullmatch(v)),
    "uuid3": lambda v: bool(_UUID.fullmatch(v)),
    "uuid4": lambda v: bool(_UUID.fullmatch(v)),
    "uuid5": lambda v: bool(_UUID.fullmatch(v)),
    "ipv4": lambda v: _parses(ipaddress.IPv4Address, v),
    "ipv6": lambda v: _parses(ipaddress.IPv6Address, v),
    "cidr": lambda v: _parses(lambda s: ipaddress.ip_network(s, strict=False), v),
    "hostname": lambda v: len(v) <= 253 and bool(_HOSTNAME.fullmatch(v)),
    "email": lambda v: bool(_EMAIL.fullmatch(v)),
    "duration": lambda v: bool(_DURATION.fullmatch(v)),
    "mac": lambda v: bool(_MAC.fullmatch(v)),
}


def check_type(schema: Mapping[str, Any], value: Any, path: str) -> Cause | None:
    """The type (or int-or-string) a value must have; None when it has it."""
    if schema.get("x-kubernetes-int-or-string"):
        # kube-openapi takes a whole JSON number (1.0) for an integer: the Kubeflow SDK posts
        # resourcesPerNode's quantities so.
        if isinstance(value, str) or type_matches(value, "integer"):
            return None
        return type_error(path, value, "integer,string")
    wanted = schema.get("type")
    if wanted and not type_matches(value, wanted):
        return type_error(path, value, wanted)
    return None


def check_keywords(schema: Mapping[str, Any], value: Any, path: str) -> list[Cause]:
    """Every keyword except type, properties, items and the combinators."""
    causes: list[Cause] = []
    enum = schema.get("enum")
    if enum is not None and not any(value == e and json_type(value) == json_type(e) for e in enum):
        supported = ", ".join(json.dumps(e) for e in enum)
        causes.append(
            Cause(
                path,
                f"Unsupported value: {render(value)}: supported values: {supported}",
                "FieldValueNotSupported",
            )
        )
    if isinstance(value, str):
        causes += _string_checks(schema, value, path)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        causes += _number_checks(schema, value, path)
    elif isinstance(value, list):
        causes += _array_checks(schema, value, path)
    elif isinstance(value, dict):
        causes += _object_checks(schema, value, path)
    return causes


def _string_checks(schema: Mapping[str, Any], value: str, path: str) -> list[Cause]:
    causes = []
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        limit = schema["maxLength"]
        causes.append(
            Cause(path, f"Too long: may not be more than {limit} bytes", "FieldValueTooLong")
        )
    if "minLength" in schema and len(value) < schema["minLength"]:
        causes.append(
            invalid(
                path, value, f"{path} in body should be at least {schema['minLength']} chars long"
            )
        )
    pattern = schema.get("pattern")
    if pattern is not None and not re.search(pattern, value):
        causes.append(invalid(path, value, f"{path} in body should match '{pattern}'"))
    fmt = schema.get("format")
    if fmt in FORMATS and not FORMATS[fmt](value):
        causes.append(
            Cause(
                path,
                f"Invalid value: {render(value)}: {path} in body must be of type {fmt}: "
                f"{render(value)}",
                "FieldValueTypeInvalid",
            )
        )
    return causes


def _number_checks(schema: Mapping[str, Any], value: float, path: str) -> list[Cause]:
    causes = []
    if "minimum" in schema:
        low, exclusive = schema["minimum"], schema.get("exclusiveMinimum", False)
        if value < low or (exclusive and value == low):
            relation = "greater than" if exclusive else "greater than or equal to"
            causes.append(invalid(path, value, f"{path} in body should be {relation} {low}"))
    if "maximum" in schema:
        high, exclusive = schema["maximum"], schema.get("exclusiveMaximum", False)
        if value > high or (exclusive and value == high):
            relation = "less than" if exclusive else "less than or equal to"
            causes.append(invalid(path, value, f"{path} in body should be {relation} {high}"))
    factor = schema.get("multipleOf")
    if factor and (value / factor) != int(value / factor):
        causes.append(invalid(path, value, f"{path} in body should be a multiple of {factor}"))
    return causes


def _array_checks(schema: Mapping[str, Any], value: list[Any], path: str) -> list[Cause]:
    causes = []
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        causes.append(
            Cause(
                path,
                f"Too many: {len(value)}: must have at most {schema['maxItems']} items",
                "FieldValueTooMany",
            )
        )
    if "minItems" in schema and len(value) < schema["minItems"]:
        causes.append(
            invalid(path, value, f"{path} in body should have at least {schema['minItems']} items")
        )
    if schema.get("uniqueItems") and len({render(v) for v in value}) != len(value):
        causes.append(invalid(path, value, f"{path} in body shouldn't contain duplicates"))
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "set":
        causes += _duplicates(value, path, lambda item: item)
    elif list_type == "map":
        keys = schema.get("x-kubernetes-list-map-keys") or []
        causes += _duplicates(
            value, path, lambda item: {k: item.get(k) for k in keys if isinstance(item, dict)}
        )
    return causes


def _duplicates(items: list[Any], path: str, identity: Callable[[Any], Any]) -> list[Cause]:
    seen: set[str] = set()
    causes = []
    for index, item in enumerate(items):
        key = render(identity(item))
        if key in seen:
            causes.append(
                Cause(f"{path}[{index}]", f"Duplicate value: {key}", "FieldValueDuplicate")
            )
        seen.add(key)
    return causes


def _object_checks(schema: Mapping[str, Any], value: dict[str, Any], path: str) -> list[Cause]:
    causes = [
        Cause(f"{path}.{name}" if path else name, "Required value", "FieldValueRequired")
        for name in schema.get("required") or []
        if name not in value
    ]
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        causes.append(
            Cause(
                path,
                f"Too many: {len(value)}: must have at most {schema['maxProperties']} items",
                "FieldValueTooMany",
            )
        )
    if "minProperties" in schema and len(value) < schema["minProperties"]:
        causes.append(
            invalid(
                path,
                value,
                f"{path} in body should have at least {schema['minProperties']} properties",
            )
        )
    return causes
