"""HTTP/1.1 to the API server over the standard library's `http.client`, with kept-alive
connections shared by all threads.

The official client sends through urllib3. Measured on the embedded server, urllib3 costs
0.15-0.2 ms of CPU per request against 0.07 ms for `http.client`; at nine requests per job
lifecycle that was the largest single cost of the engine. What urllib3 adds (retries,
redirects, many hosts per pool) the engine does not use: it talks to one server, retries
through its own queue and follows no redirects.

Answers' headers are read by `_Headers`, not by `http.client`'s `email.parser`, which cost
2-3% of the engine's CPU (every answer, for the four header fields read: the length, the
transfer coding and whether the connection stays open).
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
from dataclasses import dataclass, field
from typing import Any

TRANSPORT_ERRORS: tuple[type[Exception], ...] = (http.client.HTTPException, OSError, ValueError)
"""What a broken or closed connection raises while a request is sent or its answer read."""

_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError,
          ConnectionAbortedError, ssl.SSLEOFError)
"""How a kept-alive connection the peer closed or reset while idle fails (over TLS a reset
is an EOF), before any answer: the request was not taken, so it is sent again."""


@dataclass(frozen=True)
class Endpoint:
    """Where the API server is and how to reach it (from a kubeconfig or the pod's account)."""

    scheme: str
    host: str
    port: int
    tls: ssl.SSLContext | None = None
    server_name: str | None = None
    """The name the server's certificate must carry, when not the host's (`tls-server-name`)."""
    proxy: tuple[str, int] | None = None
    proxy_headers: dict[str, str] = field(default_factory=dict)


class _Headers(dict[str, str]):
    """An answer's header fields by lower-case name; a field given twice has its values
    joined by ", " (as RFC 9110 section 5.3 combines them), a line folded onto the next
    (obsolete, RFC 9112 section 5.2) is one value. What `http.client` asks of them:
    `get` (any case) and `get_all`."""

    @classmethod
    def parse(cls, lines: list[bytes]) -> _Headers:
        """The fields of header lines as `http.client` reads them (ending with the empty
        line); a line without a colon is left out."""
        headers = cls()
        last: str | None = None
        for raw in lines:
            line = raw.decode("iso-8859-1").rstrip("\r\n")
            if not line:
                break
            if line[0] in " \t":
                if last is not None:
                    headers[last] = f"{headers[last]} {line.strip()}".strip()
                continue
            name, colon, value = line.partition(":")
            if not colon:
                continue
            last, value = name.strip().lower(), value.strip()
            headers[last] = f"{headers[last]}, {value}" if last in headers else value
        return headers

    def get(self, name: str, default: Any = None) -> Any:
        return super().get(name.lower(), default)

    def get_all(self, name: str, failobj: Any = None) -> Any:
        value = self.get(name)
        return failobj if value is None else [value]


class _Answer(http.client.HTTPResponse):
    """`http.client`'s response with its headers read by `_Headers`; the rest of `begin`
    as the standard library's: the status line (past any 100 Continue), then whether the
    body is chunked, its length and whether the connection closes after it."""

    def begin(self) -> None:
        if self.headers is not None:
            return
        while True:
            version, status, reason = self._read_status()
            if status != http.client.CONTINUE:
                break
            http.client._read_headers(self.fp)
        self.code = self.status = status
        self.reason = reason.strip()
        if version in ("HTTP/1.0", "HTTP/0.9"):
            self.version = 10
        elif version.startswith("HTTP/1."):
            self.version = 11
        else:
            raise http.client.UnknownProtocol(version)
        headers = _Headers.parse(http.client._read_headers(self.fp))
        self.headers = self.msg = headers
        self.chunked = str(headers.get("transfer-encoding") or "").lower() == "chunked"
        self.chunk_left = None
        self.will_close = self._check_close()
        self.length = None
        length = headers.get("content-length")
        if length and not self.chunked:
            with contextlib.suppress(ValueError):
                self.length = int(length) if int(length) >= 0 else None
        if (status in (http.client.NO_CONTENT, http.client.NOT_MODIFIED)
                or 100 <= status < 200 or self._method == "HEAD"):
            self.length = 0
        if not self.will_close and not self.chunked and self.length is None:
            self.will_close = True


class _PlainConnection(http.client.HTTPConnection):
    """A plain-HTTP connection whose answers are `_Answer`s."""

    response_class = _Answer


class _TLSConnection(http.client.HTTPSConnection):
    """An HTTPS connection that may check the certificate against another name than the host."""

    response_class = _Answer

    def __init__(self, endpoint: Endpoint, host: str, port: int, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=endpoint.tls)
        self._server_name = endpoint.server_name
        self._context = endpoint.tls

    def connect(self) -> None:
        if self._server_name is None or self._context is None:
            super().connect()
            return
        http.client.HTTPConnection.connect(self)
        self.sock = self._context.wrap_socket(self.sock, server_hostname=self._server_name)


class Response:
    """One answer; its connection goes back to the pool once the body has been read."""

    def __init__(
        self, pool: ConnectionPool, connection: http.client.HTTPConnection,
        answer: http.client.HTTPResponse,
    ) -> None:
        self._pool = pool
        self._connection: http.client.HTTPConnection | None = connection
        self._answer = answer
        self.status = answer.status

    def read(self) -> bytes:
        """The whole body; the connection is then given back (or closed if it must be)."""
        try:
            return self._answer.read()
        finally:
            self.release()

    def read1(self, size: int) -> bytes:
        """At most `size` bytes as soon as some are there (for watch streams)."""
        return self._answer.read1(size)

    def shutdown(self) -> None:
        """Wake a read blocked in another thread by shutting the socket down."""
        connection = self._connection
        if connection is not None and connection.sock is not None:
            with contextlib.suppress(OSError):
                connection.sock.shutdown(socket.SHUT_RDWR)

    def release(self) -> None:
        """Give the connection back if the body was read to its end, else close it."""
        connection, self._connection = self._connection, None
        if connection is None:
            return
        if self._answer.isclosed() and not self._answer.will_close:
            self._pool.give_back(connection)
        else:
            connection.close()

    def close(self) -> None:
        """Close the connection, whatever was read."""
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()


class ConnectionPool:
    """Kept-alive connections to one endpoint; up to `size` idle ones are kept."""

    def __init__(self, endpoint: Endpoint, size: int) -> None:
        self._endpoint = endpoint
        self._size = size
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._closed = False

    def request(
        self, method: str, target: str, *, body: bytes | None, headers: dict[str, str],
        timeout: tuple[float, float],
    ) -> Response:
        """Send one request and read the answer's status and headers.

        A kept-alive connection the server closed meanwhile is noticed on the first write or
        read, before any answer: the request is then sent once more on a new connection.
        """
        endpoint = self._endpoint
        if endpoint.proxy is not None and endpoint.scheme == "http":
            headers = {**endpoint.proxy_headers, **headers}
        while True:
            connection, reused = self._take(timeout[0])
            try:
                if connection.sock is not None:
                    connection.sock.settimeout(timeout[1])
                connection.request(method, self._target(target), body=body, headers=headers)
                answer = connection.getresponse()
            except _STALE:
                connection.close()
                if reused:
                    continue
                raise
            except BaseException:
                connection.close()
                raise
            return Response(self, connection, answer)

    def give_back(self, connection: http.client.HTTPConnection) -> None:
        """Keep an idle connection for the next request, or close it if enough are kept."""
        with self._lock:
            if not self._closed and len(self._idle) < self._size:
                self._idle.append(connection)
                return
        connection.close()

    def close(self) -> None:
        """Close every idle connection; connections in use close when they are given back."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def _take(self, connect_timeout: float) -> tuple[http.client.HTTPConnection, bool]:
        with self._lock:
            if self._idle:
                return self._idle.pop(), True
        return self._new(connect_timeout), False

    def _new(self, connect_timeout: float) -> http.client.HTTPConnection:
        endpoint = self._endpoint
        host, port = endpoint.proxy or (endpoint.host, endpoint.port)
        connection: http.client.HTTPConnection
        if endpoint.scheme == "https":
            connection = _TLSConnection(endpoint, host, port, connect_timeout)
            if endpoint.proxy is not None:
                connection.set_tunnel(endpoint.host, endpoint.port, endpoint.proxy_headers)
        else:
            connection = _PlainConnection(host, port, timeout=connect_timeout)
        connection.connect()
        return connection

    def _target(self, target: str) -> str:
        """Through a plain-HTTP proxy the request line names the whole URL."""
        endpoint = self._endpoint
        if endpoint.proxy is not None and endpoint.scheme == "http":
            host = f"[{endpoint.host}]" if ":" in endpoint.host else endpoint.host
            return f"http://{host}:{endpoint.port}{target}"
        return target
