"""Waiting for a job's conditions by watching it, not by polling.

The watching is the client layer's (`engine.kube.until`): every version the server
sends is judged at once, so a caller learns of a success or failure as soon as the
engine writes it, at the cost of one open request. This module says what is judged
(the expected conditions, and Failed) and what each way of ending means to a caller.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from engine.api.conditions import get_condition
from engine.kube.client import KubeClient
from engine.kube.errors import ApiError
from engine.kube.resources import Resource
from engine.kube.until import Deleted, TimedOut, watch_until
from engine.sdk.errors import (
    JobFailedError,
    JobNotFoundError,
    JobTimeoutError,
    describe,
    refused,
)

FAILED = "Failed"

Obj = dict[str, Any]


def reached(job: Mapping[str, Any], expected: frozenset[str]) -> bool:
    """Whether one of the `expected` conditions is True on the job.

    Raises JobFailedError when the job failed and Failed is not among them: waiting
    longer could only end in a timeout.
    """
    conditions = (job.get("status") or {}).get("conditions") or []
    if any(c.get("status") == "True" for c in conditions if c.get("type") in expected):
        return True
    failed = get_condition(conditions, FAILED)
    if failed is not None and failed.get("status") == "True":
        raise JobFailedError(job, str(failed.get("reason") or ""),
                             str(failed.get("message") or ""))
    return False


def wait_for_conditions(
    client: KubeClient, resource: Resource, job: Obj, *, expected: frozenset[str],
    timeout: float, on_version: Callable[[Obj], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Obj:
    """The job once one of `expected` is True, starting from `job` as just read.

    `on_version` sees every version of the job, the first one included (progress).
    """
    try:
        return watch_until(client, resource, job, done=lambda v: reached(v, expected),
                           timeout=timeout, on_version=on_version, clock=clock)
    except Deleted as exc:
        raise JobNotFoundError(f"{describe(exc.last)} was deleted while waiting for it") from exc
    except TimedOut as exc:
        raise JobTimeoutError(exc.last, expected, timeout) from exc
    except ApiError as exc:
        raise refused(exc, f"read {describe(job)}") from exc
