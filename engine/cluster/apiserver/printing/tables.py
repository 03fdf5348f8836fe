"""Server-side printing: objects as `meta.k8s.io` Tables, the way kubectl asks for them.

`kubectl get` does not format objects itself: it asks the server for a Table
(`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`) and prints its
columns. Built-in kinds get the columns of the real server's printers
(`printers.py`), custom resources their CRD's additionalPrinterColumns (or
NAME/AGE), anything else NAME/CREATED AT, as kube-apiserver does.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable, Sequence
from typing import Any

from engine.cluster.apiserver.printing import jsonpath
from engine.cluster.apiserver.printing.printers import builtin_printer
from engine.cluster.apiserver.printing.printing import (
    CREATION_TIMESTAMP_DESCRIPTION,
    NAME_DESCRIPTION,
    Column,
    Printer,
    age,
    human_duration,
    parse_time,
)
from engine.cluster.apiserver.registry.resources import ResourceType

__all__ = ["human_duration", "table_api_version", "to_table", "wants_table"]

_TABLE_GROUP = "meta.k8s.io"
_TABLE_VERSIONS = ("v1", "v1beta1")
INCLUDE_OBJECT_VALUES = ("None", "Metadata", "Object")


def wants_table(accept: str) -> bool:
    """Whether an Accept header asks for a Table (v1 or v1beta1) in JSON."""
    return table_api_version(accept) is not None


def table_api_version(accept: str) -> str | None:
    """The Table apiVersion the Accept header asks for first, or None if it asks for none."""
    for media_range in accept.split(","):
        media_type, *raw_params = (part.strip() for part in media_range.split(";"))
        params = dict(_param(raw) for raw in raw_params if "=" in raw)
        if (
            media_type in ("application/json", "*/*")
            and params.get("as") == "Table"
            and params.get("g") == _TABLE_GROUP
            and params.get("v") in _TABLE_VERSIONS
        ):
            return f"{_TABLE_GROUP}/{params['v']}"
    return None


def to_table(
    rt: ResourceType,
    objects: Sequence[dict[str, Any]],
    *,
    include_object: str = "Metadata",
    list_metadata: dict[str, Any],
    now: datetime.datetime | None = None,
    api_version: str = f"{_TABLE_GROUP}/v1",
) -> dict[str, Any]:
    """A Table of `objects` with the columns kubectl shows for `rt`.

    `include_object` is the request's includeObject (None, Metadata or
    Object); `list_metadata` becomes the Table's metadata (resourceVersion,
    continue). `now` is the clock AGE cells are measured against.
    """
    if include_object not in INCLUDE_OBJECT_VALUES:
        raise ValueError(f"includeObject must be one of {', '.join(INCLUDE_OBJECT_VALUES)}")
    moment = now or datetime.datetime.now(datetime.UTC)
    printer = _printer_for(rt)
    rows = []
    for obj in objects:
        row: dict[str, Any] = {
            "cells": printer.cells(obj, moment),
            "object": _row_object(obj, include_object, api_version),
        }
        conditions = printer.conditions(obj)
        if conditions:
            row["conditions"] = conditions
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": api_version,
        "metadata": dict(list_metadata),
        "columnDefinitions": [column.definition() for column in printer.columns],
        "rows": rows,
    }


def _param(raw: str) -> tuple[str, str]:
    key, _, value = raw.partition("=")
    return key.strip(), value.strip().strip('"')


def _row_object(obj: dict[str, Any], include_object: str, api_version: str) -> Any:
    if include_object == "None":
        return None
    if include_object == "Object":
        return obj
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": api_version,
        "metadata": obj.get("metadata", {}),
    }


def _printer_for(rt: ResourceType) -> Printer:
    if rt.schema is not None or not rt.strategic_merge:
        return _custom_resource_printer(rt.printer_columns)
    return builtin_printer(rt.group, rt.plural) or _default_printer()


def _default_printer() -> Printer:
    """kube-apiserver's fallback for kinds without a printer: NAME and CREATED AT (RFC 3339)."""
    columns = (
        Column("Name", "string", NAME_DESCRIPTION, format="name"),
        Column("Created At", "date", CREATION_TIMESTAMP_DESCRIPTION),
    )

    def cells(obj: dict[str, Any], now: datetime.datetime) -> list[Any]:
        metadata = obj.get("metadata", {})
        created = parse_time(metadata.get("creationTimestamp"))
        stamp = created.strftime("%Y-%m-%dT%H:%M:%SZ") if created else "0001-01-01T00:00:00Z"
        return [metadata.get("name", ""), stamp]

    return Printer(columns, cells)


_AGE_COLUMN: dict[str, Any] = {
    "name": "Age",
    "type": "date",
    "description": CREATION_TIMESTAMP_DESCRIPTION,
    "jsonPath": ".metadata.creationTimestamp",
}


def _custom_resource_printer(printer_columns: Iterable[dict[str, Any]]) -> Printer:
    """A CRD's additionalPrinterColumns after NAME, or NAME/AGE when it declares none."""
    declared = list(printer_columns) or [_AGE_COLUMN]
    paths = [jsonpath.parse(column["jsonPath"]) for column in declared]
    columns = (
        Column("Name", "string", NAME_DESCRIPTION, format="name"),
        *(
            Column(
                column["name"],
                column.get("type", "string"),
                column.get("description")
                or f"Custom resource definition column (in JSONPath format): {column['jsonPath']}",
                format=column.get("format", ""),
                priority=int(column.get("priority", 0)),
            )
            for column in declared
        ),
    )

    def cells(obj: dict[str, Any], now: datetime.datetime) -> list[Any]:
        row: list[Any] = [obj.get("metadata", {}).get("name", "")]
        for column, path in zip(columns[1:], paths, strict=True):
            found = path.find(obj)
            row.append(_typed_cell(column.type, found[0], now) if found else None)
        return row

    return Printer(columns, cells)


def _typed_cell(column_type: str, value: Any, now: datetime.datetime) -> Any:
    """Coerce a JSONPath result to the column's type; None where it does not fit."""
    if value is None:
        return None
    if column_type == "string":
        return _as_text(value)
    if column_type == "integer" and isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if column_type == "number" and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if column_type == "boolean" and isinstance(value, bool):
        return value
    if column_type == "date" and isinstance(value, str):
        moment = parse_time(value)
        return age(moment, now) if moment else "<invalid>"
    return None


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)
