"""How many times each simulated container has started, kept on disk.

The count is per (namespace, pod name, controller owner uid, container), so a
pod that an engine recreates under the same name and owner continues the
annotation's exit-code sequence ("137 once, then 0"), and so does a node
restarted on the same state directory. Pods without a controller owner count by
their own uid and are forgotten when they are deleted. An owned pod's counts are
forgotten once no pod of that name and owner has existed for `retention` (an
hour by default): the node cannot tell its owner's deletion from a pause before
a re-creation, and an hour outlasts the engine's longest re-creation back-off
(10 minutes by default).

On disk each change is one appended JSON line (`{"key": ..., "count": n}`, 0
when forgotten), so a container start writes one line, not the whole map; the
file is rewritten with only the live counts at start-up and whenever it holds
more than twice as many lines as there are counts.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from loguru import logger

DEFAULT_RETENTION_S = 3600.0
# The log is compacted only past this many lines, so a small map is not rewritten often.
_COMPACT_MIN_LINES = 1000


def pod_group(pod: Mapping[str, Any]) -> str:
    """What a pod's counts are kept under: namespace, name and controller owner uid (its own
    uid when it has no controller)."""
    metadata = pod.get("metadata") or {}
    owner = next(
        (ref.get("uid") for ref in metadata.get("ownerReferences") or () if ref.get("controller")),
        metadata.get("uid"),
    )
    return f"{metadata.get('namespace')}/{metadata.get('name')}/{owner}"


def counter_key(pod: Mapping[str, Any], container: str) -> str:
    return f"{pod_group(pod)}/{container}"


def _split(key: str) -> tuple[str, str]:
    group, _, container = key.rpartition("/")
    return group, container


class AttemptCounter:
    """Attempt numbers per container key, grouped by pod group, logged to `path`."""

    def __init__(self, path: Path, *, legacy_path: Path | None = None,
                 retention_s: float = DEFAULT_RETENTION_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """`path`: the log; `legacy_path`: where an older version kept the whole map as one
        JSON object, taken over (and removed) at start."""
        self._path = path
        self._legacy_path = legacy_path
        self._retention_s = retention_s
        self._clock = clock
        self._lock = threading.Lock()
        self._log = logger.bind(component="node.attempts", path=str(path))
        self._counts: dict[str, dict[str, int]] = {}
        # Groups no pod had at the last prune, and since when (this process's clock).
        self._gone: dict[str, float] = {}
        self._lines = 0
        self._load()
        if self._lines:
            self._compact()
        if legacy_path is not None:
            legacy_path.unlink(missing_ok=True)

    # -- counting ----------------------------------------------------------------------

    def current(self, key: str) -> int:
        group, container = _split(key)
        with self._lock:
            return self._counts.get(group, {}).get(container, 0)

    def next(self, key: str) -> int:
        """Count one more attempt and return its number (1 for the first)."""
        group, container = _split(key)
        with self._lock:
            containers = self._counts.setdefault(group, {})
            number = containers[container] = containers.get(container, 0) + 1
            self._gone.pop(group, None)
            self._append([(key, number)])
            return number

    # -- forgetting --------------------------------------------------------------------

    def forget_pod(self, namespace: str, name: str, uid: str) -> None:
        """Drop the counts a deleted pod without controller owner kept under its own uid."""
        with self._lock:
            self._drop([f"{namespace}/{name}/{uid}"])

    def prune(self, alive: Iterable[str]) -> None:
        """Forget the groups (`pod_group`) no pod has had for the retention period; `alive`
        are the groups of every pod that exists now."""
        now = self._clock()
        with self._lock:
            if not self._counts:
                return
            present = set(alive)
            expired = []
            for group in self._counts:
                if group in present:
                    self._gone.pop(group, None)
                elif now - self._gone.setdefault(group, now) >= self._retention_s:
                    expired.append(group)
            self._drop(expired)

    def _drop(self, groups: list[str]) -> None:
        dropped = []
        for group in groups:
            self._gone.pop(group, None)
            dropped += [(f"{group}/{c}", 0) for c in self._counts.pop(group, {})]
        if dropped:
            self._append(dropped)

    # -- the file ----------------------------------------------------------------------

    def _load(self) -> None:
        if self._legacy_path is not None:
            for key, count in self._read_legacy(self._legacy_path).items():
                self._set(key, count)
                self._lines += 1
        try:
            lines = self._path.read_text().splitlines()
        except FileNotFoundError:
            return
        except (OSError, UnicodeDecodeError) as exc:
            self._log.warning(f"simulated attempt counts unreadable, starting from zero: {exc}")
            return
        for number, line in enumerate(lines, 1):
            self._lines += 1
            try:
                record = json.loads(line)
                self._set(str(record["key"]), int(record["count"]))
            except (ValueError, TypeError, KeyError) as exc:
                # A torn last line (the node died mid-write) or damage: the rest still counts.
                self._log.warning(f"line {number} of the attempt counts skipped: {exc!r}")

    def _read_legacy(self, path: Path) -> dict[str, int]:
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            self._log.warning(f"simulated attempt counts unreadable, starting from zero: {exc}")
            return {}
        return {str(k): int(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def _set(self, key: str, count: int) -> None:
        group, container = _split(key)
        if count > 0:
            self._counts.setdefault(group, {})[container] = count
            return
        containers = self._counts.get(group, {})
        containers.pop(container, None)
        if not containers:
            self._counts.pop(group, None)

    def _append(self, changes: list[tuple[str, int]]) -> None:
        live = sum(len(containers) for containers in self._counts.values())
        if self._lines + len(changes) > max(_COMPACT_MIN_LINES, 2 * live):
            self._compact()
            return
        self._path.parent.mkdir(parents=True, exist_ok=True)
        with self._path.open("a") as log:
            log.write("".join(_line(key, count) for key, count in changes))
        self._lines += len(changes)

    def _compact(self) -> None:
        """Rewrite the log with one line per live count (atomically: a crash keeps the old)."""
        self._path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self._path.with_suffix(".tmp")
        lines = [_line(f"{group}/{container}", count)
                 for group, containers in self._counts.items()
                 for container, count in containers.items()]
        temporary.write_text("".join(lines))
        os.replace(temporary, self._path)
        self._lines = len(lines)


def _line(key: str, count: int) -> str:
    return json.dumps({"key": key, "count": count}) + "\n"
