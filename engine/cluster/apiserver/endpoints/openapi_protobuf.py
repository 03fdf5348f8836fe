"""The Swagger 2.0 document as protobuf: gnostic's `openapi.v2.Document`, which kubectl reads.

kubectl asks `/openapi/v2` for `application/com.github.proto-openapi.spec.v2@v1.0+protobuf`
and parses nothing else: with JSON its client-side validation fails before
it can say that a kind is not served (`no matches for kind ... ensure CRDs
are installed first`). This encodes the JSON document `openapi.openapi_v2`
builds, field by field, as gnostic-models' OpenAPIv2.proto numbers them;
what the proto has no field for (anyOf, nullable...) is left out, as gnostic
leaves it, and `x-` extensions travel as YAML in `NamedAny`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

# What kube-apiserver answers with (`@v1.0`, as kubectl asks, is no valid media type for Go).
PROTOBUF_V2 = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_ACCEPTED = ("com.github.proto-openapi.spec.v2@v1.0+protobuf", PROTOBUF_V2.split("/", 1)[1])


def wants_protobuf(accept: str) -> bool:
    return any(media in accept for media in _ACCEPTED)


# --- wire format ----------------------------------------------------------------------------


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _tag(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _bytes(number: int, payload: bytes) -> bytes:
    return _tag(number, 2) + _varint(len(payload)) + payload


def _string(number: int, value: Any) -> bytes:
    return _bytes(number, str(value).encode()) if value not in (None, "") else b""


def _strings(number: int, values: Iterable[Any]) -> bytes:
    return b"".join(_bytes(number, str(v).encode()) for v in values)


def _bool(number: int, value: Any) -> bytes:
    return _tag(number, 0) + b"\x01" if value is True else b""


def _int(number: int, value: Any) -> bytes:
    if isinstance(value, bool) or not isinstance(value, int) or value == 0:
        return b""
    return _tag(number, 0) + _varint(value)


def _double(number: int, value: Any) -> bytes:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value == 0:
        return b""
    return _tag(number, 1) + struct.pack("<d", float(value))


def _message(number: int, payload: bytes, *, keep_empty: bool = False) -> bytes:
    return _bytes(number, payload) if payload or keep_empty else b""


def _any(value: Any) -> bytes:
    """gnostic's Any: the value as YAML (field 2)."""
    return _bytes(2, yaml.safe_dump(value, default_flow_style=False).encode())


def _named(number: int, name: str, payload: bytes) -> bytes:
    return _bytes(number, _string(1, name) + _message(2, payload, keep_empty=True))


def _extensions(number: int, document: Mapping[str, Any]) -> bytes:
    return b"".join(
        _named(number, key, _any(value))
        for key, value in document.items()
        if key.startswith("x-")
    )


# --- schemas --------------------------------------------------------------------------------


def schema(document: Mapping[str, Any]) -> bytes:
    """One JSON schema as gnostic's Schema message."""
    out = [
        _string(1, document.get("$ref")),
        _string(2, document.get("format")),
        _string(3, document.get("title")),
        _string(4, document.get("description")),
    ]
    if "default" in document:
        out.append(_bytes(5, _any(document["default"])))
    out += [
        _double(6, document.get("multipleOf")),
        _double(7, document.get("maximum")),
        _bool(8, document.get("exclusiveMaximum")),
        _double(9, document.get("minimum")),
        _bool(10, document.get("exclusiveMinimum")),
        _int(11, document.get("maxLength")),
        _int(12, document.get("minLength")),
        _string(13, document.get("pattern")),
        _int(14, document.get("maxItems")),
        _int(15, document.get("minItems")),
        _bool(16, document.get("uniqueItems")),
        _int(17, document.get("maxProperties")),
        _int(18, document.get("minProperties")),
        _strings(19, document.get("required") or ()),
        b"".join(_bytes(20, _any(value)) for value in document.get("enum") or ()),
        _additional_properties(document.get("additionalProperties")),
        _type(document.get("type")),
        _items(document.get("items")),
        b"".join(_bytes(24, schema(sub)) for sub in document.get("allOf") or ()),
        _properties(document.get("properties")),
        _string(26, document.get("discriminator")),
        _bool(27, document.get("readOnly")),
    ]
    if "example" in document:
        out.append(_bytes(30, _any(document["example"])))
    out.append(_extensions(31, document))
    return b"".join(out)


def _additional_properties(value: Any) -> bytes:
    if isinstance(value, Mapping):
        return _bytes(21, _bytes(1, schema(value)))
    if isinstance(value, bool):
        return _bytes(21, _tag(2, 0) + (b"\x01" if value else b"\x00"))
    return b""


