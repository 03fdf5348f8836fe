"""CustomResourceDefinitions generated from the kinds' pydantic models.

The models are the single source of truth: `crds/` is their output (see
`manifests.py`), so a field, a description or a rule is changed in one place and
the API server, `kubectl explain` and the engine agree about it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from engine.api.kinds import KINDS, Kind, PrinterColumn, Scale
from engine.api.structural import Schema, Shorthand, structural_schema

_ROOT_FIELDS = ("apiVersion", "kind", "metadata")


def crd_for(
    model: type[BaseModel],
    *,
    group: str,
    version: str,
    kind: str,
    plural: str,
    singular: str,
    short_names: Iterable[str] = (),
    scope: str = "Namespaced",
    printer_columns: Iterable[PrinterColumn] = (),
    validations: Iterable[Mapping[str, str]] = (),
    scale: Scale | None = None,
    shorthands: Mapping[str, Shorthand] | None = None,
) -> dict[str, Any]:
    """One CRD (apiextensions.k8s.io/v1) serving `model` as `group/version` `kind`.

    `validations` are CEL rules on the whole object (they may read
    metadata.name); rules on fields come from the models themselves.
    """
    subresources: dict[str, Any] = {"status": {}}
    if scale is not None:
        subresources["scale"] = {
            "specReplicasPath": scale.spec_replicas_path,
            "statusReplicasPath": scale.status_replicas_path,
            "labelSelectorPath": scale.label_selector_path,
        }
    names: dict[str, Any] = {
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": plural,
        "singular": singular,
    }
    if short_names:
        names["shortNames"] = list(short_names)
    version_entry: dict[str, Any] = {
        "name": version,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": _root_schema(model, validations, shorthands)},
        "subresources": subresources,
    }
    columns = [_column(c) for c in printer_columns]
    if columns:
        version_entry["additionalPrinterColumns"] = columns
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "names": names, "scope": scope, "versions": [version_entry]},
    }


def crd_of(kind: Kind) -> dict[str, Any]:
    """The CRD of one of `KINDS`."""
    return crd_for(
        kind.model,
        group=kind.group,
        version=kind.version,
        kind=kind.kind,
        plural=kind.plural,
        singular=kind.singular,
        short_names=kind.short_names,
        scope=kind.scope,
        printer_columns=kind.printer_columns,
        validations=kind.validations,
        scale=kind.scale,
        shorthands=kind.shorthands,
    )


def all_crds() -> list[dict[str, Any]]:
    """The CRDs of every kind jobmachine serves."""
    return [crd_of(kind) for kind in KINDS]


def _root_schema(
    model: type[BaseModel],
    validations: Iterable[Mapping[str, str]],
    shorthands: Mapping[str, Shorthand] | None,
) -> Schema:
    """The object's schema with type and object metadata as every CRD must declare them."""
    schema = structural_schema(model, shorthands=shorthands)
    properties = schema["properties"]
    for name in ("apiVersion", "kind"):
        properties[name] = {"type": "string", "description": properties[name]["description"]}
    properties["metadata"] = {"type": "object"}
    required = [r for r in schema.get("required", []) if r not in _ROOT_FIELDS]
    schema.pop("required", None)
    if required:
        schema["required"] = required
    rules = [*schema.get("x-kubernetes-validations", []), *(dict(v) for v in validations)]
    if rules:
        schema["x-kubernetes-validations"] = rules
    return schema


def _column(column: PrinterColumn) -> dict[str, str]:
    return {
        "name": column.name,
        "type": column.type,
        "jsonPath": column.json_path,
        "description": column.description,
    }
