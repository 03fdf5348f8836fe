"""The node's HTTP client to the API server: JSON requests and watch streams over urllib3.

The embedded cluster may not import the official `kubernetes` client (that is
the controller's), and the node needs only a handful of calls, so this is a
small client with the bearer token and the server's CA. Every failure is an
`ApiError` carrying the HTTP status (0 when the server could not be reached).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import urllib3
from urllib3.exceptions import HTTPError
from urllib3.util import Retry, Timeout

JSON_TYPE = "application/json"
MERGE_PATCH_TYPE = "application/merge-patch+json"
_REQUEST_TIMEOUT = Timeout(connect=5.0, read=30.0)
# Bookmarks arrive every few seconds, so a silent watch for this long is a dead connection.
_WATCH_TIMEOUT = Timeout(connect=5.0, read=60.0)
_POOL_SIZE = 16


class ApiError(Exception):
    """A request that did not succeed; `status` 0 means no answer from the server."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message


def pod_path(namespace: str, name: str, subresource: str | None = None) -> str:
    path = f"/api/v1/namespaces/{quote(namespace)}/pods/{quote(name)}"
    return f"{path}/{subresource}" if subresource else path


def _error(response: urllib3.BaseHTTPResponse) -> ApiError:
    try:
        body = json.loads(response.data or b"{}")
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    message = str(body.get("message") or response.data[:200].decode(errors="replace"))
    return ApiError(response.status, str(body.get("reason") or "Unknown"), message)


class WatchStream:
    """The events of one watch request, as dicts; `close` ends it from any thread."""

    def __init__(self, response: urllib3.BaseHTTPResponse) -> None:
        self._response = response
        self._closing = threading.Lock()
        self._closed = False

    def __iter__(self) -> Iterator[dict[str, Any]]:
        pending = b""
        try:
            for chunk in self._response.stream(None):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield json.loads(line)
        except HTTPError as exc:
            raise ApiError(0, "WatchBroken", str(exc)) from exc

    def close(self) -> None:
        with self._closing:
            if self._closed:
                return
            self._closed = True
        # Unblocks a read in progress in another thread; a finished stream is already released,
        # and a socket the stream already closed (the server ended it) has nothing to unblock.
        with contextlib.suppress(RuntimeError, OSError):
            self._response.shutdown()
        self._response.release_conn()


class NodeApi:
    """JSON calls to one API server with a bearer token (and the CA that signed its cert)."""

    def __init__(self, url: str, token: str, ca_file: Path | None) -> None:
        self._base = url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}", "Accept": JSON_TYPE,
                         "User-Agent": "jobmachine-node"}
        tls: dict[str, Any] = {"ca_certs": str(ca_file)} if ca_file else {}
        retries = Retry(total=3, connect=3, read=0, redirect=0, status=0, other=0,
                        backoff_factor=0.2)
        # Blocking pools: concurrent pod workers wait for a connection instead of opening more.
        self._pool = urllib3.PoolManager(maxsize=_POOL_SIZE, block=True, retries=retries,
                                         timeout=_REQUEST_TIMEOUT, **tls)
        self._watch_pool = urllib3.PoolManager(maxsize=4, retries=retries,
                                               timeout=_WATCH_TIMEOUT, **tls)

    def _url(self, path: str, query: Mapping[str, Any] | None) -> str:
        return self._base + path + (f"?{urlencode(query)}" if query else "")

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: Mapping[str, Any] | None = None,
        content_type: str = JSON_TYPE,
    ) -> dict[str, Any]:
        headers = dict(self._headers)
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = json.dumps(body).encode()
        try:
            response = self._pool.request(method, self._url(path, query), body=data,
                                          headers=headers)
        except HTTPError as exc:
            raise ApiError(0, "Unreachable", str(exc)) from exc
        if response.status >= 300:
            raise _error(response)
        answer = json.loads(response.data) if response.data else {}
        return answer if isinstance(answer, dict) else {}

    def get(self, path: str) -> dict[str, Any]:
        return self.request("GET", path)

    def post(self, path: str, body: Any) -> dict[str, Any]:
        return self.request("POST", path, body=body)

    def merge_patch(self, path: str, body: Any) -> dict[str, Any]:
        return self.request("PATCH", path, body=body, content_type=MERGE_PATCH_TYPE)

    def delete(self, path: str, body: Any = None) -> dict[str, Any]:
        return self.request("DELETE", path, body=body)

    def watch(self, path: str, query: Mapping[str, Any]) -> WatchStream:
        """Open a watch; the caller iterates the stream and closes it."""
        try:
            response = self._watch_pool.request(
                "GET", self._url(path, {**query, "watch": "true"}), headers=self._headers,
                preload_content=False,
            )
        except HTTPError as exc:
            raise ApiError(0, "Unreachable", str(exc)) from exc
        if response.status >= 300:
            error = _error(response)
            response.release_conn()
            raise error
        return WatchStream(response)

    def close(self) -> None:
        self._pool.clear()
        self._watch_pool.clear()
