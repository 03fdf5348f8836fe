"""A live page's stream stops redrawing once the browser has closed its connection, at the
next redraw, not at the next write that fails (up to a keep-alive later): a gone viewer's
stream renders nothing more and so lets the web view's watches rest."""

from __future__ import annotations

import asyncio
from unittest import mock

from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from engine.app.web.stream import Streams, Update, browser_gone


def _request(closing: list[bool]) -> web.Request:
    transport = mock.Mock()
    transport.is_closing.side_effect = lambda: closing[0]
    return make_mocked_request("GET", "/stream", transport=transport)


def _push(request: web.Request, closing: list[bool], *, close_after: int) -> int:
    """How many times the stream rendered, the browser going after `close_after` renders."""
    renders = 0
    response = mock.Mock(spec=web.StreamResponse)
    response.write = mock.AsyncMock()

    async def render() -> Update:
        nonlocal renders
        renders += 1
        if renders >= close_after:
            closing[0] = True
        if renders > 5:  # a stream that never stops: end the test, not the suite
            raise RuntimeError("rendered on after the browser went")
        return {"part": str(renders)}

    asyncio.run(Streams()._push(request, response, asyncio.Event(), render, tick_s=0.0))
    return renders


def test_a_stream_whose_browser_went_renders_nothing() -> None:
    closing = [True]
    assert _push(_request(closing), closing, close_after=1) == 0


def test_a_stream_stops_at_the_first_redraw_after_its_browser_went() -> None:
    closing = [False]
    assert _push(_request(closing), closing, close_after=2) == 2


def test_a_request_without_a_connection_is_gone() -> None:
    request = make_mocked_request("GET", "/stream")
    request.protocol.transport = None  # what aiohttp leaves once the connection is lost
    assert browser_gone(request)
    closing = [False]
    assert not browser_gone(_request(closing))
