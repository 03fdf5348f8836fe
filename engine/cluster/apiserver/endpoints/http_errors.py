"""Requests that are not HTTP the server can read, answered with a Status and logged quietly.

aiohttp answers a request it cannot parse (a request line or header past its
limits, too many headers, garbage) with plain text and logs an ERROR with a
traceback, before any authentication: anyone who can connect could fill the
log. Here such a request gets a `Status` body like every other answer, with
Go's code for the case (431 Request Header Fields Too Large once the request
line or headers are too large, as net/http answers; 400 otherwise), and at most
one WARNING line per client address per minute, never a traceback.

The limits follow kube-apiserver's (net/http's MaxHeaderBytes of 1 MiB), so a
long label selector that a real cluster accepts is accepted here too.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any

import orjson
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError, LineTooLong
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest
from aiohttp.web_response import StreamResponse
from loguru import logger

MAX_REQUEST_LINE = 1 << 20
"""Longest request line (method, path and query): net/http's MaxHeaderBytes."""
MAX_HEADER_FIELD = 64 << 10
"""Longest single header line."""
MAX_HEADERS = 128
"""Most header lines in one request."""
HTTP_LIMITS: dict[str, Any] = {"max_line_size": MAX_REQUEST_LINE,
                               "max_field_size": MAX_HEADER_FIELD, "max_headers": MAX_HEADERS}
"""The aiohttp handler arguments that set these limits."""

_QUIET_S = 60.0
_REMEMBERED = 1024


class _Throttle:
    """At most one log line per key per `quiet_s`, remembering a bounded number of keys."""

    def __init__(self, quiet_s: float = _QUIET_S) -> None:
        self._quiet_s = quiet_s
        self._last: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def allows(self, key: str) -> bool:
        now = time.monotonic()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self._quiet_s:
                return False
            self._last[key] = now
            self._last.move_to_end(key)
            while len(self._last) > _REMEMBERED:
                self._last.popitem(last=False)
            return True


_THROTTLE = _Throttle()


def unreadable_request_status(exc: HttpProcessingError) -> tuple[int, dict[str, Any]]:
    """The code and Status body for a request the HTTP parser refused."""
    too_large = isinstance(exc, LineTooLong) or "Too many headers" in str(exc.message)
    if too_large:
        code, message = 431, ("Request Header Fields Too Large: the request line may be at most "
                              f"{MAX_REQUEST_LINE} bytes, a header line {MAX_HEADER_FIELD} "
                              f"bytes, with at most {MAX_HEADERS} headers")
    else:
        code, message = 400, f"the request could not be read as HTTP: {exc.message}"
    return code, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                  "message": message, "reason": "BadRequest" if code == 400 else "",
                  "code": code}


class _StatusRequestHandler(RequestHandler):
    """aiohttp's connection handler, answering unreadable requests with a Status."""

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> StreamResponse:
        if not isinstance(exc, HttpProcessingError):
            return super().handle_error(request, status, exc, message)
        code, body = unreadable_request_status(exc)
        if not body["reason"]:
            del body["reason"]
        source = str(request.remote or "unknown")
        if _THROTTLE.allows(source):
            logger.bind(client=source).warning(
                f"refused an unreadable request from {source} with {code}: {body['message']} "
                f"(the parser said: {str(exc.message)[:120]}); further ones from there are not "
                "logged for a minute")
        response = web.Response(status=code, body=orjson.dumps(body),
                                content_type="application/json")
        response.force_close()
        return response


class _StatusServer(web.Server):
    def __call__(self) -> RequestHandler:
        return _StatusRequestHandler(self, loop=self._loop, **self._kwargs)


class StatusAppRunner(web.AppRunner):
    """An AppRunner whose connections answer unreadable requests with a Status (above)."""

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        server.__class__ = _StatusServer
        return server
