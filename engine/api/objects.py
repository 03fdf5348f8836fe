"""The parts every job object shares: type and object metadata, status, and the name rule.

A job's pods and services are named `<job>-<type>-<index>`, and service names
must be DNS-1035 labels, so a job's own name must be one too (Kubeflow's
training operator rejects other names for the same reason).
"""

from __future__ import annotations

import re
from typing import Any, Self

from pydantic import Field, model_validator

from engine.api.base import SpecModel
from engine.api.status import JobStatus

_DNS_1035 = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
_NAME_MESSAGE = (
    "metadata.name must be a DNS-1035 label (at most 63 lower-case letters, digits and '-', "
    "starting with a letter): the job's pods and services are named after it"
)
JOB_NAME_RULE: dict[str, str] = {
    "rule": f"!has(self.metadata.name) || (size(self.metadata.name) <= 63 && "
    f"self.metadata.name.matches('{_DNS_1035}'))",
    "message": _NAME_MESSAGE,
}

API_VERSION_DOC = "The versioned schema of this object (group/version)."
KIND_DOC = "The kind of this object."
METADATA_DOC = "Standard object metadata."


class JobObject(SpecModel):
    """A whole job object: metadata and status here, apiVersion, kind and spec in the kind."""

    metadata: dict[str, Any] = Field(default_factory=dict, description=METADATA_DOC)
    status: JobStatus = Field(
        default_factory=JobStatus,
        description="What the engine observed and decided; written by the engine only.",
    )

    @model_validator(mode="after")
    def _name_is_dns_1035(self) -> Self:
        name = self.metadata.get("name")
        if name is not None and not (len(name) <= 63 and re.match(_DNS_1035, name)):
            raise ValueError(_NAME_MESSAGE)
        return self
