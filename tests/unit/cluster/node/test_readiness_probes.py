"""Readiness probes of the local node: the prober's arithmetic, and one probe of each kind.

A container with a readiness probe starts not ready, is first probed initialDelaySeconds
after its start and every periodSeconds after, turns ready after successThreshold passes in
a row and unready after failureThreshold failures in a row. HTTP GET and TCP probes are run
against real sockets on this machine; the simulated probe passes once its delay has gone by.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.cluster.node.probes import readiness
from engine.cluster.node.probes.checks import Target, process_probe, simulated_probe
from engine.cluster.node.probes.readiness import ProbeSpec, probe_spec
from engine.cluster.node.status.slots import Slot


def spec(**probe: Any) -> ProbeSpec:
    found = probe_spec({"name": "main", "readinessProbe": probe})
    assert found is not None
    return found


def test_a_probe_takes_the_api_servers_defaults_where_fields_are_missing() -> None:
    found = spec(tcpSocket={"port": 80})
    assert (found.handler, found.initial_delay, found.period, found.timeout,
            found.success_threshold, found.failure_threshold) == ("tcpSocket", 0, 10, 1, 1, 3)
    assert probe_spec({"name": "main"}) is None


def test_timing_first_probe_after_the_initial_delay_then_every_period() -> None:
    state = readiness.begin(spec(exec={"command": ["true"]}, initialDelaySeconds=5,
                                 periodSeconds=2), started=100.0)
    assert (state.ready, state.due) == (False, 105.0)
    state = readiness.observed(state, False, at=105.0)
    assert (state.ready, state.due) == (False, 107.0)


def test_success_threshold_then_failure_threshold() -> None:
    state = readiness.begin(spec(exec={"command": ["true"]}, successThreshold=2,
                                 failureThreshold=2), started=0.0)
    verdicts = []
    for ok in (True, False, True, True, False, True, False, False):
        state = readiness.observed(state, ok, at=0.0)
        verdicts.append(state.ready)
    assert verdicts == [False, False, False, True, True, True, True, False]


@given(st.integers(1, 5), st.integers(1, 5), st.lists(st.booleans(), max_size=40))
def test_readiness_follows_the_last_run_of_results(success: int, failure: int,
                                                   results: list[bool]) -> None:
    """Ready exactly when the latest run that reached its threshold was a run of passes."""
    state = readiness.begin(spec(tcpSocket={"port": 1}, successThreshold=success,
                                 failureThreshold=failure), started=0.0)
    expected, run_value, run = False, None, 0
    for ok in results:
        state = readiness.observed(state, ok, at=0.0)
        run = run + 1 if ok == run_value else 1
        run_value = ok
        if run >= (success if ok else failure):
            expected = ok
        assert state.ready is expected


def test_a_container_with_a_probe_is_ready_only_once_it_passed() -> None:
    slot = Slot({"name": "main", "readinessProbe": {"tcpSocket": {"port": 1}}}, False,
                {"running": {"startedAt": "now"}})
    assert slot.status()["ready"] is False
    slot.readiness = readiness.observed(readiness.begin(slot.probe, 0.0), True, 0.0)  # type: ignore[arg-type]
    assert slot.status()["ready"] is True
    plain = Slot({"name": "main"}, False, {"running": {"startedAt": "now"}})
    assert plain.status()["ready"] is True


def _target(container: dict[str, Any], *, started: float = 0.0, now: float = 0.0,
            annotations: dict[str, str] | None = None) -> Target:
    pod = {"metadata": {"name": "p", "annotations": annotations or {}},
           "spec": {"containers": [container]}}
    return Target(pod, container, "", started, now)


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        code = 200 if self.path == "/ready" else 503
        self.send_response(code)
        self.end_headers()
        self.wfile.write(b"body")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def http_port() -> Iterator[int]:
    server = HTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_http_get_succeeds_on_2xx_and_fails_otherwise(http_port: int) -> None:
    container = {"name": "main", "ports": [{"name": "web", "containerPort": http_port}]}
    good = spec(httpGet={"path": "/ready", "port": "web"})
    bad = spec(httpGet={"path": "/other", "port": http_port})
    assert process_probe(good, _target(container)).ok
    failed = process_probe(bad, _target(container))
    assert not failed.ok and "statuscode: 503" in failed.output


def test_tcp_socket_succeeds_while_something_listens() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    try:
        assert process_probe(spec(tcpSocket={"port": port}), _target({"name": "main"})).ok
    finally:
        listener.close()
    assert not process_probe(spec(tcpSocket={"port": port}), _target({"name": "main"})).ok


def test_grpc_and_unknown_named_ports_fail_saying_why() -> None:
    assert "grpc" in process_probe(spec(grpc={"port": 1}), _target({"name": "main"})).output
    missing = process_probe(spec(tcpSocket={"port": "nope"}), _target({"name": "main"}))
    assert not missing.ok and "nope" in missing.output


def test_the_simulated_probe_passes_after_its_delay() -> None:
    notes = {"sim.jobmachine.dev/ready-seconds": "2"}
    probe = spec(exec={"command": ["true"]})
    assert not simulated_probe(probe, _target({"name": "main"}, now=1.5, annotations=notes)).ok
    assert simulated_probe(probe, _target({"name": "main"}, now=2.0, annotations=notes)).ok
    assert simulated_probe(probe, _target({"name": "main"})).ok  # no delay: at once
    broken = {"sim.jobmachine.dev/ready-seconds": "soon"}
    assert "soon" in simulated_probe(probe, _target({"name": "main"}, annotations=broken)).output
