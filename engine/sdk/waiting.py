"""Waiting for a job's conditions by watching it, not by polling.

One read gives the job and the resourceVersion to watch from; every version the
server sends after it is judged at once, so a caller learns of a success or failure
as soon as the engine writes it, at the cost of one open request. A watch the server
ends (its timeout) is opened again from the job's last version; an expired
resourceVersion (410) or a dropped connection is answered by reading the job again.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Generator, Mapping
from contextlib import closing
from typing import Any

from loguru import logger

from engine.api.conditions import get_condition
from engine.kube.client import KubeClient
from engine.kube.errors import ApiError, Gone, NotFound, Unavailable
from engine.kube.resources import Resource
from engine.sdk.errors import (
    JobFailedError,
    JobNotFoundError,
    JobTimeoutError,
    describe,
    refused,
)

FAILED = "Failed"
_RETRY_S = 0.5
"""The pause before reading the job again after the connection to the server dropped."""

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
    deadline = clock() + timeout
    if on_version is not None:
        on_version(job)
    while not reached(job, expected):
        remaining = deadline - clock()
        if remaining <= 0:
            raise JobTimeoutError(job, expected, timeout)
        try:
            with closing(_versions(client, resource, job, remaining)) as versions:
                for version in versions:
                    job = version
                    if on_version is not None:
                        on_version(job)
                    if reached(job, expected) or clock() >= deadline:
                        break
        except Gone:
            job = _read_again(client, resource, job)
        except Unavailable as exc:
            logger.debug(f"the watch of {describe(job)} broke ({exc}); reading it again")
            time.sleep(min(_RETRY_S, max(0.0, deadline - clock())))
            job = _read_again(client, resource, job)
    return job


def _versions(client: KubeClient, resource: Resource, job: Obj, seconds: float
              ) -> Generator[Obj, None, None]:
    """Versions of the job newer than `job`, until the server ends the watch after `seconds`."""
    metadata = job["metadata"]
    stream = client.watch(resource, metadata["namespace"],
                          resource_version=str(metadata["resourceVersion"]),
                          timeout_seconds=max(1, math.ceil(seconds)))
    try:
        for event in stream:
            obj = event.get("object") or {}
            if (obj.get("metadata") or {}).get("name") != metadata["name"]:
                continue
            if event.get("type") == "DELETED":
                raise JobNotFoundError(f"{describe(job)} was deleted while waiting for it")
            if event.get("type") in ("ADDED", "MODIFIED"):
                yield obj
    finally:
        stream.close()


def _read_again(client: KubeClient, resource: Resource, job: Obj) -> Obj:
    metadata = job["metadata"]
    try:
        return client.get(resource, metadata["name"], metadata["namespace"])
    except NotFound as exc:
        raise JobNotFoundError(f"{describe(job)} was deleted while waiting for it") from exc
    except ApiError as exc:
        raise refused(exc, f"read {describe(job)}") from exc
