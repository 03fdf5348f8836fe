"""The API server's reachability: one WARNING when it goes, one INFO line when it is back,
/readyz 503 meanwhile; what counts as an outage; informers and the client reporting it."""

from __future__ import annotations

import http.server
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client import Configuration
from loguru import logger

from engine.controller.reporting.health import serve_metrics_and_health
from engine.controller.reporting.metrics import Metrics
from engine.kube.cache import Cache
from engine.kube.client import KubeClient
from engine.kube.errors import ApiError, Forbidden, NotFound, Unavailable
from engine.kube.informer import Informer
from engine.kube.outage import ANNOUNCE_AFTER_S, ApiHealth, unreachable
from engine.kube.resources import Resource

from .conftest import FakeClock

CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
REFUSED = Unavailable(0, "ConnectionError", "ConnectionRefusedError: [Errno 111] refused", {})
SERVER = "https://api.example:6443"
WAIT = 10.0  # a bound for threads, never asserted as a duration


def said(records: list[dict[str, Any]], least: str = "INFO") -> list[tuple[str, str]]:
    """(level, message) of the records at `least` or above."""
    floor = logger.level(least).no
    return [(r["level"].name, r["message"]) for r in records if r["level"].no >= floor]


@pytest.fixture
def health(clock: FakeClock) -> ApiHealth:
    return ApiHealth(SERVER, announce=True, clock=clock)


class TestWhatIsAnOutage:
    @pytest.mark.parametrize("status", [0, 502, 503, 504])
    def test_a_failed_connection_or_a_gateway_error_is(self, status: int) -> None:
        assert unreachable(Unavailable(status, "", "gone", {}))

    @pytest.mark.parametrize("error", [
        Unavailable(429, "TooManyRequests", "slow down", {}),
        Unavailable(500, "InternalError", "a bug", {}),
        NotFound(404, "NotFound", "no such job", {}),
        Forbidden(403, "Forbidden", "no", {}),
        ApiError(0, "InvalidWatchEvent", "garbled", {}),
        ConnectionRefusedError("not through the client"),
    ])
    def test_an_answer_is_not(self, error: Exception) -> None:
        assert not unreachable(error)


