"""Kubernetes-style API errors, rendered as `Status` objects.

Every failure the server reports goes through `ApiError`, so a client always
gets the `kind: Status` body, HTTP code and reason a real kube-apiserver would
send, and the official client and kubectl print the same messages they would
print against a real cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Cause:
    """One reason behind an `Invalid` (422) or similar error, naming the field."""

    field: str
    message: str
    reason: str = "FieldValueInvalid"

    def to_dict(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.message, "field": self.field}


@dataclass
class ApiError(Exception):
    """An error the API server answers with, as a `Status` body."""

    code: int
    reason: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)
    causes: tuple[Cause, ...] = ()

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}"

    def to_status(self) -> dict[str, Any]:
        # Go's omitempty: a core-group error has no "group" at all.
        details = {k: v for k, v in self.details.items() if v not in ("", None)}
        if self.causes:
            details["causes"] = [cause.to_dict() for cause in self.causes]
        # metav1.Status's fields in its Go order (clients that compare the body as text,
        # as the official Python client's e2e tests do, see them as kube-apiserver writes
        # them): kind, apiVersion, metadata, status, message, reason, details, code.
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:  # none: an error that is not a Status (upstream: StatusReasonUnknown)
            status["reason"] = self.reason
        # Details given, even all empty, are written (`{}`), as Go writes a set *StatusDetails.
        if details or self.details:
            status["details"] = details
        status["code"] = self.code
        return status


def _details(kind: str, name: str, group: str) -> dict[str, Any]:
    return {"name": name, "group": group, "kind": kind}


def not_found(group: str, plural: str, name: str) -> ApiError:
    resource = f"{plural}.{group}" if group else plural
    return ApiError(
        404, "NotFound", f'{resource} "{name}" not found', _details(plural, name, group)
    )


def already_exists(group: str, plural: str, name: str) -> ApiError:
    resource = f"{plural}.{group}" if group else plural
    return ApiError(
        409, "AlreadyExists", f'{resource} "{name}" already exists', _details(plural, name, group)
    )


def conflict(group: str, plural: str, name: str, why: str) -> ApiError:
    resource = f"{plural}.{group}" if group else plural
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {resource} "{name}": {why}',
        _details(plural, name, group),
    )


def invalid(group: str, kind: str, name: str, causes: list[Cause]) -> ApiError:
    """422 worded as apierrors.NewInvalid: several causes are listed in brackets (Go's
    aggregate error), once each."""
    messages = list(dict.fromkeys(f"{c.field}: {c.message}" for c in causes))
    summary = messages[0] if len(messages) == 1 else f"[{', '.join(messages)}]"
    return ApiError(
        422,
        "Invalid",
        f'{kind}{"." + group if group else ""} "{name}" is invalid: {summary}',
        {"name": name, "group": group, "kind": kind},
        tuple(causes),
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def cannot_decode(kind: str, version: str, detail: str) -> ApiError:
    """400 for a body the real server cannot decode into its Go type (strict or type errors)."""
    return bad_request(f'{kind} in version "{version}" cannot be handled as a {kind}: {detail}')


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def forbidden(message: str) -> ApiError:
    return ApiError(403, "Forbidden", message)


def forbidden_resource(group: str, plural: str, name: str, why: str) -> ApiError:
    """403 naming the object, as apierrors.NewForbidden words it (admission refusals too)."""
    resource = f"{plural}.{group}" if group else plural
    return ApiError(
        403, "Forbidden", f'{resource} "{name}" is forbidden: {why}', _details(plural, name, group)
    )


def method_not_allowed(message: str) -> ApiError:
    return ApiError(405, "MethodNotAllowed", message)


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def unsupported_media_type(message: str) -> ApiError:
    return ApiError(415, "UnsupportedMediaType", message)


def internal(message: str) -> ApiError:
    return ApiError(500, "InternalError", message)


def too_large_version(wanted: int, current: int) -> ApiError:
    """504 for a resourceVersion this server has not reached, as the watch cache answers
    once it has waited for it (storage.NewTooLargeResourceVersionError)."""
    # The cause names no field, so it has none (Go's omitempty).
    cause = {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
    return ApiError(
        504, "Timeout", f"Timeout: Too large resource version: {wanted}, current: {current}",
        {"causes": [cause], "retryAfterSeconds": 1},
    )
