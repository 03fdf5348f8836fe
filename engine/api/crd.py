"""CRDs: the StateMachine's from its model, each job kind's from its short description.

What every replicated job has (replica specs, run policy, failure rules,
status) is written once, by the shared models, into every job kind's CRD; a
kind's description adds its names, replica types, own fields and rules.
`crds/` is the output (see `manifests.py`), so the API server, `kubectl
explain` and the engine agree about every field.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import BaseModel, Field

from engine.api.base import SpecModel
from engine.api.kind_description import JobKind, ReplicaSpecs
from engine.api.kinds import JOB_COLUMNS, STATE_MACHINE_KIND, Kind, PrinterColumn, Scale
from engine.api.objects import API_VERSION_DOC, JOB_NAME_RULE, KIND_DOC
from engine.api.policies import FAILURE_RULES_DOC, KindFailureRule
from engine.api.replicas import ReplicaSpec
from engine.api.replicated import LIST_KEY, LIST_NAME_PATTERN
from engine.api.runpolicy import RunPolicy
from engine.api.status import JobStatus
from engine.api.structural import Schema, Shorthand, key_rule, structural_schema

_ROOT_FIELDS = ("apiVersion", "kind", "metadata")
_ANY_TYPE_NAME = r"^[A-Za-z][A-Za-z0-9]{0,30}$"


def crd_from_schema(
    schema: Schema,
    *,
    group: str,
    version: str,
    kind: str,
    plural: str,
    singular: str,
    short_names: Iterable[str] = (),
    categories: Iterable[str] = (),
    scope: str = "Namespaced",
    printer_columns: Iterable[PrinterColumn] = (),
    scale: Scale | None = None,
) -> dict[str, Any]:
    """One CRD (apiextensions.k8s.io/v1) serving `schema` as `group/version` `kind`."""
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
    if categories:
        names["categories"] = list(categories)
    version_entry: dict[str, Any] = {
        "name": version,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": schema},
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
    """The CRD of a kind served from a Python model.

    `kind.validations` are CEL rules on the whole object (they may read
    metadata.name); rules on fields come from the model itself.
    """
    return crd_from_schema(
        _root_schema(kind.model, kind.validations, kind.shorthands, kind.spec_schema),
        group=kind.group,
        version=kind.version,
        kind=kind.kind,
        plural=kind.plural,
        singular=kind.singular,
        short_names=kind.short_names,
        scope=kind.scope,
        printer_columns=kind.printer_columns,
        scale=kind.scale,
    )


def state_machine_crd() -> dict[str, Any]:
    """The CRD of StateMachine objects (machine definitions)."""
    return crd_of(STATE_MACHINE_KIND)


class _Common(SpecModel):
    """The spec fields every job kind has besides its replica specs."""

    run_policy: RunPolicy = Field(
        default_factory=RunPolicy,
        description="Clean-up, time limits, retries, scheduling and suspension.",
    )
    failure_rules: list[KindFailureRule] = Field(default_factory=list,
                                                 description=FAILURE_RULES_DOC)


class _Status(SpecModel):
    status: JobStatus = Field(
        default_factory=JobStatus,
        description="What the engine observed and decided; written by the engine only.",
    )


def crd_for_kind(described: JobKind) -> dict[str, Any]:
    """The CRD (apiextensions.k8s.io/v1) of a described job kind."""
    spec = described.spec
    kind = spec.names.kind
    columns = spec.printer_columns
    return crd_from_schema(
        _job_schema(described),
        group=spec.group, version=spec.version, kind=kind, plural=described.plural,
        singular=described.singular, short_names=spec.names.short_names,
        categories=spec.names.categories,
        printer_columns=JOB_COLUMNS if columns is None else tuple(
            PrinterColumn(c.name, c.type, c.json_path, c.description, c.priority)
            for c in columns
        ),
        scale=_scale(described),
    )


def _job_schema(described: JobKind) -> Schema:
    spec = described.spec
    kind = spec.names.kind
    common = structural_schema(_Common)["properties"]
    properties: Schema = {
        spec.replica_specs.field: _replica_specs(described),
        "runPolicy": common["runPolicy"],
        "failureRules": common["failureRules"],
        **{name: dict(schema) for name, schema in spec.fields.items()},
    }
    spec_schema: Schema = {
        "type": "object",
        "description": f"The desired state of the {kind}.",
        "properties": dict(sorted(properties.items())),
        "required": [spec.replica_specs.field, *spec.required],
        "x-kubernetes-validations": [
            _known_types_rule(spec.replica_specs.field, listed=spec.replica_specs.listed),
            *(rule.model_dump(by_alias=True, exclude_none=True) for rule in spec.rules),
        ],
    }
    return {
        "type": "object",
        "description": spec.description or f"A {kind} job.",
        "properties": {
            "apiVersion": {"type": "string", "description": API_VERSION_DOC},
            "kind": {"type": "string", "description": KIND_DOC},
            "metadata": {"type": "object"},
            "spec": spec_schema,
            "status": structural_schema(_Status)["properties"]["status"],
        },
        "required": ["spec"],
        "x-kubernetes-validations": [dict(JOB_NAME_RULE)],
    }


def _replica_specs(described: JobKind) -> Schema:
    """The replica type -> replica spec map: the shared replica spec plus the kind's fields."""
    replicas = described.spec.replica_specs
    replica = structural_schema(ReplicaSpec)
    replica["properties"] = dict(sorted({**replica["properties"], **replicas.fields}.items()))
    if replicas.pools:
        replica = _as_pool(replica)
    types = replicas.types
    main = described.spec.main_container
    needs_main = f" Each template needs a container named {main}." if main else ""
    if replicas.listed:
        return _replica_list(replicas, replica, needs_main)
    keys: Schema = {"enum": types} if types else {"pattern": _ANY_TYPE_NAME}
    described_types = f"Replica type ({', '.join(types)})" if types else "Replica type"
    default = f"{described_types} -> its pods.{needs_main}"
    return {
        "type": "object",
        "description": replicas.description or default,
        "minProperties": 1,
        "additionalProperties": replica,
        "x-kubernetes-validations": [key_rule(keys, replicas.field)],
    }


