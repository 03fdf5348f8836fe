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
from engine.api.structural import Shorthand, accept_anything, accept_null
from engine.definition.schema import DefinitionSpec

SHORTHANDS: dict[str, Shorthand] = {
    "ActionSpec._from_yaml": accept_anything,  # `createPod` or `cleanupPods: {policy: All}`
    "ConditionSpec._from_yaml": accept_anything,  # `condition: Running` or a mapping
    "StateSpec._empty": accept_null,  # `Succeeded:` with nothing after it
    "TransitionSpec._one_or_many": accept_anything,  # `from: Pending` or a list
    "ServiceSpec._one_or_many": accept_anything,  # `replicaTypes: Master` or a list
}
"""How the definition language's shorter YAML forms appear in the CRD schema."""


class StateMachineStatus(StatusModel):
    """Whether the engine accepted the definition."""

    observed_generation: int | None = Field(
        default=None, ge=0, description="The metadata.generation the engine last checked."
    )
    conditions: list[JobCondition] = Field(
        default_factory=list,
        description="Valid: True once the definition passed every check, else False with why.",
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
