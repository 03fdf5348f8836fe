"""Watching one object until a test holds: client-go's watchtools.Until, for one object.

One read gives the object and the resourceVersion to watch from; every version the
server sends after it is tested at once, so a caller learns of a change as soon as it
is written, at the cost of one open request. A watch the server ends (its timeout) is
opened again from the object's last version; an expired resourceVersion (410) or a
dropped connection is answered by reading the object again. This and the informer are
the only watch loops outside the API server.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Generator
from contextlib import closing
from typing import Any

from loguru import logger

from engine.kube.client import KubeClient
from engine.kube.errors import Gone, NotFound, Unavailable
from engine.kube.resources import Resource

Obj = dict[str, Any]

RETRY_S = 0.5
"""The pause before reading the object again after the connection to the server dropped."""


class Deleted(Exception):  # noqa: N818 (what happened, as NotFound)
    """The object was deleted while it was watched; `last` is the version seen last."""

    def __init__(self, last: Obj) -> None:
        super().__init__("deleted while watched")
        self.last = last


class TimedOut(Exception):  # noqa: N818 (what happened)
    """The test did not hold within the time given; `last` is the version seen last."""

    def __init__(self, last: Obj) -> None:
        super().__init__("timed out")
        self.last = last


def watch_until(
    client: KubeClient, resource: Resource, obj: Obj, *, done: Callable[[Obj], bool],
    timeout: float, on_version: Callable[[Obj], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Obj:
    """The object once `done(version)` holds, starting from `obj` as just read.

    `on_version` sees every version, the first one included. Raises `Deleted`,
    `TimedOut`, or the client's error when reading the object again is refused;
    whatever `done` raises goes through.
    """
    deadline = clock() + timeout
    if on_version is not None:
        on_version(obj)
    while not done(obj):
        remaining = deadline - clock()
        if remaining <= 0:
            raise TimedOut(obj)
        try:
            with closing(_versions(client, resource, obj, remaining)) as versions:
                for version in versions:
                    obj = version
                    if on_version is not None:
                        on_version(obj)
                    if done(obj) or clock() >= deadline:
                        break
        except Gone:
            obj = _read_again(client, resource, obj)
        except Unavailable as exc:
            logger.debug(f"the watch of {resource.plural}/{obj['metadata']['name']} broke "
                         f"({exc}); reading it again")
            time.sleep(min(RETRY_S, max(0.0, deadline - clock())))
            obj = _read_again(client, resource, obj)
    return obj


def _versions(client: KubeClient, resource: Resource, obj: Obj, seconds: float
              ) -> Generator[Obj, None, None]:
    """Versions of the object newer than `obj`, until the server ends the watch after
    `seconds`."""
    metadata = obj["metadata"]
    stream = client.watch(resource, metadata.get("namespace"),
                          resource_version=str(metadata["resourceVersion"]),
                          timeout_seconds=max(1, math.ceil(seconds)))
    try:
        for event in stream:
            version = event.get("object") or {}
            if (version.get("metadata") or {}).get("name") != metadata["name"]:
                continue
            if event.get("type") == "DELETED":
                raise Deleted(obj)
            if event.get("type") in ("ADDED", "MODIFIED"):
                yield version
    finally:
        stream.close()


def _read_again(client: KubeClient, resource: Resource, obj: Obj) -> Obj:
    metadata = obj["metadata"]
    try:
        return client.get(resource, metadata["name"], metadata.get("namespace"))
    except NotFound as exc:
        raise Deleted(obj) from exc
