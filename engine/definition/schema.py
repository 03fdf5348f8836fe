"""The shape of a machine definition, as pydantic models.

A definition is a Kubernetes-style object (`kind: StateMachine`) so the same
file can be validated locally and applied to a cluster. These models check
shape only (types, required and unknown fields); meaning (state references,
reachability, the vocabulary, CEL) is checked by `checks.py`, which needs the
whole definition at once.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from engine.definition.failure_rules import FailureRule

API_VERSION = "jobmachine.dev/v1alpha1"
KIND = "StateMachine"

EventType = Literal["Normal", "Warning"]
Terminal = Literal["success", "failure"]


class _Strict(BaseModel):
    """Base: unknown fields are errors, field names are the YAML names, models are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class ActionSpec(_Strict):
    """One action: a name from the vocabulary and its arguments.

    Written in YAML either as a bare name (`createPod`) or as a one-key mapping
    (`cleanupPods: {policy: All}`).
    """

    name: str
    args: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _from_yaml(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"name": value}
        if isinstance(value, dict) and len(value) == 1 and "name" not in value:
            ((name, args),) = value.items()
            return {"name": name, "args": {} if args is None else args}
        return value


class ConditionSpec(_Strict):
    """The condition a state sets on the job while it is in that state.

    `message` is a text template: `${ expression }` parts are CEL.
    """

    type: str
    status: Literal["True", "False", "Unknown"] = "True"
    reason: str | None = None
    message: str | None = None
    # Keep the condition True when the job leaves the state (Kubeflow's Created).
    sticky: bool = False
    # Take reason and message from the job's condition of this type (set by an earlier
    # state), so Failed repeats why FailureTarget was set.
    copy_from: str | None = Field(default=None, alias="copyFrom")

    @model_validator(mode="before")
    @classmethod
    def _from_yaml(cls, value: Any) -> Any:
        return {"type": value} if isinstance(value, str) else value


# A duration ("30s", "10m", "1h30m", "500ms") or, where documented, a CEL
# expression giving seconds; an integer is a number of seconds.
Duration = str | int


class StateSpec(_Strict):
    """One state of a job or replica machine."""

    phase: str | None = None  # the word shown as the phase; default: the state's name
    condition: ConditionSpec | None = None
    terminal: Terminal | None = None
    on_enter: list[ActionSpec] = Field(default_factory=list, alias="onEnter")
    requeue_after: Duration | None = Field(default=None, alias="requeueAfter")
    # After this long in the state, `timedOut` holds: a duration, or CEL giving seconds
    # (null or <= 0: no timeout).
    timeout: Duration | None = None
    hold_replicas: bool = Field(default=False, alias="holdReplicas")  # job level only
    description: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _empty(cls, value: Any) -> Any:
        return {} if value is None else value


class TransitionSpec(_Strict):
    """One edge: from which states, to which, on what observation, under what guard."""

    source: list[str] = Field(alias="from")  # "*" means every non-terminal state
    to: str
    on: str | None = None
    when: str | None = None  # CEL guard, must be bool
    actions: list[ActionSpec] = Field(default_factory=list)
    reason: str | None = None  # event reason, CamelCase; default: the target state
    message: str | None = None  # event message template
    type: EventType | None = None  # default: Warning into a failure state, else Normal
    description: str | None = None

    @field_validator("source", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @property
    def is_wildcard(self) -> bool:
        return self.source == ["*"]


class MachineSpec(_Strict):
    """A job-level or replica-level machine."""

    initial: str
    states: dict[str, StateSpec]
    transitions: list[TransitionSpec] = Field(default_factory=list)


class PortSpec(_Strict):
    """A service port: the main container's port called `name`, else `port`."""

    name: str
    port: Annotated[int, Field(ge=1, le=65535)]
    protocol: Literal["TCP", "UDP", "SCTP"] = "TCP"


class ServiceSpec(_Strict):
    """Headless services for replicas of some types (one per replica index)."""

    replica_types: list[str] = Field(default_factory=lambda: ["*"], alias="replicaTypes")
    ports: list[PortSpec] = Field(default_factory=list)

    @field_validator("replica_types", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


class PodSpec(_Strict):
    """How the engine decorates each replica's pod template.

    Values of `env`, `labels` and `annotations` are CEL expressions; a result
    that is not a string is rendered as JSON (so TF_CONFIG can be a map).
    """

    container: str | None = None  # the framework's main container; default: the first
    env: dict[str, str] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    restart_policy: Literal["Never", "OnFailure", "Always"] = Field(
        default="Never", alias="restartPolicy"
    )


class Governs(_Strict):
    """Which kind the definition drives and where that kind keeps its replicas."""

    api_version: str = Field(alias="apiVersion")
    kind: str
    replica_specs: str = Field(default="spec.replicaSpecs", alias="replicaSpecs")
    run_policy: str = Field(default="spec.runPolicy", alias="runPolicy")
    failure_rules: str = Field(default="spec.failureRules", alias="failureRules")
    replica_types: list[str] | None = Field(default=None, alias="replicaTypes")
    default_restart_policy: Literal["Always", "OnFailure", "Never", "ExitCode"] = Field(
        default="Never", alias="defaultRestartPolicy"
    )
    # Values of runPolicy.managedBy that also name this engine (beside unset and
    # jobmachine.dev/job-controller), e.g. the controller a kind is a drop-in for.
    managed_by: list[str] = Field(default_factory=list, alias="managedBy")


class Defaults(_Strict):
    """Values used where a job leaves a field out."""

    run_policy: dict[str, Any] = Field(default_factory=dict, alias="runPolicy")
    # Applied after the job's own spec.failureRules (the first match wins).
    failure_rules: list[FailureRule] = Field(default_factory=list, alias="failureRules")


class DefinitionSpec(_Strict):
    governs: Governs
    defaults: Defaults = Field(default_factory=Defaults)
    job: MachineSpec
    replica: MachineSpec
    pod: PodSpec = Field(default_factory=PodSpec)
    services: list[ServiceSpec] = Field(default_factory=list)


class Metadata(BaseModel):
    """Object metadata; only `name` matters here, the rest is kept for `kubectl apply`."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: Annotated[
        str, Field(min_length=1, max_length=253, pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
    ]


class MachineDefinition(_Strict):
    """A whole `StateMachine` document."""

    api_version: Literal["jobmachine.dev/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["StateMachine"]
    metadata: Metadata
    spec: DefinitionSpec

    @property
    def name(self) -> str:
        return self.metadata.name
