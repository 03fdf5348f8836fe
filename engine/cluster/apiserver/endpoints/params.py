"""Query parameters of resource requests, parsed and checked as the real server does.

Booleans follow Go's strconv.ParseBool (the official Python client sends
`watch=True`), selectors are parsed against the fields the type supports, and
anything malformed is a 400 naming the parameter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from multidict import MultiMapping

from engine.cluster.apiserver.admission.admit import field_validation_mode
from engine.cluster.apiserver.errors import bad_request
from engine.cluster.apiserver.registry.deletion import DeleteOptions
from engine.cluster.apiserver.registry.listing import ListQuery
from engine.cluster.apiserver.registry.resources import ResourceType
from engine.cluster.apiserver.registry.selectors import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    fields_for,
)

Query = MultiMapping[str]
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def flag(query: Query, name: str) -> bool:
    value = query.get(name)
    if value is None or value in _FALSE or value == "":
        return False
    if value in _TRUE:
        return True
    raise bad_request(f"{name}: invalid boolean value {value!r}")


def integer(query: Query, name: str) -> int | None:
    value = query.get(name)
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError as exc:
        raise bad_request(f"{name}: invalid integer value {value!r}") from exc


def dry_run(query: Query) -> bool:
    values = query.getall("dryRun", [])
    for value in values:
        if value != "All":
            raise bad_request(f'dryRun: Unsupported value: "{value}": supported values: "All"')
    return bool(values)


def field_validation(query: Query) -> str:
    return field_validation_mode(query.get("fieldValidation"))


def list_query(rt: ResourceType, namespace: str | None, query: Query) -> ListQuery:
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


def delete_options(query: Query, body: Any) -> DeleteOptions:
    """DeleteOptions from the body and the query (the query wins, as in the real server)."""
    options: Mapping[str, Any] = body if isinstance(body, dict) else {}
    preconditions = options.get("preconditions") or {}
    propagation = query.get("propagationPolicy") or options.get("propagationPolicy")
    orphan = query.get("orphanDependents")
    orphan_flag = flag(query, "orphanDependents") if orphan else options.get("orphanDependents")
    if propagation is None and orphan_flag is not None:
        propagation = "Orphan" if orphan_flag else "Background"
    grace = integer(query, "gracePeriodSeconds")
    if grace is None and options.get("gracePeriodSeconds") is not None:
        grace = int(options["gracePeriodSeconds"])
    dry = dry_run(query) or bool(options.get("dryRun"))
    return DeleteOptions(
        propagation=propagation,
        grace_period=grace,
        uid=preconditions.get("uid"),
        resource_version=preconditions.get("resourceVersion"),
        dry_run=dry,
    )
