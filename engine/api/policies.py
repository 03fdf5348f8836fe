"""MachineJob's success policy and failure rules: when a job is done, and what a failure means.

Each rule is checked twice with the same meaning: by the API server (CEL rules in
the CRD, so `kubectl apply` rejects a bad rule) and by these models (so the
engine and the tests reject it without a server).
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import ConfigDict, Field, model_validator

from engine.api.base import SpecModel
from engine.definition.failure_rules import (
    FAILURE_RULES_DOC,
    ExitCodes,
    FailureAction,
    FailureRule,
    PodConditionMatch,
)

__all__ = [
    "FAILURE_RULES_DOC",
    "ExitCodes",
    "FailureAction",
    "FailureRule",
    "PodConditionMatch",
    "SuccessPolicy",
]


_COUNT_NEEDS_ANY = "count applies only to mode Any"


class SuccessPolicy(SpecModel):
    """When the job succeeds: every replica of some types, or at least `count` of them."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {"rule": "!has(self.count) || self.mode == 'Any'", "message": _COUNT_NEEDS_ANY}
            ]
        }
    )

    replica_types: list[str] = Field(
        default_factory=list,
        description="The replica types that count; empty means every type of the job.",
    )
    mode: Literal["All", "Any"] = Field(
        default="All",
        description="All: every replica of those types succeeded; Any: `count` of them did.",
    )
    count: int | None = Field(
        default=None, ge=1, description="With mode Any: how many must succeed (default 1)."
    )

    @model_validator(mode="after")
    def _count_needs_any(self) -> Self:
        if self.count is not None and self.mode != "Any":
            raise ValueError(_COUNT_NEEDS_ANY)
        return self
