"""What every patch format shares: the error it raises, and JSON equality.

Kept apart from the formats so that strategic merge (`strategic_merge.py`) and the
simple formats (`patch.py`) each depend on it, not on each other.
"""

from __future__ import annotations

from typing import Any


class PatchError(ValueError):
    """A patch that is malformed or does not apply; `code` is the HTTP status to answer."""

    def __init__(self, message: str, code: int = 422) -> None:
        super().__init__(message)
        self.code = code


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: `true` is not `1`, `1` is `1.0`."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers):
        return a == b
    return type(a) is type(b) and bool(a == b)
