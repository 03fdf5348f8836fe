"""Watch over HTTP: a stream of newline-delimited JSON events, as kube-apiserver sends them.

From a resourceVersion the stream replays the history after it; unset or "0"
starts with synthetic ADDED events for the current state. A version older than
the history is answered 200 with a single ERROR event carrying a 410 Expired
Status (what the real watch cache does). With `allowWatchBookmarks` BOOKMARK
events come every `bookmark_interval` seconds and once more before the stream
ends at `timeoutSeconds`; `sendInitialEvents=true` ends the initial events with
the `k8s.io/initial-events-end` bookmark.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import web
from multidict import MultiDict

from engine.cluster.apiserver.endpoints import params
from engine.cluster.apiserver.endpoints.responses import JSON, as_version, table_bytes
from engine.cluster.apiserver.endpoints.routes import Target
from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.printing.tables import wants_table
from engine.cluster.apiserver.registry.listing import ListQuery, list_page
from engine.cluster.apiserver.storage.objects import Entry, Obj
from engine.cluster.apiserver.storage.watch import Delivery

if TYPE_CHECKING:
    from engine.cluster.apiserver.registry.store import Store


@dataclass(frozen=True)
class WatchSettings:
    """Server-wide watch timing."""

    bookmark_interval: float = 10.0
    # A watch without timeoutSeconds ends after a random time in this range, as the
    # real server spreads reconnections (its --min-request-timeout is 1800 s).
    default_timeout: tuple[float, float] = (1800.0, 3600.0)


def _matcher(query: ListQuery) -> Any:
    namespace = query.namespace
    if namespace is None and query.labels is None and query.fields is None:
        return None

    def matches(obj: Obj) -> bool:
        if namespace is not None and obj["metadata"].get("namespace") != namespace:
            return False
        return query.matches(Entry(obj))

    return matches


async def stream_watch(
    request: web.Request, store: Store, target: Target, query: ListQuery, settings: WatchSettings
) -> web.StreamResponse:
    rt = target.rt
    if target.name is not None:
        query = _with_name(rt, query, target.name, request)
    timeout = params.integer(request.query, "timeoutSeconds")
    bookmarks = params.flag(request.query, "allowWatchBookmarks")
    initial_end = params.flag(request.query, "sendInitialEvents")
    as_table = wants_table(request.headers.get("Accept", ""))
    since = None if initial_end else query.not_older_than(store.table.rv)
    initial = [] if since is not None else list_page(store, rt, _unpaged(query)).entries
    response = web.StreamResponse(status=200, headers={"Content-Type": JSON})
    response.enable_chunked_encoding()
    try:
        watcher = store.hub.subscribe(rt.key, since=since, matcher=_matcher(query), initial=initial)
    except ApiError as exc:
        await response.prepare(request)
        await response.write(orjson.dumps({"type": "ERROR", "object": exc.to_status()}) + b"\n")
        await response.write_eof()
        return response
    try:
        await response.prepare(request)
        loop = asyncio.get_running_loop()
        limit = timeout if timeout is not None else random.uniform(*settings.default_timeout)
        deadline = loop.time() + max(0, limit)
        if initial_end:
            await _send(response, request, target, watcher.take(), as_table)
            await response.write(_bookmark(rt.kind, rt.api_version, store.table.rv, end=True))
        next_bookmark = loop.time() + settings.bookmark_interval
        while not watcher.closed:
            now = loop.time()
            if now >= deadline:
                break
            wake = min(deadline, next_bookmark) if bookmarks else deadline
            await watcher.wait(wake - now)
            await _send(response, request, target, watcher.take(), as_table)
            if bookmarks and loop.time() >= next_bookmark:
                await response.write(_bookmark(rt.kind, rt.api_version, store.table.rv))
                next_bookmark = loop.time() + settings.bookmark_interval
        if bookmarks and not watcher.overflowed:
            await response.write(_bookmark(rt.kind, rt.api_version, store.table.rv))
        await response.write_eof()
    except (ConnectionResetError, ConnectionError):
        pass
    finally:
        watcher.close()
    return response


async def _send(
    response: web.StreamResponse,
    request: web.Request,
    target: Target,
    deliveries: list[Delivery],
    as_table: bool,
) -> None:
    if not deliveries:
        return
    rt = target.rt
    lines = []
    for event_type, entry in deliveries:
        if as_table:
            body = table_bytes(rt, [entry], {"resourceVersion": _rv(entry)}, request)
        elif entry.obj.get("apiVersion") == rt.api_version:
            body = entry.raw()
        else:
            body = orjson.dumps(as_version(rt, entry))
        lines.append(b'{"type":"' + event_type.encode() + b'","object":' + body + b"}\n")
    await response.write(b"".join(lines))


def _rv(entry: Entry) -> str:
    return str(entry.obj["metadata"]["resourceVersion"])


def _bookmark(kind: str, api_version: str, rv: int, *, end: bool = False) -> bytes:
    metadata: dict[str, Any] = {"resourceVersion": str(rv)}
    if end:
        metadata["annotations"] = {"k8s.io/initial-events-end": "true"}
    obj = {"kind": kind, "apiVersion": api_version, "metadata": metadata}
    return orjson.dumps({"type": "BOOKMARK", "object": obj}) + b"\n"


def _unpaged(query: ListQuery) -> ListQuery:
    return ListQuery(namespace=query.namespace, labels=query.labels, fields=query.fields)


def _with_name(rt: Any, query: ListQuery, name: str, request: web.Request) -> ListQuery:
    """A watch of one object (`/watch/.../NAME` or `GET .../NAME?watch=1`)."""
    selector = f"metadata.name={name}"
    existing = request.query.get("fieldSelector")
    merged = MultiDict(request.query)
    merged["fieldSelector"] = f"{existing},{selector}" if existing else selector
    return params.list_query(rt, query.namespace, merged, watch=True)