class TestTransitions:
    def test_one_warning_when_it_goes_and_one_line_when_it_is_back(
        self, health: ApiHealth, clock: FakeClock, records: list[dict[str, Any]]
    ) -> None:
        assert health.reachable
        clock.advance(1)
        health.failed(REFUSED, sent_at=clock.now)
        for _ in range(500):
            clock.advance(0.01)
            health.failed(REFUSED, sent_at=clock.now)
        assert not health.reachable
        [(level, message)] = said(records)
        assert level == "WARNING"
        assert message == (f"the API server at {SERVER} is unreachable (ConnectionRefusedError: "
                           "[Errno 111] refused); retrying with back-off (failures are logged "
                           "at DEBUG until it answers)")
        assert health.down_for() == pytest.approx(5.0)

        clock.advance(8.2)
        health.answered(sent_at=clock.now)
        health.answered(sent_at=clock.now)
        assert health.reachable
        assert health.down_for() == 0
        assert said(records)[1:] == [(
            "INFO", f"the API server at {SERVER} is reachable again after 13.2s (501 failed "
                    "requests meanwhile)")]
        assert health.outages == 1

    def test_each_outage_is_told_once(
        self, health: ApiHealth, clock: FakeClock, records: list[dict[str, Any]]
    ) -> None:
        for _ in range(3):
            clock.advance(1)
            health.failed(REFUSED, sent_at=clock.now)
            health.failed(REFUSED, sent_at=clock.now)
            clock.advance(1)
            health.answered(sent_at=clock.now)
        assert [level for level, _ in said(records)] == ["WARNING", "INFO"] * 3
        assert health.outages == 3
        assert "after 1.0s (2 failed requests" in said(records)[-1][1]

    def test_a_blip_answered_within_a_second_is_not_an_outage_to_tell(
        self, health: ApiHealth, clock: FakeClock, records: list[dict[str, Any]]
    ) -> None:
        # A proxy resets its kept-alive connections: the requests on them fail at once, and
        # their retries are answered on fresh connections.
        clock.advance(1)
        for _ in range(14):
            health.failed(REFUSED, sent_at=clock.now)
        clock.advance(ANNOUNCE_AFTER_S / 2)
        health.answered(sent_at=clock.now)
        assert health.reachable
        assert said(records) == []
        assert [level for level, _ in said(records, "DEBUG")] == ["DEBUG", "DEBUG"]

        clock.advance(1)
        health.failed(REFUSED, sent_at=clock.now)
        clock.advance(ANNOUNCE_AFTER_S)
        health.failed(REFUSED, sent_at=clock.now)
        clock.advance(5)
        health.answered(sent_at=clock.now)
        assert [level for level, _ in said(records)] == ["WARNING", "INFO"]
        assert "after 6.0s (2 failed requests" in said(records)[-1][1]

    def test_an_outage_with_no_failure_after_its_first_is_told_at_the_return(
        self, health: ApiHealth, clock: FakeClock, records: list[dict[str, Any]]
    ) -> None:
        health.failed(REFUSED, sent_at=clock.now)
        clock.advance(20)
        health.answered(sent_at=clock.now)
        assert said(records) == [
            ("WARNING", f"the API server at {SERVER} is unreachable (for 20.0s); retrying with "
                        "back-off (failures are logged at DEBUG until it answers)"),
            ("INFO", f"the API server at {SERVER} is reachable again after 20.0s (1 failed "
                     "request meanwhile)")]

    def test_an_answer_to_a_request_sent_before_the_outage_does_not_end_it(
        self, health: ApiHealth, clock: FakeClock
    ) -> None:
        sent_before = clock.now
        clock.advance(1)
        health.failed(REFUSED, sent_at=clock.now)
        health.answered(sent_at=sent_before)
        assert not health.reachable

    def test_a_failure_of_a_request_sent_before_the_return_does_not_start_another(
        self, health: ApiHealth, clock: FakeClock, records: list[dict[str, Any]]
    ) -> None:
        clock.advance(1)
        health.failed(REFUSED, sent_at=clock.now)
        sent_in_the_outage = clock.now
        clock.advance(1)
        health.answered(sent_at=clock.now)
        health.failed(REFUSED, sent_at=sent_in_the_outage)
        assert health.reachable
        assert health.outages == 1
        assert len(said(records)) == 2

    def test_answers_and_other_errors_change_nothing(
        self, health: ApiHealth, clock: FakeClock, records: list[dict[str, Any]]
    ) -> None:
        health.answered(sent_at=clock.now)
        health.failed(Unavailable(429, "TooManyRequests", "slow down", {}), sent_at=clock.now)
        health.failed(NotFound(404, "NotFound", "gone", {}), sent_at=clock.now)
        assert health.reachable
        assert health.outages == 0
        assert records == []

    def test_without_announce_it_tracks_quietly(
        self, clock: FakeClock, records: list[dict[str, Any]]
    ) -> None:
        health = ApiHealth(SERVER, clock=clock)
        health.failed(REFUSED, sent_at=clock.now)
        assert not health.reachable
        clock.advance(1)
        health.answered(sent_at=clock.now)
        assert health.reachable
        assert records == []

    def test_listeners_hear_of_the_return_with_its_length(
        self, health: ApiHealth, clock: FakeClock, records: list[dict[str, Any]]
    ) -> None:
        heard: list[float] = []

        def broken(_: float) -> None:
            raise RuntimeError("a listener bug")

        health.add_listener(broken)
        health.add_listener(heard.append)
        health.failed(REFUSED, sent_at=clock.now)
        clock.advance(2.5)
        health.answered(sent_at=clock.now)
        assert heard == [2.5]
        assert any(r["exception"] is not None for r in records)


