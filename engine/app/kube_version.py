"""Which Kubernetes releases jobmachine runs on, read from the API server's /version.

An API server older than the shipped CRDs need rejects them (validation rules it does not
know), so `jobmachine manifests install` asks the version first and refuses such a server
in one line naming what it lacks, before it writes anything. What the engine can do
without (a newer API a feature uses) is a note, not a refusal. The table below is the one
place these versions are written; docs/operations.md says the same in prose.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Version = tuple[int, int]
"""A Kubernetes minor release: (1, 28) is 1.28."""


@dataclass(frozen=True)
class Requirement:
    """An API jobmachine uses, the first release that serves it by default, and whether the
    install is refused without it (`needed`) or goes ahead with a note saying `without`:
    what differs on an older server."""

    since: Version
    what: str
    needed: bool
    without: str = ""


REQUIREMENTS = (
    Requirement((1, 25), "CRD validation rules (x-kubernetes-validations, with transition "
                "rules on oldSelf)", needed=True),
    Requirement((1, 27), "messageExpression in CRD validation rules", needed=True),
    Requirement((1, 28), "reason and fieldPath in CRD validation rules", needed=True),
    Requirement((1, 32), "batch/v1 Job spec.managedBy", needed=False,
                without="unless its JobManagedBy feature gate is on (1.30 and 1.31 have it), "
                "the built-in job controller runs every batch/v1 Job and jobmachine none "
                "(docs/batch-jobs.md)"),
)

MINIMUM: Version = max(r.since for r in REQUIREMENTS if r.needed)

_GIT_VERSION = re.compile(r"v?(\d+)\.(\d+)")
_LEADING_DIGITS = re.compile(r"\d+")


def shown(version: Version) -> str:
    """`1.28`."""
    return f"{version[0]}.{version[1]}"


def server_release(info: Mapping[str, Any]) -> Version | None:
    """The minor release a /version answer names: from `gitVersion` (`v1.30.2-gke.1000`,
    `v1.29.0+k3s1`), else from `major` and `minor` (`minor` is `"30+"` on some clouds);
    None when neither says both numbers."""
    match = _GIT_VERSION.match(str(info.get("gitVersion") or ""))
    if match:
        return int(match[1]), int(match[2])
    major = _LEADING_DIGITS.match(str(info.get("major") or ""))
    minor = _LEADING_DIGITS.match(str(info.get("minor") or ""))
    if major is None or minor is None:
        return None
    return int(major[0]), int(minor[0])


def version_refusal(info: Mapping[str, Any]) -> str | None:
    """Why jobmachine cannot be installed on the server that answered `info`, in one line;
    None when it can."""
    release = server_release(info)
    if release is None:
        answer = (info.get("gitVersion")
                  or f"major {info.get('major')!r}, minor {info.get('minor')!r}")
        return (f"the API server's /version ({answer}) does not say which Kubernetes release "
                f"it is: jobmachine needs {shown(MINIMUM)}+")
    missing = [r.what for r in REQUIREMENTS if r.needed and release < r.since]
    if not missing:
        return None
    return (f"Kubernetes {shown(release)} is too old: jobmachine needs {shown(MINIMUM)}+ "
            f"({'; '.join(missing)})")


def version_notes(info: Mapping[str, Any]) -> list[str]:
    """What works differently on this server though the install goes ahead: one line each."""
    release = server_release(info)
    if release is None:
        return []
    return [f"{r.what} is on by default from Kubernetes {shown(r.since)}, this cluster runs "
            f"{shown(release)}: {r.without}"
            for r in REQUIREMENTS if not r.needed and release < r.since]
