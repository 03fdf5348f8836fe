"""Request bodies sent as Kubernetes protobuf, decoded to the JSON object they stand for.

kubectl's typed `create` commands (namespace, configmap, secret, service ...) send
`application/vnd.kubernetes.protobuf` and never retry as JSON, so the server
decodes the `k8s\\0` + runtime.Unknown envelope and the object inside it by
the field tables of `protobuf_tables` (hand-written), `protobuf_tables_auth` and
the generated `protobuf_tables_core` (Pod, PodTemplate, ReplicationController),
`protobuf_tables_batch` (Job, CronJob) and `protobuf_tables_apps` (Deployment,
ReplicaSet). `KINDS` below is the one list of kinds decoded; kinds without a table are
refused with `UnsupportedKindError` (415), never guessed at.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from loguru import logger

from engine.cluster.apiserver.encoding import (
    protobuf_tables,
    protobuf_tables_apps,
    protobuf_tables_auth,
    protobuf_tables_batch,
    protobuf_tables_core,
)
from engine.cluster.apiserver.encoding.protobuf_tables import Field, Table

KINDS = {
    **protobuf_tables.KINDS,
    **protobuf_tables_auth.KINDS,
    **protobuf_tables_core.KINDS,
    **protobuf_tables_batch.KINDS,
    **protobuf_tables_apps.KINDS,
}
PROTOBUF_CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"

_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MAPS = ("string_map", "bytes_map", "quantity_map")
_SCALARS = ("int", "bool")


class ProtobufError(ValueError):
    """A protobuf request body that cannot be decoded (answered 400)."""


class UnsupportedKindError(ProtobufError):
    """A well-formed protobuf body of a kind this server has no table for (answered 415)."""

    def __init__(self, api_version: str, kind: str) -> None:
        self.api_version, self.kind = api_version, kind
        super().__init__(
            f"protobuf request bodies of kind {kind or '(none)'} ({api_version or 'no apiVersion'})"
            " are not supported by the jobmachine embedded API server; write the object as"
            " YAML or JSON and send it with `kubectl create -f FILE` or `kubectl apply -f FILE`"
        )


def decode_request(body: bytes) -> dict[str, Any]:
    """The JSON object a protobuf request body encodes, apiVersion and kind from its envelope."""
    if not body.startswith(MAGIC):
        raise ProtobufError("protobuf body does not start with the k8s\\x00 magic")
    envelope = dict(_last_values(body[len(MAGIC) :]))
    type_meta = dict(_last_values(_bytes_of(envelope.get(1, b""), "typeMeta")))
    api_version = _text(_bytes_of(type_meta.get(1, b""), "typeMeta.apiVersion"))
    kind = _text(_bytes_of(type_meta.get(2, b""), "typeMeta.kind"))
    encoding = _text(_bytes_of(envelope.get(3, b""), "contentEncoding"))
    content_type = _text(_bytes_of(envelope.get(4, b""), "contentType"))
    if encoding:
        raise ProtobufError(f"protobuf body with contentEncoding {encoding!r} is not supported")
    if content_type not in ("", PROTOBUF_CONTENT_TYPE):
        raise ProtobufError(f"protobuf envelope holds {content_type!r}, not protobuf")
    table = KINDS.get((api_version, kind))
    if table is None:
        raise UnsupportedKindError(api_version, kind)
    obj = _message(_bytes_of(envelope.get(2, b""), "raw"), table, kind)
    return {"apiVersion": api_version, "kind": kind, **obj}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = 0
    for shift in range(0, 70, 7):
        if pos >= len(data):
            raise ProtobufError("protobuf body is truncated inside a varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
    raise ProtobufError("protobuf varint is longer than 10 bytes")


def _fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """Every (number, wire type, value) of a message; values are ints or bytes."""
    pos = 0
    while pos < len(data):
        tag, pos = _varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise ProtobufError("protobuf field number 0 is invalid")
        value: int | bytes
        if wire == _VARINT:
            value, pos = _varint(data, pos)
        elif wire in (_BYTES, _FIXED64, _FIXED32):
            if wire == _BYTES:
                size, pos = _varint(data, pos)
            else:
                size = 8 if wire == _FIXED64 else 4
            if pos + size > len(data):
                raise ProtobufError(f"protobuf field {number} runs past the end of its message")
            value, pos = data[pos : pos + size], pos + size
        else:
            raise ProtobufError(f"protobuf wire type {wire} (field {number}) is not supported")
        yield number, wire, value


def _last_values(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    for number, _, value in _fields(data):
        yield number, value


def _bytes_of(value: int | bytes, path: str) -> bytes:
    if isinstance(value, int):
        raise ProtobufError(f"{path}: expected a length-delimited field, got a varint")
    return value


def _text(data: bytes) -> str:
    try:
        return data.decode()
    except UnicodeDecodeError as exc:
        raise ProtobufError(f"protobuf string is not valid UTF-8: {exc}") from exc


def _message(data: bytes, table: Table, path: str) -> dict[str, Any]:
    """A message as JSON: last value wins for singular fields, lists and maps accumulate.

    Zero scalars are left out unless Go's JSON keeps them (`Field.keep_zero`);
    a zero IntOrString means "unset" there too. Present structs stay, even
    empty, as Go writes `"spec": {}`; the zero time is absent, as it is null.
    An inline struct's fields join this object's; repeated scalars may come
    packed, as every protobuf parser must accept.
    """
    out: dict[str, Any] = {}
    inlined: dict[str, Any] = {}
    seen: dict[str, Field] = {}
    for number, wire, raw in _fields(data):
        field = table.get(number)
        if field is None:
            logger.bind(path=path, field=number).debug("skipping unknown protobuf field")
            continue
        if field.inline:
            inlined.update(_value(_wire(raw, wire, field, path), field, path))
            continue
        where, seen[field.name] = f"{path}.{field.name}", field
        if field.kind in _MAPS:
            key, item = _map_entry(_wire(raw, wire, field, where), field, where)
            out.setdefault(field.name, {})[key] = item
        elif field.repeated and field.kind in _SCALARS and wire == _BYTES:
            values = _packed_varints(_bytes_of(raw, where))
            out.setdefault(field.name, []).extend(_value(value, field, where) for value in values)
        else:
            value = _value(_wire(raw, wire, field, where), field, where)
            if field.repeated:
                out.setdefault(field.name, []).append(value)
            else:
                out[field.name] = value
    kept = {name: value for name, value in out.items() if _kept(value, seen[name])}
    return {**inlined, **kept}


def _packed_varints(data: bytes) -> Iterator[int]:
    """The varints of a packed repeated field."""
    pos = 0
    while pos < len(data):
        value, pos = _varint(data, pos)
        yield value


def _kept(value: Any, field: Field) -> bool:
    if value is None:
        return False
    return bool(value) or field.keep_zero or (field.kind == "message" and not field.repeated)


def _wire(raw: int | bytes, wire: int, field: Field, where: str) -> int | bytes:
    expected = _VARINT if field.kind in _SCALARS else _BYTES
    if wire != expected:
        raise ProtobufError(f"{where}: wire type {wire}, expected {expected} for a {field.kind}")
    return raw


def _value(raw: int | bytes, field: Field, where: str) -> Any:
    if isinstance(raw, int):
        return bool(raw) if field.kind == "bool" else _signed(raw)
    if field.kind == "string":
        return _text(raw)
    if field.kind == "message":
        assert field.table is not None
        return _message(raw, field.table, where)
    if field.kind in ("time", "micro_time"):
        return _time(raw, micro=field.kind == "micro_time", where=where)
    if field.kind == "int_or_string":
        return _int_or_string(raw, where)
    if field.kind == "quantity":
        return _quantity(raw, where)
    if field.kind == "raw_json":
        return _raw_json(raw, where)
    raise ProtobufError(f"{where}: no decoder for a {field.kind}")


def _signed(value: int) -> int:
    """int32 and int64 travel as 64-bit two's complement varints."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _map_entry(raw: int | bytes, field: Field, where: str) -> tuple[str, str]:
    entry = dict(_last_values(_bytes_of(raw, where)))
    key = _text(_bytes_of(entry.get(1, b""), f"{where} key"))
    value = _bytes_of(entry.get(2, b""), f"{where}[{key}]")
    if field.kind == "bytes_map":
        return key, base64.b64encode(value).decode()
    if field.kind == "quantity_map":
        return key, _quantity(value, f"{where}[{key}]")
    return key, _text(value)


