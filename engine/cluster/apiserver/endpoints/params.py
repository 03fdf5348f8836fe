"""Query parameters of resource requests, parsed and checked as the real server does.

Booleans are read as kube-apiserver's query decoding reads them (the official Python
client sends `watch=True`, a browser or curl `?watch`), selectors are parsed against the
fields the type supports, and anything malformed is a 400 naming the parameter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from multidict import MultiMapping

from engine.cluster.apiserver.admission.admit import field_validation_mode
from engine.cluster.apiserver.admission.go_json import go_json_kind
from engine.cluster.apiserver.encoding.go_numbers import INT64, decimal, go_int64
from engine.cluster.apiserver.errors import Cause, bad_request, invalid
from engine.cluster.apiserver.registry.deletion import DeleteOptions
from engine.cluster.apiserver.registry.listing import ListQuery
from engine.cluster.apiserver.registry.resources import ResourceType
from engine.cluster.apiserver.registry.selectors import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    fields_for,
)
from engine.cluster.apiserver.validation.field_errors import forbidden, not_supported

Query = MultiMapping[str]


def flag(query: Query, name: str) -> bool:
    """A boolean parameter as apimachinery's Convert_Slice_string_To_bool reads its first
    value: absent, `0` or `false` in any case is false; anything else is true, the empty
    value too (`?watch` is a watch), so no boolean is ever refused."""
    value = query.get(name)
    return value is not None and value != "0" and value.casefold() != "false"


def integer(query: Query, name: str) -> int | None:
    """An int64 parameter as Go's strconv.ParseInt reads it (no spaces, no `_`, in range)."""
    value = query.get(name)
    if value in (None, ""):
        return None
    number = go_int64(value)
    if number is None:
        raise bad_request(f"{name}: invalid integer value {value!r}")
    return number


def dry_run(query: Query) -> bool:
    values = query.getall("dryRun", [])
    for value in values:
        if value != "All":
            raise bad_request(f'dryRun: Unsupported value: "{value}": supported values: "All"')
    return bool(values)


def field_validation(query: Query) -> str:
    return field_validation_mode(query.get("fieldValidation"))


_UINT64_MAX = 2**64 - 1
_MATCHES = ("Exact", "NotOlderThan")


def resource_version(query: Query) -> int | None:
    """The resourceVersion parameter as the storage parses it (a uint64); None when absent
    or "0" (any version); 400 with etcd3's words when it is not a number it can hold."""
    text = query.get("resourceVersion") or ""
    if text in ("", "0"):
        return None
    number = decimal(text) if text.isascii() and text.isdigit() else None
    if number is None:
        why = "invalid syntax"
    elif number > _UINT64_MAX:
        why = "value out of range"
    else:
        return number
    shown = orjson.dumps(text).decode()
    raise bad_request(f"invalid resource version: resourceVersion: Invalid value: {shown}: "
                      f"strconv.ParseUint: parsing {shown}: {why}")


def _list_options_causes(query: Query, *, watch: bool) -> list[Cause]:
    """ValidateListOptions: resourceVersionMatch and sendInitialEvents, for a list or a watch."""
    match = query.get("resourceVersionMatch") or ""
    version = query.get("resourceVersion") or ""
    initial = query.get("sendInitialEvents")
    causes: list[Cause] = []
    if not watch:
        if match:
            if not version:
                causes.append(forbidden("resourceVersionMatch", "resourceVersionMatch is "
                                        "forbidden unless resourceVersion is provided"))
            if query.get("continue"):
                causes.append(forbidden("resourceVersionMatch", "resourceVersionMatch is "
                                        "forbidden when continue is provided"))
            if match not in _MATCHES:
                causes.append(not_supported("resourceVersionMatch", match, [*_MATCHES, ""]))
            if match == "Exact" and version == "0":
                causes.append(forbidden("resourceVersionMatch", 'resourceVersionMatch "exact" '
                                        'is forbidden for resourceVersion "0"'))
        if initial is not None:
            causes.append(forbidden("sendInitialEvents", "sendInitialEvents is forbidden for "
                                    "list"))
        return causes
    if initial is not None and match != "NotOlderThan":
        causes.append(forbidden("resourceVersionMatch", "sendInitialEvents requires setting "
                                "resourceVersionMatch to NotOlderThan"))
    if match:
        if initial is None:
            causes.append(forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden "
                                    "for watch unless sendInitialEvents is provided"))
        if match != "NotOlderThan":
            causes.append(not_supported("resourceVersionMatch", match, ["NotOlderThan"]))
        if query.get("continue"):
            causes.append(forbidden("resourceVersionMatch", "resourceVersionMatch is "
                                    "forbidden when continue is provided"))
    return causes


