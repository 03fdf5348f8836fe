"""What can go wrong when a program drives jobs through `JobClient`, one class per case.

Every error is a `JobClientError`, so a caller can catch them all at once; the API
server's refusals keep its Status message, HTTP code and reason, because that message
is what tells a user what to fix ("spec.pytorchReplicaSpecs.Worker.replicas: Invalid
value ..."), and a wrapper that reworded it would hide it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from engine.kube.errors import ApiError


class JobClientError(Exception):
    """Anything `JobClient` could not do; `status` and `reason` are the server's, if it said."""

    def __init__(self, message: str, *, status: int | None = None, reason: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.reason = reason


class JobNotFoundError(JobClientError, LookupError):
    """No job of that name (and kind, if one was given) in that namespace."""


class UnknownKindError(JobClientError, LookupError):
    """No machine governs the kind asked for (on the cluster, or among the machine files)."""

    def __init__(self, kind: str, known: Iterable[str], *, where: str = "on the cluster") -> None:
        self.kind = kind
        self.known = tuple(sorted(known))
        super().__init__(
            f"no machine {where} governs the kind {kind!r}; governed kinds: "
            f"{', '.join(self.known) or '(none)'}"
        )


class InvalidJobError(JobClientError, ValueError):
    """A job document or builder that cannot become a job (checked before the server sees it)."""


class JobFailedError(JobClientError):
    """The job reached its Failed condition while the caller waited for something else.

    `reason` and `message` are the Failed condition's; `job` is the job as it failed.
    """

    def __init__(self, job: Mapping[str, Any], reason: str, message: str) -> None:
        super().__init__(f"{describe(job)} failed: {reason}: {message}", reason=reason)
        self.job = job
        self.message = message


class JobTimeoutError(JobClientError, TimeoutError):
    """The job did not reach any of the expected conditions in time; `job` is its last state."""

    def __init__(self, job: Mapping[str, Any], expected: Iterable[str], timeout: float) -> None:
        self.job = job
        self.expected = tuple(sorted(expected))
        self.timeout = timeout
        status = job.get("status") or {}
        super().__init__(
            f"{describe(job)} reached none of {', '.join(self.expected)} within {timeout:g}s; "
            f"it is {status.get('state') or status.get('phase') or 'not started'}"
        )


def describe(job: Mapping[str, Any]) -> str:
    """`PyTorchJob team/mnist`: how messages name a job."""
    metadata = job.get("metadata") or {}
    return f"{job.get('kind', 'job')} {metadata.get('namespace', '')}/{metadata.get('name', '')}"


def refused(error: ApiError, doing: str) -> JobClientError:
    """The server's refusal of `doing` ("create PyTorchJob team/mnist") with its Status."""
    return JobClientError(f"cannot {doing}: {error.message}", status=error.status,
                          reason=error.reason)
