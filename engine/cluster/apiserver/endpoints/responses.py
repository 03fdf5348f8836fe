"""Encoding answers: objects, lists and Tables as JSON, warnings, and request bodies in.

Stored objects carry their JSON encoding, so a GET or a LIST joins bytes
instead of re-encoding, and a custom resource read at a version other than
its storage version only gets its apiVersion rewritten (no conversion
webhooks: the `None` strategy). Protobuf is never produced: clients that ask
for it also accept JSON and read the Content-Type of the answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import orjson
import yaml
from aiohttp import web

from engine.cluster.apiserver.encoding.go_text import go_quote
from engine.cluster.apiserver.encoding.json_documents import check_depth
from engine.cluster.apiserver.encoding.protobuf import (
    PROTOBUF_CONTENT_TYPE,
    ProtobufError,
    UnsupportedKindError,
    decode_request,
)
from engine.cluster.apiserver.encoding.yaml_documents import YamlLimitError, load_yaml
from engine.cluster.apiserver.errors import ApiError, bad_request, unsupported_media_type
from engine.cluster.apiserver.printing.tables import table_api_version, to_table
from engine.cluster.apiserver.registry.resources import ResourceType
from engine.cluster.apiserver.storage.objects import Entry, Obj

JSON = "application/json"
YAML = "application/yaml"


def as_version(rt: ResourceType, entry: Entry) -> Obj:
    obj = entry.obj
    if obj.get("apiVersion") == rt.api_version:
        return obj
    return {**obj, "apiVersion": rt.api_version}


def object_bytes(rt: ResourceType, entry: Entry) -> bytes:
    if entry.obj.get("apiVersion") == rt.api_version:
        return entry.raw()
    return orjson.dumps(as_version(rt, entry))


def list_bytes(rt: ResourceType, entries: Sequence[Entry], metadata: dict[str, Any]) -> bytes:
    head = orjson.dumps(
        {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": metadata}
    )[:-1]
    return head + b',"items":[' + b",".join(object_bytes(rt, e) for e in entries) + b"]}"


def table_bytes(
    rt: ResourceType,
    entries: Sequence[Entry],
    metadata: dict[str, Any],
    request: web.Request,
) -> bytes:
    accept = request.headers.get("Accept", "")
    include = request.query.get("includeObject") or "Metadata"
    try:
        table = to_table(
            rt,
            [as_version(rt, e) for e in entries],
            include_object=include,
            list_metadata=metadata,
            api_version=table_api_version(accept) or "meta.k8s.io/v1",
        )
    except ValueError as exc:
        raise bad_request(str(exc)) from exc
    return orjson.dumps(table)


def json_response(
    body: bytes, *, status: int = 200, warnings: Iterable[str] = ()
) -> web.Response:
    """A JSON answer ended by a newline, as kube-apiserver's encoder (Go's json.Encoder)
    ends every object, list, Table and Status it writes."""
    response = web.Response(body=body + b"\n", status=status, content_type=JSON)
    for warning in warnings:
        response.headers.add("Warning", warning_header(warning))
    return response


def warning_header(text: str) -> str:
    return f"299 - {go_quote(text)}"


def error_response(error: ApiError) -> web.Response:
    """The error as a Status, ended by a newline as Go's json.Encoder ends what it writes."""
    return web.Response(
        body=orjson.dumps(error.to_status()) + b"\n", status=error.code, content_type=JSON
    )


def success_status(code: int, details: dict[str, Any] | None = None) -> bytes:
    status: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": code,
    }
    if details:
        status["details"] = details
    return orjson.dumps(status)


async def read_body(request: web.Request) -> Any:
    """The request body as JSON, YAML or (for the kinds kubectl sends so) protobuf; any
    other media type is 415 and a body nested too deep is 400, as kube-apiserver answers."""
    content_type = request.headers.get("Content-Type", JSON).split(";", 1)[0].strip().lower()
    raw = await request.read()
    if content_type == PROTOBUF_CONTENT_TYPE:
        try:
            document = decode_request(raw)
        except UnsupportedKindError as exc:
            raise unsupported_media_type(str(exc)) from exc
        except ProtobufError as exc:
            raise bad_request(f"the protobuf request body could not be decoded: {exc}") from exc
    elif content_type not in (JSON, YAML):
        raise unsupported_media_type(
            "the body of the request was in an unknown format - accepted media types "
            f"include: {JSON}, {YAML}, {PROTOBUF_CONTENT_TYPE}")
    elif not raw:
        return None
    else:
        try:
            document = load_yaml(raw) if content_type == YAML else orjson.loads(raw)
        except YamlLimitError as exc:
            raise bad_request("the request body could not be decoded: error converting YAML "
                              f"to JSON: {exc}") from exc
        except (orjson.JSONDecodeError, yaml.YAMLError, RecursionError) as exc:
            raise bad_request(f"the request body could not be decoded: {exc}") from exc
    check_depth(document, "the request body")
    return document