def _type(value: Any) -> bytes:
    if isinstance(value, str):
        return _bytes(22, _bytes(1, value.encode()))
    if isinstance(value, list):
        return _bytes(22, _strings(1, value))
    return b""


def _items(value: Any) -> bytes:
    subs = [value] if isinstance(value, Mapping) else value if isinstance(value, list) else []
    if not subs:
        return b""
    return _bytes(23, b"".join(_bytes(1, schema(sub)) for sub in subs))


def _properties(value: Any) -> bytes:
    if not isinstance(value, Mapping) or not value:
        return b""
    return _bytes(25, b"".join(_named(1, name, schema(sub)) for name, sub in value.items()))


# --- paths ----------------------------------------------------------------------------------

_METHODS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}


def _parameter(document: Mapping[str, Any]) -> bytes:
    """A ParametersItem: a `$ref`, a body parameter, or a query / path parameter."""
    if "$ref" in document:
        return _bytes(2, _string(1, document["$ref"]))
    location = document.get("in")
    if location == "body":
        body = (
            _string(1, document.get("description"))
            + _string(2, document.get("name"))
            + _string(3, location)
            + _bool(4, document.get("required"))
            + _message(5, schema(document.get("schema") or {}), keep_empty=True)
        )
        return _bytes(1, _bytes(1, body))
    head = (
        _bool(1, document.get("required"))
        + _string(2, location)
        + _string(3, document.get("description"))
        + _string(4, document.get("name"))
    )
    if location == "path":
        sub = head + _string(5, document.get("type")) + _bool(19, document.get("uniqueItems"))
        return _bytes(1, _bytes(2, _bytes(4, sub)))
    sub = head + _string(6, document.get("type")) + _bool(20, document.get("uniqueItems"))
    number = 1 if location == "header" else 3
    return _bytes(1, _bytes(2, _bytes(number, sub)))


def _responses(document: Mapping[str, Any]) -> bytes:
    out = b""
    for code, response in document.items():
        body = _string(1, response.get("description"))
        if isinstance(response.get("schema"), Mapping):
            body += _bytes(2, _bytes(1, schema(response["schema"])))
        out += _named(1, code, _bytes(1, body))
    return out


def _operation(document: Mapping[str, Any]) -> bytes:
    return b"".join((
        _strings(1, document.get("tags") or ()),
        _string(2, document.get("summary")),
        _string(3, document.get("description")),
        _string(5, document.get("operationId")),
        _strings(6, document.get("produces") or ()),
        _strings(7, document.get("consumes") or ()),
        b"".join(_bytes(8, _parameter(p)) for p in document.get("parameters") or ()),
        _message(9, _responses(document.get("responses") or {})),
        _strings(10, document.get("schemes") or ()),
        _bool(11, document.get("deprecated")),
        _extensions(13, document),
    ))


def _path_item(document: Mapping[str, Any]) -> bytes:
    out = [
        _bytes(number, _operation(document[method]))
        for method, number in _METHODS.items()
        if isinstance(document.get(method), Mapping)
    ]
    out += [_bytes(9, _parameter(p)) for p in document.get("parameters") or ()]
    out.append(_extensions(10, document))
    return b"".join(out)


def _security_definitions(document: Mapping[str, Any]) -> bytes:
    out = b""
    for name, item in document.items():
        api_key = (
            _string(1, item.get("type"))
            + _string(2, item.get("name"))
            + _string(3, item.get("in"))
            + _string(4, item.get("description"))
        )
        out += _named(1, name, _bytes(2, api_key))
    return out


def _security(requirements: Iterable[Mapping[str, Any]]) -> bytes:
    out = b""
    for requirement in requirements:
        entries = b"".join(
            _named(1, name, _strings(1, scopes)) for name, scopes in requirement.items()
        )
        out += _bytes(12, entries)
    return out


def document_bytes(document: Mapping[str, Any]) -> bytes:
    """The whole Swagger 2.0 document as an openapi.v2.Document message."""
    info = document.get("info") or {}
    paths = document.get("paths") or {}
    definitions = document.get("definitions") or {}
    return b"".join((
        _string(1, document.get("swagger")),
        _message(2, _string(1, info.get("title")) + _string(2, info.get("version"))),
        _strings(5, document.get("schemes") or ()),
        _strings(6, document.get("consumes") or ()),
        _strings(7, document.get("produces") or ()),
        _message(8, b"".join(_named(2, p, _path_item(item)) for p, item in paths.items())),
        _message(9, b"".join(_named(1, n, schema(s)) for n, s in definitions.items())),
        _security(document.get("security") or ()),
        _message(13, _security_definitions(document.get("securityDefinitions") or {})),
        _extensions(16, document),
    ))