def _quantity(raw: bytes, where: str) -> str:
    """A resource.Quantity is a message of one string (Go writes its canonical form), kept
    verbatim as the JSON path keeps it; a message without it is the zero quantity, "0"."""
    return _text(_bytes_of(dict(_last_values(raw)).get(1, b"0"), where))


def _time(raw: bytes, *, micro: bool, where: str) -> str | None:
    """RFC 3339 in UTC as Go's Time and MicroTime write it; an empty message is the zero time."""
    if not raw:
        return None
    parts = dict(_last_values(raw))
    seconds, nanos = parts.get(1, 0), parts.get(2, 0)
    if not isinstance(seconds, int) or not isinstance(nanos, int):
        raise ProtobufError(f"{where}: a timestamp holds varints only")
    try:
        moment = _EPOCH + timedelta(seconds=_signed(seconds), microseconds=_signed(nanos) // 1000)
    except OverflowError as exc:
        raise ProtobufError(f"{where}: timestamp {seconds}s is out of range") from exc
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")


def _int_or_string(raw: bytes, where: str) -> int | str:
    parts = dict(_last_values(raw))
    kind, number, text = parts.get(1, 0), parts.get(2, 0), parts.get(3, b"")
    if kind == 0 and isinstance(number, int):
        return _signed(number)
    if kind == 1 and isinstance(text, bytes):
        return _text(text)
    raise ProtobufError(f"{where}: malformed IntOrString (type {kind!r})")


def _raw_json(raw: bytes, where: str) -> Any:
    """FieldsV1 and RawExtension carry their JSON document as bytes in field 1."""
    document = _bytes_of(dict(_last_values(raw)).get(1, b"null"), where)
    try:
        return orjson.loads(document)
    except orjson.JSONDecodeError as exc:
        raise ProtobufError(f"{where}: not JSON: {exc}") from exc
