"""A terminated container's `message`, as the kubelet builds it from what the container wrote at
its `terminationMessagePath` or, under `FallbackToLogsOnError`, from the end of its log.

Ported from the kubelet (pkg/kubelet/kuberuntime/kuberuntime_container.go:
`getTerminationMessage`, `readLastStringFromContainerLogs`, `convertToKubeContainerStatus`;
limits from pkg/kubelet/container/runtime.go; the per-pod budget from the status manager's
`normalizeStatus`). Reading files is left to the caller but for `read_tail`, so the rules stay
pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from engine.cluster.node.config.volumes import absolute

DEFAULT_PATH = "/dev/termination-log"
FALLBACK_TO_LOGS = "FallbackToLogsOnError"
# The most of the message file read, from its end (MaxContainerTerminationMessageLength).
MAX_MESSAGE_BYTES = 4 * 1024
# From the log: the last lines, then the last bytes of those (...LogLines, ...LogLength).
MAX_LOG_LINES = 80
MAX_LOG_BYTES = 2 * 1024
# What all the messages of one pod's containers may take, split evenly between them
# (MaxPodTerminationMessageLogLength).
MAX_POD_MESSAGE_BYTES = 12 * 1024


def message_path(container: Mapping[str, Any]) -> PurePosixPath:
    """Where the container writes its message (the API server defaults it, as this does)."""
    return absolute(str(container.get("terminationMessagePath") or DEFAULT_PATH))


def read_tail(path: Path, limit: int) -> bytes | None:
    """The last `limit` bytes of a file (tail.ReadAtMost); None when there is no file."""
    try:
        with open(path, "rb") as stream:
            size = stream.seek(0, 2)
            stream.seek(max(0, size - limit))
            return stream.read()
    except FileNotFoundError:
        return None


def tail_lines(data: bytes, lines: int) -> bytes:
    """The last `lines` lines; a last line without a newline is not counted (the kubelet's
    tail.FindTailLineStartIndex)."""
    ends = [index for index, byte in enumerate(data) if byte == ord("\n")]
    if len(ends) <= lines:
        return data
    return data[ends[-(lines + 1)] + 1:]


def log_message(log_end: bytes) -> bytes:
    """The message taken from a log: its last 80 lines, of which the last 2048 bytes.
    `log_end` needs to hold only the log's last MAX_LOG_BYTES + 1 bytes."""
    return tail_lines(log_end, MAX_LOG_LINES)[-MAX_LOG_BYTES:]


def _text(data: bytes) -> str:
    # Go keeps the bytes; its JSON encoder then writes invalid UTF-8 as U+FFFD, as this does.
    return data.decode("utf-8", errors="replace")


def container_message(container: Mapping[str, Any], *, exit_code: int, written: bytes | None,
                      log_end: Callable[[], bytes | None]) -> str | None:
    """The message of a container that exited with `exit_code`: what it `written` at its
    terminationMessagePath (None: no such file), else, for a failed container under
    FallbackToLogsOnError, the end of its log (read only then)."""
    fallback = (container.get("terminationMessagePolicy") == FALLBACK_TO_LOGS
                and exit_code != 0)
    if written:
        return _text(written)
    if not fallback:
        return None
    return _text(log_message(log_end() or b"")) or None


def _cut(message: str, limit: int) -> str:
    """The first `limit` bytes of a message (Go slices the string's bytes)."""
    data = message.encode("utf-8")
    return message if len(data) <= limit else _text(data[:limit])


def _trimmed_state(state: Mapping[str, Any], limit: int) -> dict[str, Any]:
    terminated = state.get("terminated")
    if not terminated or len(str(terminated.get("message") or "").encode("utf-8")) <= limit:
        return dict(state)
    return {**state, "terminated": {**terminated, "message": _cut(terminated["message"], limit)}}


def fit_pod_budget(statuses: list[dict[str, Any]], containers: int) -> list[dict[str, Any]]:
    """Container statuses whose terminated messages (state and lastState) share the pod's
    budget evenly between its `containers` (init containers included), as the kubelet's
    status manager cuts them before writing."""
    limit = MAX_POD_MESSAGE_BYTES // max(1, containers)
    return [{**status, "state": _trimmed_state(status.get("state") or {}, limit),
             "lastState": _trimmed_state(status.get("lastState") or {}, limit)}
            for status in statuses]

