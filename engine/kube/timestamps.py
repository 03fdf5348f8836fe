"""Kubernetes timestamps: RFC 3339 in UTC with a `Z`, to the second (metav1.Time)."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache


@lru_cache(maxsize=1024)
def format_time(moment: datetime) -> str:
    """`2026-11-21T10:00:00Z`, as metav1.Time serialises. Remembered: a reconcile writes
    the same few moments many times (a model check's fake clock, thousands of passes)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> datetime:
    """The moment a metav1.Time or MicroTime string names (always timezone-aware)."""
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
