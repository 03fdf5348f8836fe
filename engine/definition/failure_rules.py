"""Failure rules: what a failed pod means, as a job's spec and a machine's defaults write them.

The models live with the machine language because a StateMachine declares default rules
(`spec.defaults.failureRules`) in the same form as a job's `spec.failureRules`; the job
kinds' API (engine.api.policies) uses these same models, so both are checked alike, and
the CEL rules here also go into the CRDs so the API server rejects a bad rule.
"""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

ExitCode = Annotated[int, Field(ge=0, le=255)]
KindFailureAction = Literal["FailJob", "RestartReplica", "RestartJob", "Ignore", "Count"]
"""The actions a job kind's own `spec.failureRules` may take (its CRD's enum)."""
FailureAction = Literal["FailJob", "RestartReplica", "RestartJob", "Ignore", "Count", "FailIndex"]
"""Every action the engine knows: also FailIndex (that pool member's index fails, not
retried), which only a batch/v1 Job's podFailurePolicy (with backoffLimitPerIndex) uses."""
ConditionStatus = Literal["True", "False", "Unknown"]

_EXACTLY_ONE = "exactly one of onExitCodes, onPodConditions and onReasons must be set"
_NO_ZERO_IN = "exit code 0 (success) may not be listed with operator In"


class RuleModel(BaseModel):
    """camelCase on the wire, unknown fields rejected, frozen: the base of every spec model
    (engine.api.base.SpecModel is this, for the job kinds)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="forbid",
        frozen=True,
    )


class ExitCodes(RuleModel):
    """Matches a pod by the exit code of one container (or of any container)."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {"rule": "self.operator != 'In' || !(0 in self.values)", "message": _NO_ZERO_IN}
            ]
        }
    )

    container_name: str | None = Field(
        default=None, description="Only this container's exit code; unset: any container's."
    )
    operator: Literal["In", "NotIn"] = Field(
        description="In: the code is one of `values`; NotIn: it is none of them."
    )
    values: list[ExitCode] = Field(
        min_length=1,
        max_length=255,
        description="Exit codes (0-255), each at most once.",
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )

    @model_validator(mode="after")
    def _valid_codes(self) -> Self:
        if len(set(self.values)) != len(self.values):
            raise ValueError("Duplicate value: an exit code is listed twice")
        if self.operator == "In" and 0 in self.values:
            raise ValueError(_NO_ZERO_IN)
        return self


class PodConditionMatch(RuleModel):
    """Matches a pod that has a condition of this type with this status (e.g. DisruptionTarget)."""

    type: str = Field(description="The pod condition's type.")
    status: ConditionStatus = Field(default="True", description="The status it must have.")


FAILURE_RULES_DOC = (
    "What a failed pod means, checked in order; the first rule that matches applies. "
    "A failure no rule matches is handled by the replica's restartPolicy."
)


class FailureRule(RuleModel):
    """What a failed pod means, when it matches: the first matching rule (in order) applies."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "(has(self.onExitCodes) ? 1 : 0) + (has(self.onPodConditions) ? 1 : 0)"
                    " + (has(self.onReasons) ? 1 : 0) == 1",
                    "message": _EXACTLY_ONE,
                }
            ]
        }
    )

    action: FailureAction = Field(
        description=(
            "FailJob: the job fails; RestartReplica: recreate that pod; RestartJob: recreate "
            "every pod; Ignore: recreate the pod without counting a restart; Count: count it "
            "against backoffLimit and go on as the restart policy says; FailIndex (a batch/v1 "
            "Job's podFailurePolicy only): that index fails and is not retried."
        )
    )
    replica_types: list[str] = Field(
        default_factory=list, description="Replica types the rule applies to; empty means all."
    )
    on_exit_codes: ExitCodes | None = Field(
        default=None, description="Match by a container's exit code."
    )
    on_pod_conditions: list[PodConditionMatch] | None = Field(
        default=None, min_length=1, description="Match a pod having any of these conditions."
    )
    on_reasons: list[str] | None = Field(
        default=None,
        min_length=1,
        description="Match by the pod's status.reason (e.g. Evicted, OOMKilled, DeadlineExceeded).",
    )

    @model_validator(mode="after")
    def _exactly_one_match(self) -> Self:
        chosen = (self.on_exit_codes, self.on_pod_conditions, self.on_reasons)
        if sum(match is not None for match in chosen) != 1:
            raise ValueError(_EXACTLY_ONE)
        return self


# A rule as a job kind's own `spec.failureRules` writes it: every action but FailIndex,
# which needs a pool with per-index back-off (so its CRD refuses it). The docstring is the
# CRD's description, the same as FailureRule's.
class KindFailureRule(FailureRule):
    """What a failed pod means, when it matches: the first matching rule (in order) applies."""

    action: KindFailureAction = Field(
        description=(
            "FailJob: the job fails; RestartReplica: recreate that pod; RestartJob: recreate "
            "every pod; Ignore: recreate the pod without counting a restart; Count: count it "
            "against backoffLimit and go on as the restart policy says."
        )
    )
