"""What a simulated container does, read from the pod's annotations, pure.

`sim.jobmachine.dev/exit-codes: "137,0"` gives the first container's exit code
per attempt (the last one repeats), `sim.jobmachine.dev/exit-codes.NAME` the
container NAME's (it wins over the first form), and
`sim.jobmachine.dev/run-seconds` how long every attempt runs, and
`sim.jobmachine.dev/termination-message` (`.NAME` for the container NAME) what
every attempt writes at its terminationMessagePath, and
`sim.jobmachine.dev/ready-seconds` (`.NAME`) how long after its start a container with
a readiness probe passes it. This makes tests and demos deterministic without running
anything.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

PREFIX = "sim.jobmachine.dev/"
EXIT_CODES = PREFIX + "exit-codes"
RUN_SECONDS = PREFIX + "run-seconds"
TERMINATION_MESSAGE = PREFIX + "termination-message"
READY_SECONDS = PREFIX + "ready-seconds"
DEFAULT_RUN_SECONDS = 0.2


class SimulationError(Exception):
    """An annotation that does not say what to simulate (the message names it)."""


def _annotations(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return (pod.get("metadata") or {}).get("annotations") or {}


def _container_annotation(pod: Mapping[str, Any], key: str, container: str
                          ) -> tuple[str, str] | None:
    """(annotation key, value) of `key` for this container, if any: `KEY.NAME`, else the plain
    `KEY` for the pod's first container."""
    annotations = _annotations(pod)
    named = f"{key}.{container}"
    if named in annotations:
        return named, str(annotations[named])
    containers = (pod.get("spec") or {}).get("containers") or ()
    first = containers[0].get("name") if containers else None
    if container == first and key in annotations:
        return key, str(annotations[key])
    return None


def parse_exit_codes(key: str, text: str) -> list[int]:
    """'137, 0' -> [137, 0]; every code an integer from 0 to 255."""
    parts = [part.strip() for part in text.split(",")]
    if not text.strip() or any(not part for part in parts):
        raise SimulationError(
            f'annotation {key}: "{text}" is not a comma-separated list of exit codes'
        )
    codes = []
    for part in parts:
        try:
            code = int(part)
        except ValueError:
            raise SimulationError(f'annotation {key}: "{part}" is not an exit code') from None
        if not 0 <= code <= 255:
            raise SimulationError(f"annotation {key}: exit code {code} is not within 0-255")
        codes.append(code)
    return codes


def exit_code(pod: Mapping[str, Any], container: str, attempt: int) -> int:
    """The exit code of the container's `attempt` (1-based); 0 without annotation."""
    found = _container_annotation(pod, EXIT_CODES, container)
    if found is None:
        return 0
    codes = parse_exit_codes(*found)
    return codes[min(max(attempt, 1), len(codes)) - 1]


def _seconds(key: str, text: Any) -> float:
    try:
        seconds = float(str(text).strip())
    except ValueError:
        raise SimulationError(f'annotation {key}: "{text}" is not a number of seconds') from None
    if not math.isfinite(seconds) or seconds < 0:
        raise SimulationError(
            f'annotation {key}: "{text}" is not a finite, non-negative number of seconds'
        )
    return seconds


def run_seconds(pod: Mapping[str, Any]) -> float:
    """How long each simulated attempt runs, in seconds; `math.inf` until it is stopped.

    A pod that says nothing of its simulation (no run-seconds, no exit codes) and whose
    containers are restarted whatever they exit with (restartPolicy Always, the default of
    a bare pod, the only one of a Deployment's or ReplicaSet's) is taken for a server, as
    `kubectl create deployment web --image=nginx` makes: it runs until it is stopped, not
    into CrashLoopBackOff after DEFAULT_RUN_SECONDS."""
    annotations = _annotations(pod)
    text = annotations.get(RUN_SECONDS)
    if text is not None:
        return _seconds(RUN_SECONDS, text)
    if _restarted_always(pod) and not any(key == EXIT_CODES or key.startswith(EXIT_CODES + ".")
                                           for key in annotations):
        return math.inf
    return DEFAULT_RUN_SECONDS


def _restarted_always(pod: Mapping[str, Any]) -> bool:
    return ((pod.get("spec") or {}).get("restartPolicy") or "Always") == "Always"


def ready_seconds(pod: Mapping[str, Any], container: str) -> float:
    """How long after its start the container's readiness probe passes (0: at once)."""
    found = _container_annotation(pod, READY_SECONDS, container)
    return 0.0 if found is None else _seconds(*found)


def termination_message(pod: Mapping[str, Any], container: str) -> str | None:
    """What each attempt of the container writes at its terminationMessagePath, if anything."""
    found = _container_annotation(pod, TERMINATION_MESSAGE, container)
    return found[1] if found else None
