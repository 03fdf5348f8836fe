"""The pod `log` subresource, served from the files the local node writes.

A container's output lives in `LOGS_DIR/<namespace>/<pod>/<container>.log`
(`<container>.previous.log` for the previous run). Query parameters:
`container`, `follow`, `tailLines`, `limitBytes`, `previous`; `timestamps`,
`sinceSeconds` and `sinceTime` are accepted and ignored (the files hold no
per-line times). Errors read as the real server's: a container that has not
started is a 400 "is waiting to start".
"""

from __future__ import annotations

import asyncio
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from aiohttp import web

from engine.cluster.apiserver.endpoints import params
from engine.cluster.apiserver.errors import bad_request
from engine.cluster.apiserver.registry.builtins import PODS
from engine.cluster.apiserver.storage.objects import Entry, Obj

if TYPE_CHECKING:
    from engine.cluster.apiserver.registry.store import Store

FOLLOW_POLL_SECONDS = 0.2
_CHUNK = 64 * 1024


def log_path(logs_dir: Path, namespace: str, pod: str, container: str, *, previous: bool) -> Path:
    suffix = ".previous.log" if previous else ".log"
    return logs_dir / namespace / pod / f"{container}{suffix}"


def _container_names(pod: Obj) -> list[str]:
    spec = pod.get("spec") or {}
    return [
        c.get("name", "")
        for field in ("initContainers", "containers")
        for c in spec.get(field) or ()
        if isinstance(c, dict)
    ]


def _status_of(pod: Obj, container: str) -> dict[str, Any]:
    status = pod.get("status") or {}
    for field in ("initContainerStatuses", "containerStatuses"):
        for entry in status.get(field) or ():
            if entry.get("name") == container:
                return dict(entry)
    return {}


def _choose_container(pod: Obj, wanted: str | None) -> str:
    name = pod["metadata"]["name"]
    containers = _container_names(pod)
    main = [c.get("name", "") for c in (pod.get("spec") or {}).get("containers") or ()]
    if not wanted:
        if len(main) == 1:
            return str(main[0])
        raise bad_request(
            f"a container name must be specified for pod {name}, choose one of: "
            f"[{' '.join(containers)}]"
        )
    if wanted not in containers:
        raise bad_request(f"container {wanted} is not valid for pod {name}")
    return wanted


def _not_started(pod: Obj, container: str, previous: bool) -> NoReturn:
    name = pod["metadata"]["name"]
    if previous:
        raise bad_request(f'previous terminated container "{container}" in pod "{name}" not found')
    waiting = (_status_of(pod, container).get("state") or {}).get("waiting") or {}
    reason = waiting.get("reason") or "ContainerCreating"
    raise bad_request(f'container "{container}" in pod "{name}" is waiting to start: {reason}')


def _tail(data: bytes, lines: int | None) -> bytes:
    if lines is None:
        return data
    if lines <= 0:
        return b""
    kept = deque(data.splitlines(keepends=True), maxlen=lines)
    return b"".join(kept)


async def serve_log(
    request: web.Request, store: Store, pod_entry: Entry, logs_dir: Path
) -> web.StreamResponse:
    pod = pod_entry.obj
    query = request.query
    previous = params.flag(query, "previous")
    container = _choose_container(pod, query.get("container"))
    metadata = pod["metadata"]
    path = log_path(logs_dir, metadata["namespace"], metadata["name"], container, previous=previous)
    if not path.exists():
        _not_started(pod, container, previous)
    data = _tail(path.read_bytes(), params.integer(query, "tailLines"))
    limit = params.integer(query, "limitBytes")
    if limit is not None:
        data = data[: max(0, limit)]
    if not params.flag(query, "follow") or previous:
        return web.Response(body=data, content_type="text/plain")
    response = web.StreamResponse(headers={"Content-Type": "text/plain"})
    response.enable_chunked_encoding()
    await response.prepare(request)
    await response.write(data)
    await _follow(response, store, pod, container, path=path, offset=path.stat().st_size)
    await response.write_eof()
    return response


async def _follow(
    response: web.StreamResponse, store: Store, pod: Obj, container: str, *, path: Path,
    offset: int,
) -> None:
    """Stream what the node appends until the container has terminated or the pod is gone."""
    metadata = pod["metadata"]
    while True:
        current = store.table.get(PODS.key, metadata["namespace"], metadata["name"])
        finished = (
            current is None
            or current.obj["metadata"].get("uid") != metadata.get("uid")
            or "terminated" in (_status_of(current.obj, container).get("state") or {})
        )
        with open(path, "rb") as stream:
            stream.seek(offset)
            while chunk := stream.read(_CHUNK):
                offset += len(chunk)
                await response.write(chunk)
        if finished:
            return
        await asyncio.sleep(FOLLOW_POLL_SECONDS)
