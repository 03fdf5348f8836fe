"""The typed errors of the API client: one class per answer the engine treats differently.

A 409 is AlreadyExists or Conflict by the Status `reason`, the way client-go tells
them apart; a 422 on `metadata.uid` is Replaced (a patch's failed uid precondition);
connection failures, 5xx and 429 are Unavailable (transient).
"""

from __future__ import annotations

from typing import Any

import orjson


class ApiError(Exception):
    """A request the server refused; `str()` is the server's Status message."""

    def __init__(self, status: int, reason: str, message: str, body: dict[str, Any]) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body


class Forbidden(ApiError):  # noqa: N818 (Kubernetes' names)
    """403: the engine's identity may not do this (a rule missing from its RBAC)."""


class NotFound(ApiError):  # noqa: N818 (Kubernetes' names)
    """404: the object (or its namespace) does not exist."""


class AlreadyExists(ApiError):  # noqa: N818 (Kubernetes' names)
    """409 with reason AlreadyExists: a create hit an existing name."""


class Conflict(ApiError):  # noqa: N818 (Kubernetes' names)
    """409 otherwise: a stale resourceVersion or a failed uid precondition."""


class Gone(ApiError):  # noqa: N818 (Kubernetes' names)
    """410: the resourceVersion asked for is older than the server's history; relist."""


class Invalid(ApiError):  # noqa: N818 (Kubernetes' names)
    """422: the object failed validation."""


class Replaced(Invalid):
    """422 on `metadata.uid`: a patch named the uid of the object it meant and the name now
    holds another (kube-apiserver's answer to a patch's uid precondition, as the controller
    reference manager reads it; an update's failed uid precondition is a Conflict)."""


class Unavailable(ApiError):  # noqa: N818 (Kubernetes' names)
    """Transient: connection refused or reset, 5xx, 429; worth retrying later."""


def _error_class(status: int, reason: str) -> type[ApiError]:
    if status == 403:
        return Forbidden
    if status == 404:
        return NotFound
    if status == 409:
        return AlreadyExists if reason == "AlreadyExists" else Conflict
    if status == 410:
        return Gone
    if status == 422:
        return Invalid
    if status == 429 or status >= 500:
        return Unavailable
    return ApiError


def _names_uid(body: dict[str, Any]) -> bool:
    """Whether a Status's causes name `metadata.uid`."""
    details = body.get("details")
    causes = details.get("causes") if isinstance(details, dict) else None
    return isinstance(causes, list) and any(
        isinstance(cause, dict) and cause.get("field") == "metadata.uid" for cause in causes)


def error_from_status(status: int, body: dict[str, Any]) -> ApiError:
    """The typed error for an HTTP status and the server's Status object (maybe empty)."""
    reason = str(body.get("reason") or "")
    message = str(body.get("message") or f"the server answered HTTP {status}")
    kind = _error_class(status, reason)
    if kind is Invalid and _names_uid(body):
        kind = Replaced
    return kind(status, reason, message, body)


def parse_error_body(data: bytes) -> dict[str, Any]:
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError:
        return {"message": data.decode(errors="replace").strip()} if data else {}
    return body if isinstance(body, dict) else {}


def unavailable(exc: BaseException) -> Unavailable:
    return Unavailable(0, "ConnectionError", f"{type(exc).__name__}: {exc}", {})