class TestReadiness:
    def test_readyz_is_503_while_the_server_is_unreachable(
        self, health: ApiHealth, clock: FakeClock
    ) -> None:
        with serve_metrics_and_health(0, Metrics(), lambda: True, api_health=health) as server:
            assert _probe(server.port, "/readyz") == (200, "ok\n")
            health.failed(REFUSED, sent_at=clock.now)
            clock.advance(4)
            assert _probe(server.port, "/readyz") == (
                503, "not ready: the API server is unreachable (for 4s)\n")
            assert _probe(server.port, "/healthz") == (200, "ok\n")
            health.answered(sent_at=clock.now)
            assert _probe(server.port, "/readyz") == (200, "ok\n")


def _probe(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=WAIT) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


class TestTheClientReports:
    def test_a_refused_connection_starts_an_outage(self) -> None:
        client = KubeClient(_configuration(f"http://127.0.0.1:{_free_port()}"))
        try:
            with pytest.raises(Unavailable) as raised:
                client.get(CONFIGMAPS, "a", "default")
            assert unreachable(raised.value)
            assert not client.api_health.reachable
            assert not client.with_budget(1, 1).api_health.reachable
        finally:
            client.close()

    def test_a_gateway_error_starts_one_and_an_answer_ends_it(self) -> None:
        answers = [503, 503, 404, 200]
        with _serving(answers) as port:
            client = KubeClient(_configuration(f"http://127.0.0.1:{port}"))
            try:
                for _ in range(2):
                    with pytest.raises(Unavailable):
                        client.get(CONFIGMAPS, "a", "default")
                    assert not client.api_health.reachable
                with pytest.raises(NotFound):
                    client.get(CONFIGMAPS, "a", "default")
                assert client.api_health.reachable
                client.get(CONFIGMAPS, "a", "default")
                assert client.api_health.outages == 1
            finally:
                client.close()


def _configuration(host: str) -> Configuration:
    configuration = Configuration()
    configuration.host = host
    return configuration


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _Answers(http.server.BaseHTTPRequestHandler):
    statuses: list[int]

    def do_GET(self) -> None:
        status = self.statuses.pop(0)
        body = b'{"kind": "Status", "message": "answered"}'
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _serving:  # noqa: N801 (a context manager used like a function)
    def __init__(self, statuses: list[int]) -> None:
        handler = type("Handler", (_Answers,), {"statuses": statuses})
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> int:
        self._thread.start()
        return int(self._server.server_address[1])

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(WAIT)


class _Stream:
    """A watch that stays open until closed."""

    def __init__(self) -> None:
        self._closed = threading.Event()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        self._closed.wait(WAIT)
        return iter(())

    def close(self) -> None:
        self._closed.set()


class _FailingClient:
    """Lists fail with `failures` first, then answer empty; watches stay open."""

    def __init__(self, failures: list[ApiError]) -> None:
        self.failures = failures
        self.lists = 0

    def list(self, *_: Any, **__: Any) -> tuple[list[dict[str, Any]], str]:
        self.lists += 1
        if self.failures:
            raise self.failures.pop(0)
        return [], "1"

    def watch(self, *_: Any, **__: Any) -> _Stream:
        return _Stream()


class TestInformers:
    @pytest.mark.parametrize(("failure", "level"), [
        (REFUSED, "DEBUG"), (Unavailable(500, "InternalError", "a bug", {}), "WARNING")])
    def test_list_failures_in_an_outage_are_logged_at_debug_only(
        self, failure: ApiError, level: str, records: list[dict[str, Any]]
    ) -> None:
        client = _FailingClient([failure, failure])
        informer = Informer(client, CONFIGMAPS, cache=Cache(),  # type: ignore[arg-type]
                            handler=lambda *_: None)
        informer.start()
        try:
            assert informer.wait_synced(WAIT)
        finally:
            informer.stop()
        failed = [r for r in records if "list failed" in r["message"]]
        assert [r["level"].name for r in failed] == [level, level]
        assert all(r["exception"] is None for r in failed)
        assert client.lists == 3

