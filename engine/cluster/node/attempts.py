"""How many times each simulated container has started, kept on disk.

The count is per (namespace, pod name, controller owner uid, container), so a
pod that an engine recreates under the same name and owner continues the
annotation's exit-code sequence ("137 once, then 0"), and so does a node
restarted on the same state directory. Pods without a controller owner count by
their own uid and are forgotten when they are deleted.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from loguru import logger


def counter_key(pod: Mapping[str, Any], container: str) -> str:
    metadata = pod.get("metadata") or {}
    owner = next(
        (ref.get("uid") for ref in metadata.get("ownerReferences") or () if ref.get("controller")),
        metadata.get("uid"),
    )
    return f"{metadata.get('namespace')}/{metadata.get('name')}/{owner}/{container}"


def _pod_prefix(namespace: str, name: str, uid: str) -> str:
    return f"{namespace}/{name}/{uid}/"


class AttemptCounter:
    """Attempt numbers per container key, rewritten atomically on every change."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._counts: dict[str, int] = self._load()

    def _load(self) -> dict[str, int]:
        try:
            data = json.loads(self._path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            logger.bind(component="node.attempts", path=str(self._path)).warning(
                f"simulated attempt counts unreadable, starting from zero: {exc}"
            )
            return {}
        return {str(k): int(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def _save(self) -> None:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self._path.with_suffix(".tmp")
        temporary.write_text(json.dumps(self._counts, sort_keys=True))
        os.replace(temporary, self._path)

    def current(self, key: str) -> int:
        with self._lock:
            return self._counts.get(key, 0)

    def next(self, key: str) -> int:
        """Count one more attempt and return its number (1 for the first)."""
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + 1
            self._save()
            return self._counts[key]

    def forget_pod(self, namespace: str, name: str, uid: str) -> None:
        """Drop the counts a deleted pod without controller owner kept under its own uid."""
        prefix = _pod_prefix(namespace, name, uid)
        with self._lock:
            stale = [key for key in self._counts if key.startswith(prefix)]
            for key in stale:
                del self._counts[key]
            if stale:
                self._save()
