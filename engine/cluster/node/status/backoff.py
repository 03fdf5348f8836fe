"""The kubelet's CrashLoopBackOff, pure: when an exited container may start again in place.

Ported from the kubelet (`doBackOff` in pkg/kubelet/kuberuntime/kuberuntime_manager.go on
client-go's `flowcontrol.Backoff`, made with `NewBackOff(10s, MaxContainerBackOff = 300s)`):
the first exit restarts at once and opens a 10 s window; every exit inside the window waits
until `finishedAt + window`, and the restart doubles the window up to the cap. An exit more
than twice the cap (10 minutes) after the last restart starts over (flowcontrol's
`hasExpired`). The numbers are the kubelet's by default; a node may be given shorter ones
(tests, demos) through `RestartBackoff` or its environment variables.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

INITIAL_ENV = "JOBMACHINE_NODE_RESTART_BACKOFF_S"
MAX_ENV = "JOBMACHINE_NODE_RESTART_BACKOFF_MAX_S"
_NANOS = 1_000_000_000


@dataclass(frozen=True)
class RestartBackoff:
    """The node's restart back-off: `initial_s` doubling up to `max_s` (the kubelet's 10 s and
    5 min by default); it starts over after a container ran `reset_after_s` (twice the cap)."""

    initial_s: float = 10.0
    max_s: float = 300.0

    def __post_init__(self) -> None:
        for name, value in (("initial_s", self.initial_s), ("max_s", self.max_s)):
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"restart back-off {name} must be a positive number of "
                                 f"seconds, not {value!r}")
        if self.initial_s > self.max_s:
            raise ValueError(f"restart back-off initial_s ({self.initial_s:g}) must not exceed "
                             f"max_s ({self.max_s:g})")

    @property
    def reset_after_s(self) -> float:
        return 2 * self.max_s

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RestartBackoff:
        """The kubelet's numbers, or those of JOBMACHINE_NODE_RESTART_BACKOFF_S and
        JOBMACHINE_NODE_RESTART_BACKOFF_MAX_S (seconds) where set."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for field, variable in (("initial_s", INITIAL_ENV), ("max_s", MAX_ENV)):
            if env.get(variable):
                try:
                    values[field] = float(env[variable])
                except ValueError:
                    raise ValueError(f"{variable}={env[variable]!r} is not a number of "
                                     "seconds") from None
        return cls(**values)


@dataclass(frozen=True)
class Window:
    """One container's back-off window: its length, and the monotonic instant of the restart
    that opened it (flowcontrol's backoffEntry)."""

    length_s: float
    opened_at: float


def _expired(policy: RestartBackoff, window: Window, finished_at: float) -> bool:
    return finished_at - window.opened_at > policy.reset_after_s


def wait_s(policy: RestartBackoff, window: Window | None, *, finished_at: float,
           now: float) -> float:
    """How long an exited container must still wait before it starts again (0: now); the
    kubelet's IsInBackOffSince(key, finishedAt)."""
    if window is None or _expired(policy, window, finished_at):
        return 0.0
    return max(0.0, finished_at + window.length_s - now)


def restarted(policy: RestartBackoff, window: Window | None, *, finished_at: float,
              now: float) -> Window:
    """The window after the container starts again at `now` (flowcontrol's Next): the initial
    one after a first or long-past exit, else twice the last, up to the cap."""
    if window is None or _expired(policy, window, finished_at):
        return Window(policy.initial_s, now)
    return Window(min(window.length_s * 2, policy.max_s), now)


def pod_ref(metadata: Mapping[str, Any]) -> str:
    """A pod as the kubelet names it in messages (format.Pod): NAME_NAMESPACE(UID)."""
    return f"{metadata.get('name')}_{metadata.get('namespace')}({metadata.get('uid')})"


def waiting_message(window: Window, container: str, metadata: Mapping[str, Any]) -> str:
    """The CrashLoopBackOff waiting message, word for word the kubelet's."""
    return (f"back-off {go_duration(window.length_s)} restarting failed container={container} "
            f"pod={pod_ref(metadata)}")


def event_message(container: str, metadata: Mapping[str, Any]) -> str:
    """The message of the kubelet's Warning event BackOff."""
    return f"Back-off restarting failed container {container} in pod {pod_ref(metadata)}"


def _fraction(value: int, digits: int) -> str:
    """value / 10**digits with the trailing zeros of its fraction dropped (Go's fmtFrac)."""
    whole, part = divmod(value, 10**digits)
    text = f"{part:0{digits}d}".rstrip("0") if digits else ""
    return f"{whole}.{text}" if text else str(whole)


def go_duration(seconds: float) -> str:
    """A duration as Go's time.Duration prints it (10s, 1m20s, 5m0s, 200ms), which the
    kubelet's messages use."""
    nanos = round(seconds * _NANOS)
    if nanos == 0:
        return "0s"
    sign, nanos = ("-", -nanos) if nanos < 0 else ("", nanos)
    if nanos < _NANOS:
        for unit, digits in (("ms", 6), ("µs", 3), ("ns", 0)):
            if nanos >= 10**digits:
                return f"{sign}{_fraction(nanos, digits)}{unit}"
    minutes, rest = divmod(nanos, 60 * _NANOS)
    hours, minutes = divmod(minutes, 60)
    text = f"{_fraction(rest, 9)}s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    return f"{sign}{minutes}m{text}" if minutes else f"{sign}{text}"
