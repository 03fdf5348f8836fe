"""Wall-clock timestamps as Kubernetes writes them (RFC 3339, UTC, whole seconds)."""

from __future__ import annotations

from datetime import UTC, datetime


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
