"""`jobmachine.dev/v1alpha1` StateMachine: a machine definition stored as a cluster object.

The spec is `engine.definition.schema.DefinitionSpec`, so a file in machines/ can
be applied as it is. The kind is cluster-scoped, as IngressClass and
PriorityClass are: one definition governs a job kind in every namespace (the
engine compiles it once and shares it), and a namespaced copy would let one
namespace's tenants change how another namespace's jobs run, or make the same
MachineJob behave differently depending on where it was created.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from engine.api.base import SpecModel, StatusModel
from engine.api.objects import API_VERSION_DOC, KIND_DOC, METADATA_DOC
from engine.api.status import JobCondition
from engine.api.structural import Schema, Shorthand, accept_anything, accept_null
from engine.definition.schema import DefinitionSpec

SHORTHANDS: dict[str, Shorthand] = {
    "ActionSpec._from_yaml": accept_anything,  # `createPod` or `cleanupPods: {policy: All}`
    "ConditionSpec._from_yaml": accept_anything,  # `condition: Running` or a mapping
    "StateSpec._empty": accept_null,  # `Succeeded:` with nothing after it
    "TransitionSpec._one_or_many": accept_anything,  # `from: Pending` or a list
    "ServiceSpec._one_or_many": accept_anything,  # `replicaTypes: Master` or a list
}
"""How the definition language's shorter YAML forms appear in the CRD schema."""


def as_written(node: Schema) -> Schema:
    """The spec's schema with no field required and no default anywhere below it.

    A machine that extends another (`spec.extends`) writes only what differs: a
    transition by its name alone, no `initial`, no `replica`. What is required is
    known only once the base is merged in, so the engine checks it then and says
    so on the object's status; the API server checks types and unknown fields.
    For the same reason the API server fills in no defaults: a default written into
    a derived machine (say `pod.restartPolicy: Never`) would override the base's
    value in the merge. The engine applies the defaults after merging.
    """
    relaxed = {k: v for k, v in node.items() if k not in ("required", "default")}
    for key in ("properties", "additionalProperties", "items"):
        value = relaxed.get(key)
        if key == "properties" and isinstance(value, dict):
            relaxed[key] = {name: as_written(child) for name, child in value.items()}
        elif isinstance(value, dict):
            relaxed[key] = as_written(value)
    return relaxed


class StateMachineStatus(StatusModel):
    """Whether the engine accepted the definition."""

    observed_generation: int | None = Field(
        default=None, ge=0, description="The metadata.generation the engine last checked."
    )
    current_revision: str | None = Field(
        default=None,
        description=(
            "The revision (a ControllerRevision in the engine's namespace) new jobs of the "
            "governed kind start with; running jobs keep the one they started with."
        ),
    )
    conditions: list[JobCondition] = Field(
        default_factory=list,
        description=(
            "Accepted: whether the engine accepted this generation (Valid, or why not: "
            "Invalid, Conflict). Governing: whether it governs its kind now (or why not: "
            "CRDNotInstalled, Conflict, Abstract)."
        ),
    )


class StateMachine(SpecModel):
    """A machine definition: the lifecycle of one job kind, as data."""

    api_version: Literal["jobmachine.dev/v1alpha1"] = Field(
        default="jobmachine.dev/v1alpha1", description=API_VERSION_DOC
    )
    kind: Literal["StateMachine"] = Field(default="StateMachine", description=KIND_DOC)
    metadata: dict[str, Any] = Field(default_factory=dict, description=METADATA_DOC)
    spec: DefinitionSpec = Field(
        description=(
            "The definition: which kind it governs, the job and replica machines, and how "
            "replica pods and services are shaped (see docs/ for the language)."
        )
    )
    status: StateMachineStatus = Field(
        default_factory=StateMachineStatus,
        description="Whether the engine accepted the definition; written by the engine only.",
    )