def _replica_list(replicas: ReplicaSpecs, replica: Schema, needs_main: str) -> Schema:
    """A list of replica specs, each named by `name` (a list-map keyed by it, so server-side
    apply merges entries by name), in the order the job's types start in."""
    name: Schema = {"type": "string", "pattern": LIST_NAME_PATTERN, "maxLength": 31,
                    "description": "The replica type's name: a DNS label, unique in the list."}
    if replicas.types:
        name["enum"] = list(replicas.types)
    return {
        "type": "array",
        "description": replicas.description or (
            f"The replica types, each a replica spec named by `name`, in order.{needs_main}"),
        "minItems": 1,
        "items": {**replica, "properties": {LIST_KEY: name, **replica["properties"]},
                  "required": [LIST_KEY, *replica.get("required", [])]},
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": [LIST_KEY],
    }


POOL_PROPERTIES: Schema = {
    "completions": {
        "type": "integer", "minimum": 0,
        "description": "A pool: how many of its pods must succeed (members 0..completions-1, "
        "each done once one of its pods succeeded). Unset with parallelism set: a work queue "
        "of parallelism members, done once one succeeded and none runs.",
    },
    "parallelism": {
        "type": "integer", "minimum": 0,
        "description": "A pool: at most this many members have a pod at once, lowest index "
        "first (default 1, as the Job API). May change while the job runs; 0 pauses the pool.",
    },
    "completionMode": {
        "type": "string", "enum": ["NonIndexed", "Indexed"],
        "description": "A pool: NonIndexed (default) or Indexed (each member's pods get "
        "JOB_COMPLETION_INDEX; needs completions).",
    },
}
POOL_RULES = [
    {"rule": "!has(self.replicas) || !(has(self.completions) || has(self.parallelism))",
     "message": "replicas cannot be set with completions or parallelism: a pool's size is its "
                "completions"},
    {"rule": "!has(self.completionMode) || self.completionMode != 'Indexed' "
             "|| has(self.completions)",
     "message": "completions is required when completionMode is Indexed"},
]


def _as_pool(replica: Schema) -> Schema:
    """A replica spec that may be a pool: the pool fields and their rules, and no default
    for `replicas` (a default would clash with completions; the engine reads unset as 1)."""
    properties = {**replica["properties"], **POOL_PROPERTIES}
    properties["replicas"] = {k: v for k, v in properties["replicas"].items() if k != "default"}
    return {
        **replica,
        "properties": dict(sorted(properties.items())),
        "x-kubernetes-validations": [*replica.get("x-kubernetes-validations", []), *POOL_RULES],
    }


def _known_types_rule(field: str, *, listed: bool = False) -> dict[str, str]:
    """failureRules[*].replicaTypes name replica types the job has."""
    known = f"self.{field}.exists(s, s.{LIST_KEY} == t)" if listed else f"t in self.{field}"
    return {
        "rule": f"!has(self.failureRules) || self.failureRules.all(r, !has(r.replicaTypes) || "
        f"r.replicaTypes.all(t, {known}))",
        "message": f"failureRules[*].replicaTypes must name replica types of spec.{field}",
        "fieldPath": ".failureRules",
    }


def _scale(described: JobKind) -> Scale | None:
    scale = described.spec.scale
    if scale is None:
        return None
    field, replica_type = described.spec.replica_specs.field, scale.replica_type
    return Scale(
        spec_replicas_path=f".spec.{field}.{replica_type}.replicas",
        status_replicas_path=f".status.replicaStatuses.{replica_type}.active",
        label_selector_path=f".status.replicaStatuses.{replica_type}.selector",
    )


def _root_schema(
    model: type[BaseModel],
    validations: Iterable[Mapping[str, str]],
    shorthands: Mapping[str, Shorthand] | None,
    spec_schema: Callable[[Schema], Schema] | None,
) -> Schema:
    """The object's schema with type and object metadata as every CRD must declare them."""
    schema = structural_schema(model, shorthands=shorthands)
    properties = schema["properties"]
    if spec_schema is not None:
        properties["spec"] = spec_schema(properties["spec"])
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


def _column(column: PrinterColumn) -> dict[str, Any]:
    found: dict[str, Any] = {
        "name": column.name,
        "type": column.type,
        "jsonPath": column.json_path,
        "description": column.description,
    }
    if column.priority:
        found["priority"] = column.priority
    return found
