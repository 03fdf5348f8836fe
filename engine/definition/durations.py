"""Durations as definitions write them: `500ms`, `30s`, `10m`, `1h30m`, or whole seconds.

The same Go-style form Kubernetes uses, so `timeout` and `requeueAfter` read
like the fields users already know.
"""

from __future__ import annotations

import re

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_WHOLE = re.compile(r"(?:\d+(?:\.\d+)?(?:ms|s|m|h))+")


def parse_duration(value: str | int) -> float | None:
    """Seconds, or None when `value` is not a duration (a negative number is not one)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return float(value) if value >= 0 else None
    text = value.strip()
    if text.isdigit():
        return float(text)
    if not _WHOLE.fullmatch(text):
        return None
    return sum(float(number) * _UNITS[unit] for number, unit in _PART.findall(text))


def looks_like_duration(value: str) -> bool:
    """True for text meant as a duration (digits first), so a typo is not read as CEL."""
    return bool(re.fullmatch(r"\s*\d[\dA-Za-z. ]*", value))
