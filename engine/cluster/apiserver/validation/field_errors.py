"""Field errors worded as k8s.io/apimachinery's field.Error bodies, as `Cause`s.

Built-in validation builds every cause through these so the message prefixes
("Required value", "Invalid value: ...", "Unsupported value: ...") match what
kubectl users see from a real server.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from engine.cluster.apiserver.errors import Cause
from engine.cluster.apiserver.schema.schema_values import render


def required(path: str, detail: str = "") -> Cause:
    return Cause(
        path, f"Required value: {detail}" if detail else "Required value", "FieldValueRequired"
    )


def invalid(path: str, value: Any, detail: str) -> Cause:
    return Cause(path, f"Invalid value: {render(value)}: {detail}", "FieldValueInvalid")


def forbidden(path: str, detail: str) -> Cause:
    return Cause(path, f"Forbidden: {detail}", "FieldValueForbidden")


def duplicate(path: str, value: Any) -> Cause:
    return Cause(path, f"Duplicate value: {render(value)}", "FieldValueDuplicate")


def not_supported(path: str, value: Any, supported: Iterable[str]) -> Cause:
    listed = ", ".join(f'"{s}"' for s in supported)
    return Cause(
        path,
        f"Unsupported value: {render(value)}: supported values: {listed}",
        "FieldValueNotSupported",
    )


def too_long(path: str, limit: int) -> Cause:
    """field.TooLong as the served release (1.32) words it: the value is never shown; the
    older 'must have at most N bytes' went with apimachinery 0.31."""
    return Cause(path, f"Too long: may not be more than {limit} bytes", "FieldValueTooLong")


def invalid_shown(path: str, shown: str, detail: str) -> Cause:
    """Invalid value whose bad value is already printed (as Go prints maps and structs)."""
    return Cause(path, f"Invalid value: {shown}: {detail}", "FieldValueInvalid")


def invalid_omitted(path: str, detail: str) -> Cause:
    """Invalid value with the value left out (field.OmitValueType)."""
    return Cause(path, f"Invalid value: {detail}", "FieldValueInvalid")


def too_many(path: str, count: int, limit: int) -> Cause:
    return Cause(path, f"Too many: {count}: must have at most {limit} items", "FieldValueTooMany")


def non_negative(path: str, value: Any) -> list[Cause]:
    """ValidateNonnegativeField: nothing for an unset (None) or non-negative value."""
    if value is not None and value < 0:
        return [invalid(path, value, "must be greater than or equal to 0")]
    return []
