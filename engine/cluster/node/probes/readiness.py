"""A container's readiness as the kubelet's prober keeps it, pure: when the next probe is due
and what a run of results makes of it.

The kubelet starts a container not ready, probes it first once `initialDelaySeconds` have
passed since it started and then every `periodSeconds`, and flips it to ready after
`successThreshold` successes in a row and back to not ready after `failureThreshold`
failures in a row. A container without a readiness probe is ready while it runs (that rule
lives in `Slot.status`). The fields are defaulted by the API server; the same defaults apply
here to a pod written without them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

_DEFAULTS = {"initialDelaySeconds": 0, "periodSeconds": 10, "timeoutSeconds": 1,
             "successThreshold": 1, "failureThreshold": 3}
HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")


@dataclass(frozen=True)
class ProbeSpec:
    """A readiness probe with its timing (seconds) and thresholds."""

    handler: str  # one of HANDLERS, "" when the probe names none
    action: Mapping[str, Any]
    initial_delay: float
    period: float
    timeout: float
    success_threshold: int
    failure_threshold: int


def _number(probe: Mapping[str, Any], name: str) -> int:
    value = probe.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return _DEFAULTS[name] if name != "initialDelaySeconds" or value is None else 0
    return value


def probe_spec(container: Mapping[str, Any]) -> ProbeSpec | None:
    """The container's readiness probe; None when it has none."""
    probe = container.get("readinessProbe")
    if not isinstance(probe, Mapping):
        return None
    handler = next((name for name in HANDLERS if isinstance(probe.get(name), Mapping)), "")
    return ProbeSpec(
        handler=handler,
        action=probe.get(handler) or {} if handler else {},
        initial_delay=float(_number(probe, "initialDelaySeconds")),
        period=float(_number(probe, "periodSeconds")),
        timeout=float(_number(probe, "timeoutSeconds")),
        success_threshold=_number(probe, "successThreshold"),
        failure_threshold=_number(probe, "failureThreshold"),
    )


@dataclass(frozen=True)
class Readiness:
    """One running attempt's readiness: the verdict, the current run of results, and the
    monotonic instant of the next probe."""

    spec: ProbeSpec
    started: float
    due: float
    ready: bool = False
    successes: int = 0
    failures: int = 0


def begin(spec: ProbeSpec, started: float) -> Readiness:
    """A new attempt: not ready, first probed `initialDelaySeconds` after it started."""
    return Readiness(spec, started, started + spec.initial_delay)


def observed(state: Readiness, ok: bool, at: float) -> Readiness:
    """The readiness after a probe that succeeded (`ok`) or failed at `at`; the next probe is
    one period later."""
    successes = state.successes + 1 if ok else 0
    failures = 0 if ok else state.failures + 1
    ready = state.ready
    if ok and successes >= state.spec.success_threshold:
        ready = True
    elif not ok and failures >= state.spec.failure_threshold:
        ready = False
    return replace(state, ready=ready, successes=successes, failures=failures,
                   due=at + state.spec.period)
