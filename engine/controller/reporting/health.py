"""One small HTTP server for probes and scraping: /metrics, /healthz and /readyz.

The stdlib's threading HTTP server on a thread of its own: three fixed answers need no
framework, and the engine stays thread-based. `/readyz` says whether the caches are synced
and, with leader election, whether this engine leads or stands by; it answers 503 while the
API server cannot be reached (the caches are then going stale, and nothing is written).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from loguru import logger

from engine.controller.reporting.metrics import Metrics
from engine.kube.outage import ApiHealth

Answer = tuple[int, str, bytes]
"""HTTP status, content type, body."""

_TEXT = "text/plain; charset=utf-8"


class HealthServer:
    """A running server; `stop` (or leaving the `with` block) shuts it down and joins it."""

    def __init__(self, server: _Server) -> None:
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05},
            name="metrics-health", daemon=True,
        )
        self._thread.start()

    @property
    def port(self) -> int:
        """The port it listens on (the chosen one when asked for port 0)."""
        return int(self._server.server_address[1])

    @property
    def host(self) -> str:
        """The address it listens on."""
        return str(self._server.server_address[0])

    def stop(self) -> None:
        """Stop serving and close the socket; idempotent."""
        if not self._thread.is_alive():
            return
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> HealthServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def serve_metrics_and_health(
    port: int,
    metrics: Metrics,
    ready: Callable[[], bool],
    *,
    is_leader: Callable[[], bool] | None = None,
    api_health: ApiHealth | None = None,
    host: str = "127.0.0.1",
) -> HealthServer:
    """Serve on `host:port` (0 picks a free port) until `stop`.

    `ready` says whether the caches are synced; `is_leader`, given when leader election is on,
    only changes what `/readyz` says (a standby with synced caches is ready too);
    `api_health` (the engine's) makes `/readyz` answer 503 while the API server is unreachable.
    `/healthz` stays 200 meanwhile: the process is fine and recovers by itself.
    """
    routes: dict[str, Callable[[], Answer]] = {
        "/healthz": lambda: (200, _TEXT, b"ok\n"),
        "/readyz": lambda: _readiness(ready, is_leader, api_health),
        "/metrics": lambda: (200, metrics.content_type, metrics.render()),
    }
    return HealthServer(_Server((host, port), routes))


def _readiness(
    ready: Callable[[], bool], is_leader: Callable[[], bool] | None,
    api_health: ApiHealth | None,
) -> Answer:
    if api_health is not None and not api_health.reachable:
        return 503, _TEXT, (f"not ready: the API server is unreachable (for "
                            f"{api_health.down_for():.0f}s)\n").encode()
    try:
        synced = ready()
        role = None if is_leader is None else ("leading" if is_leader() else "standing by")
    except Exception as exc:
        return 503, _TEXT, f"not ready: {exc}\n".encode()
    if not synced:
        return 503, _TEXT, b"not ready: caches not synced\n"
    return 200, _TEXT, b"ok\n" if role is None else f"ok: {role}\n".encode()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], routes: dict[str, Callable[[], Answer]]) -> None:
        self.routes = routes
        super().__init__(address, _Handler)

    def answer(self, path: str) -> Answer:
        route = self.routes.get(path.split("?", 1)[0])
        if route is None:
            return 404, _TEXT, b"not found: try /metrics, /healthz or /readyz\n"
        try:
            return route()
        except Exception as exc:
            logger.exception(f"health server: answering {path} failed")
            return 500, _TEXT, f"error: {exc}\n".encode()


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        self._reply(body=True)

    def do_HEAD(self) -> None:
        self._reply(body=False)

    def _reply(self, *, body: bool) -> None:
        status, content_type, data = self.server.answer(self.path)
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        logger.trace("health server: {}", format % args)
