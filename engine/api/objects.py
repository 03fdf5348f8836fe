"""The rule every job's name keeps, and the descriptions of the fields every object has.

A job's pods and services are named `<job>-<type>-<index>`, and service names
must be DNS-1035 labels, so a job's own name must be one too (Kubeflow's
training operator rejects other names for the same reason).
"""

from __future__ import annotations

import re
from typing import Any

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


def job_name_problem(name: Any) -> list[str]:
    """The job name's problem, if it is not a DNS-1035 label (its children are named after it)."""
    if name is not None and not (isinstance(name, str) and len(name) <= 63
                                 and re.match(_DNS_1035, name)):
        return [_NAME_MESSAGE]
    return []
