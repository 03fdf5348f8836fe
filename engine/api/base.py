"""The base of every model in the job kinds' API: camelCase names, frozen values.

Spec models forbid unknown fields so a misspelt field is an error here as it is
for `kubectl apply` (strict field validation); status models ignore them, so a
status written by another engine version still reads.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from engine.definition.failure_rules import RuleModel


class SpecModel(RuleModel):
    """What a user writes: camelCase on the wire, snake_case in Python, unknown fields rejected.

    The same configuration as the failure rules' models in the machine language, which
    a job's spec embeds.
    """


class StatusModel(BaseModel):
    """What the engine writes: camelCase on the wire, unknown fields ignored."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="ignore",
        frozen=True,
    )
