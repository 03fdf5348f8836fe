"""A job kind described in a few lines: names, replica types, main container, columns, rules.

`jobmachine crd FILE` turns a description into the kind's CustomResourceDefinition
(crd.py), so a platform team adds a kind without Python: a description, the CRD
it gives, and a StateMachine. What every replicated job has (replica specs, run
policy, failure rules, status) comes from the shared models, so each kind's CRD
says it the same way; a description adds only what is the kind's own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, model_validator

from engine.api.base import SpecModel
from engine.definition.errors import DefinitionError, Diagnostic, error
from engine.definition.loader import read_file, read_text
from engine.definition.schema_errors import schema_diagnostics, yaml_kind

API_VERSION = "jobmachine.dev/v1alpha1"
KIND = "JobKind"

KindName = Annotated[str, Field(pattern=r"^[A-Z][A-Za-z0-9]{0,62}$")]
LowerName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9]{0,62}$")]
FieldName = Annotated[str, Field(pattern=r"^[a-z][A-Za-z0-9]{0,62}$")]
TypeName = Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9]{0,30}$")]
Schema = dict[str, Any]


class Names(SpecModel):
    """How the kind is named in the API and by kubectl."""

    kind: KindName = Field(description="The kind, CamelCase (e.g. XGBoostJob).")
    plural: LowerName | None = Field(
        default=None, description="The resource name in URLs; default: the kind in lower case + s."
    )
    singular: LowerName | None = Field(
        default=None, description="The singular name; default: the kind in lower case."
    )
    short_names: list[LowerName] = Field(
        default_factory=list, description="Short names for kubectl (e.g. xgb)."
    )
    categories: list[LowerName] = Field(
        default_factory=list, description="Categories kubectl can get at once (e.g. all)."
    )


class ReplicaSpecs(SpecModel):
    """Where the kind keeps its replica specs, and which replica types it has."""

    field: FieldName = Field(description="The spec field holding replica type -> replica spec.")
    listed: bool = Field(
        default=False,
        alias="list",
        description="The field is a list of replica specs, each named by its `name` (a DNS "
        "label, unique in the list), in the order they start in (as JobSet's replicatedJobs "
        "and Volcano's tasks), instead of a map. The kind's machine must say "
        "`governs.replicaList: true` too.",
    )
    types: list[TypeName] | None = Field(
        default=None, min_length=1,
        description="The replica types a job of the kind may have; unset: any name.",
    )
    description: str | None = Field(default=None, description="What the map holds, for explain.")
    fields: dict[FieldName, Schema] = Field(
        default_factory=dict,
        description="Fields a replica spec has besides replicas, template and restartPolicy, "
        "each an OpenAPI v3 structural schema (e.g. MachineJob's dependsOn).",
    )
    pools: bool = Field(
        default=False,
        description="Whether a replica spec may be a pool: completions run at most "
        "parallelism at a time (completionMode NonIndexed or Indexed), instead of replicas "
        "all at once. The kind's machine must say `governs.pools: true` too.",
    )


class Rule(SpecModel):
    """A CEL rule on the spec (`self` is the spec), as x-kubernetes-validations writes one."""

    rule: str = Field(min_length=1, description="CEL that is true for a valid spec.")
    message: str = Field(min_length=1, description="What `kubectl apply` says when it is false.")
    field_path: str | None = Field(
        default=None, description="The field the message is about, e.g. .xgbReplicaSpecs.Master."
    )
    message_expression: str | None = Field(default=None, description="CEL giving the message.")


class Column(SpecModel):
    """A column of `kubectl get`."""

    name: str = Field(min_length=1, description="The column's title.")
    type: Literal["string", "integer", "number", "boolean", "date"] = Field(
        description="How kubectl formats the value."
    )
    json_path: str = Field(min_length=1, description="JSONPath of the value, e.g. .status.phase.")
    description: str = Field(default="", description="What the column shows.")
    priority: int = Field(default=0, ge=0, description="0: always shown; more: with -o wide.")


class Scale(SpecModel):
    """The /scale subresource, for one replica type (kubectl scale, autoscalers)."""

    replica_type: TypeName = Field(description="The replica type whose count /scale sets.")


class KindSpec(SpecModel):
    """What a job kind is: its names, its replica specs, and what is its own."""

    group: str = Field(pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", description="API group.")
    version: str = Field(pattern=r"^v[0-9]+((alpha|beta)[0-9]+)?$", description="API version.")
    names: Names = Field(description="How the kind is named.")
    description: str | None = Field(default=None, description="What a job of the kind is.")
    replica_specs: ReplicaSpecs = Field(description="Where its replica specs are.")
    main_container: str | None = Field(
        default=None,
        description="The container every template must have (the framework's): said in the "
        "CRD's descriptions; the engine checks it from the machine's pod.container.",
    )
    fields: dict[FieldName, Schema] = Field(
        default_factory=dict,
        description="Spec fields besides the replica specs, runPolicy and failureRules, each an "
        "OpenAPI v3 structural schema.",
    )
    required: list[FieldName] = Field(
        default_factory=list, description="Which of `fields` a job must set."
    )
    rules: list[Rule] = Field(default_factory=list, description="CEL rules on the spec.")
    printer_columns: list[Column] | None = Field(
        default=None, description="Columns of `kubectl get`; unset: State, Restarts and Age."
    )
    scale: Scale | None = Field(default=None, description="The /scale subresource, if any.")

    @model_validator(mode="after")
    def _scale_names_a_map_entry(self) -> KindSpec:
        if self.scale is not None and self.replica_specs.listed:
            raise ValueError("scale needs a map of replica specs: /scale's replicas path cannot "
                             "name an entry of a list (replicaSpecs.list)")
        return self


class JobKind(SpecModel):
    """A job kind's description (a file, not an API object): `jobmachine crd` reads it."""

    api_version: Literal["jobmachine.dev/v1alpha1"] = Field(description="jobmachine.dev/v1alpha1")
    kind: Literal["JobKind"] = Field(description="JobKind")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Its name, for messages.")
    spec: KindSpec = Field(description="The kind.")

    @property
    def plural(self) -> str:
        return self.spec.names.plural or f"{self.spec.names.kind.lower()}s"

    @property
    def singular(self) -> str:
        return self.spec.names.singular or self.spec.names.kind.lower()

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{self.spec.group}"


def load_kind_file(path: str | Path) -> list[JobKind]:
    """Every description in a file; raises `DefinitionError` (FILE:LINE:COL) on any problem."""
    raws, diagnostics = read_file(path)
    return _kinds(raws, diagnostics)


def load_kind_text(text: str, filename: str = "<text>") -> list[JobKind]:
    """Like `load_kind_file` for text in memory."""
    raws, diagnostics = read_text(text, filename)
    return _kinds(raws, diagnostics)


def _kinds(raws: list[Any], diagnostics: list[Diagnostic]) -> list[JobKind]:
    kinds: list[JobKind] = []
    for raw in raws:
        data = raw.data
        if not isinstance(data, dict) or data.get("kind") != KIND:
            found = data.get("kind") if isinstance(data, dict) else yaml_kind(data)
            diagnostics.append(error(raw.positions.value(("kind",)),
                                     f"a kind description is a {KIND} document, not {found!r}"))
            continue
        try:
            kinds.append(JobKind.model_validate(data))
        except ValidationError as exc:
            diagnostics += schema_diagnostics(exc, data, raw.positions, root=JobKind)
    if any(d.is_error for d in diagnostics):
        raise DefinitionError(diagnostics)
    return kinds
