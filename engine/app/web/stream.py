"""Live updates as server-sent events: a page's changed parts, pushed as the watch sees them.

A stream redraws its page's parts when the live model says something it shows changed
(and every few seconds, for ages and log tails), and sends only the parts whose HTML
differs from what it sent last. It ends when the viewer loses access (`denied`: the
page reloads and says why), when the job is gone (`gone`), when the browser goes
away (seen at the next redraw, `browser_gone`), or when the server stops.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import orjson
from aiohttp import web

from engine.app.web.job_page import Parts
from engine.app.web.state import Change, JobKey, LiveJobs

KEEPALIVE_S = 15.0
"""A comment line at least this often keeps proxies and browsers from closing a quiet
stream."""
_KEEPALIVE = b": keep-alive\n\n"


@dataclass(frozen=True)
class Denied:
    """The viewer may no longer see this (logged out, token revoked, RBAC changed)."""


@dataclass(frozen=True)
class Gone:
    """What the page shows no longer exists; `message` says so."""

    message: str


Update = Parts | Denied | Gone
Render = Callable[[], Awaitable[Update]]
Wanted = Callable[[JobKey, Change], bool]


def event(name: str, data: object) -> bytes:
    """One server-sent event whose data is JSON (one line, so one `data:` field)."""
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


def browser_gone(request: web.BaseRequest) -> bool:
    """Whether the browser closed the stream's connection. aiohttp does not cancel a
    handler when its client goes (3.9 on), and a write only fails at the next keep-alive,
    up to `KEEPALIVE_S` later: looked at before each redraw, so a closed stream renders
    nothing more and lets the view's watches rest."""
    transport = request.transport
    return transport is None or transport.is_closing()


class Changes:
    """The parts one stream sent last, to send only what changed."""

    def __init__(self) -> None:
        self._sent: Parts = {}

    def since_last(self, parts: Parts) -> Parts:
        """The parts that differ from those sent before (all of them the first time)."""
        changed = {name: html for name, html in parts.items() if self._sent.get(name) != html}
        self._sent.update(changed)
        return changed


class Streams:
    """Every open stream of one server, so that stopping the server ends them at once."""

    def __init__(self) -> None:
        self._wakes: set[asyncio.Event] = set()
        self.closing = False

    def close_all(self) -> None:
        """End every stream (on the server's loop)."""
        self.closing = True
        for wake in self._wakes:
            wake.set()

    async def serve(
        self, request: web.Request, *, model: LiveJobs, wanted: Wanted, render: Render,
        tick_s: float,
    ) -> web.StreamResponse:
        """Stream `render`'s parts until the viewer, the page or the server goes."""
        response = web.StreamResponse(headers={
            "Content-Type": "text/event-stream", "Cache-Control": "no-store",
            "X-Accel-Buffering": "no",
        })
        await response.prepare(request)
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()

        def changed(key: JobKey, change: Change) -> None:
            if wanted(key, change):
                loop.call_soon_threadsafe(wake.set)

        stop_listening = model.listen(changed)
        self._wakes.add(wake)
        try:
            await self._push(request, response, wake, render, tick_s)
        except ConnectionError:
            pass  # the browser went away
        finally:
            stop_listening()
            self._wakes.discard(wake)
        return response

    async def _push(
        self, request: web.BaseRequest, response: web.StreamResponse, wake: asyncio.Event,
        render: Render, tick_s: float,
    ) -> None:
        changes = Changes()
        loop = asyncio.get_running_loop()
        quiet_since = loop.time()
        while not self.closing and not browser_gone(request):
            update = await render()
            if isinstance(update, Denied):
                await response.write(event("denied", True))
                return
            if isinstance(update, Gone):
                await response.write(event("gone", update.message))
                return
            changed = changes.since_last(update)
            if changed:
                await response.write(event("parts", changed))
                quiet_since = loop.time()
            elif loop.time() - quiet_since >= KEEPALIVE_S:
                await response.write(_KEEPALIVE)
                quiet_since = loop.time()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), timeout=tick_s)
            wake.clear()