def list_query(
    rt: ResourceType, namespace: str | None, query: Query, *, watch: bool = False
) -> ListQuery:
    """The list options of a list, a watch (`watch`) or a delete of a collection, checked as
    kube-apiserver checks them: 422 for a combination ValidateListOptions refuses, 400 for
    a value that does not parse."""
    causes = _list_options_causes(query, watch=watch)
    if causes:
        raise invalid("meta.k8s.io", "ListOptions", "", causes)
    resource_version(query)
    try:
        labels = LabelSelector.parse(query["labelSelector"]) if query.get("labelSelector") else None
        fields = (
            FieldSelector.parse(query["fieldSelector"], fields_for(rt.group, rt.plural))
            if query.get("fieldSelector")
            else None
        )
    except SelectorError as exc:
        raise bad_request(str(exc)) from exc
    return ListQuery(
        namespace=namespace,
        labels=labels,
        fields=fields,
        limit=integer(query, "limit"),
        continue_token=query.get("continue") or None,
        resource_version=query.get("resourceVersion") or None,
        resource_version_match=query.get("resourceVersionMatch") or None,
    )


_GO_TYPES = {int: "int64", bool: "bool", str: "string", dict: "v1.Preconditions",
             list: "[]string"}
"""The Go type each DeleteOptions field is decoded into, by the Python type it must have."""
_DELETE_FIELDS: Mapping[str, type] = {
    "apiVersion": str, "kind": str, "gracePeriodSeconds": int, "preconditions": dict,
    "orphanDependents": bool, "propagationPolicy": str, "dryRun": list,
    "ignoreStoreReadErrorWithClusterBreakingPotential": bool,
}
_PRECONDITION_FIELDS: Mapping[str, type] = {"uid": str, "resourceVersion": str}


def _checked_fields(value: Mapping[str, Any], fields: Mapping[str, type], struct: str) -> None:
    """400 for a field of the wrong JSON type, as decoding into the Go struct refuses it."""
    for name, wanted in fields.items():
        found = value.get(name)
        if found is None:
            continue
        if wanted is int:
            matches = (isinstance(found, int) and not isinstance(found, bool)
                       and found in INT64)
        else:
            matches = isinstance(found, wanted)
        if not matches:
            # Go names a number's literal when it is one that an integer cannot hold.
            number = wanted is int and isinstance(found, int | float) and not isinstance(
                found, bool)
            kind = f"number {found!r}" if number else go_json_kind(found)
            raise bad_request(f"json: cannot unmarshal {kind} into Go struct field "
                              f"{struct}.{name} of type {_GO_TYPES[wanted]}")


def delete_options(query: Query, body: Any) -> DeleteOptions:
    """DeleteOptions from the body and the query (the query wins, as in the real server);
    a body that is not a DeleteOptions object, or has a field of the wrong type, is 400."""
    if body is not None and not isinstance(body, dict):
        raise bad_request(f"json: cannot unmarshal {go_json_kind(body)} into Go value of type "
                          "v1.DeleteOptions")
    options: Mapping[str, Any] = body or {}
    _checked_fields(options, _DELETE_FIELDS, "DeleteOptions")
    for value in options.get("dryRun") or ():
        if value != "All":
            raise bad_request(f"dryRun: Unsupported value: {orjson.dumps(value).decode()}: "
                              'supported values: "All"')
    preconditions = options.get("preconditions") or {}
    _checked_fields(preconditions, _PRECONDITION_FIELDS, "DeleteOptions.preconditions")
    propagation = query.get("propagationPolicy") or options.get("propagationPolicy")
    orphan = query.get("orphanDependents")
    orphan_flag = flag(query, "orphanDependents") if orphan else options.get("orphanDependents")
    if propagation is None and orphan_flag is not None:
        propagation = "Orphan" if orphan_flag else "Background"
    grace = integer(query, "gracePeriodSeconds")
    if grace is None and options.get("gracePeriodSeconds") is not None:
        grace = options["gracePeriodSeconds"]
    dry = dry_run(query) or bool(options.get("dryRun"))
    return DeleteOptions(
        propagation=propagation,
        grace_period=grace,
        uid=preconditions.get("uid"),
        resource_version=preconditions.get("resourceVersion"),
        dry_run=dry,
    )
