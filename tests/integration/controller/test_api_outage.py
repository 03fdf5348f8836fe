"""A 15-second API server outage: the engine says so once, reports not-ready, and resumes.

The engine reaches the server through a TCP proxy the test cuts: established connections
are reset (its watches, kept-alive connections) and new ones refused, as when the server
or the network goes away; the simulated node and the test keep their own direct
connections, so pods finish meanwhile and the engine must catch up once the proxy is back.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import struct
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import config as kube_config
from kubernetes.client import Configuration
from loguru import logger

from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from engine.controller.reporting.health import HealthServer, serve_metrics_and_health
from engine.kube.client import KubeClient
from tests.integration.engine.helpers import (
    FAST,
    EngineRun,
    Replica,
    condition,
    new_namespace,
    pytorchjob,
    running_engineless,
    start_engine,
    wait_for_phase,
    wait_for_replica,
    wait_until,
)
from tests.kinds import PYTORCHJOBS

pytestmark = pytest.mark.slow

OUTAGE_S = 15.0
Obj = dict[str, Any]


class CuttableProxy:
    """A TCP proxy on 127.0.0.1 in front of `upstream`; `cut` resets every connection through
    it and stops listening (new connections are refused), `restore` listens again on the
    same port."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self._upstream = upstream
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._listener: socket.socket | None = None
        self._accepting: threading.Thread | None = None
        self._stop_accepting = threading.Event()
        self.port = 0
        self.restore()

    def restore(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        listener.settimeout(0.05)
        self.port = listener.getsockname()[1]
        self._listener = listener
        self._stop_accepting = threading.Event()
        self._accepting = threading.Thread(
            target=self._accept, args=(listener, self._stop_accepting), daemon=True,
            name="outage-proxy-accept")
        self._accepting.start()

    def cut(self) -> None:
        self._stop_accepting.set()
        if self._accepting is not None:
            self._accepting.join(5)
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            for sock in pair:
                _reset(sock)

    def close(self) -> None:
        self.cut()

    def _accept(self, listener: socket.socket, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                downstream, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                upstream = socket.create_connection(self._upstream, timeout=5)
            except OSError:
                _reset(downstream)
                continue
            with self._lock:
                self._pairs.append((downstream, upstream))
            threading.Thread(target=self._pump, args=(downstream, upstream), daemon=True,
                             name="outage-proxy-pump").start()

    def _pump(self, downstream: socket.socket, upstream: socket.socket) -> None:
        other = {downstream: upstream, upstream: downstream}
        with selectors.DefaultSelector() as selector:
            for sock in other:
                sock.setblocking(True)
                selector.register(sock, selectors.EVENT_READ)
            try:
                while True:
                    for key, _ in selector.select(0.1):
                        source: socket.socket = key.fileobj  # type: ignore[assignment]
                        data = source.recv(65536)
                        if not data:
                            raise ConnectionError("closed")
                        other[source].sendall(data)
            except (OSError, ValueError):
                pass
        with self._lock:
            if (downstream, upstream) in self._pairs:
                self._pairs.remove((downstream, upstream))
        for sock in other:
            _reset(sock)


def _reset(sock: socket.socket) -> None:
    """Close with a TCP reset (linger 0), as a peer that vanished does."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.close()


@pytest.fixture(scope="module")
def server() -> Iterator[RunningApiServer]:
    with running_engineless() as running:
        yield running


@pytest.fixture
def proxy(server: RunningApiServer) -> Iterator[CuttableProxy]:
    host, _, port = server.url.rpartition("//")[2].rpartition(":")
    running = CuttableProxy((host, int(port)))
    yield running
    running.close()


def client_through(server: RunningApiServer, proxy: CuttableProxy) -> KubeClient:
    """A client for the server's kubeconfig that connects through the proxy."""
    configuration = Configuration()
    kube_config.load_kube_config(  # type: ignore[no-untyped-call]
        config_file=str(server.kubeconfig), client_configuration=configuration,
        persist_config=False)
    configuration.host = f"https://127.0.0.1:{proxy.port}"
    return KubeClient(configuration)


ENGINE_LOGGERS = ("engine.controller", "engine.kube")
"""Where the engine logs from: the outage itself is the client layer's to report."""


class Lines:
    """The engine's log records (engine.controller.* and its client layer, engine.kube.*) at
    INFO and above, with their text."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.records: list[tuple[float, str, str, bool]] = []
        """(monotonic time, level, text incl. any traceback, has an exception)."""

    def __call__(self, message: Any) -> None:
        record = message.record
        with self._lock:
            self.records.append((time.monotonic(), record["level"].name, str(message),
                                 record["exception"] is not None))

    def since(self, start: float, end: float = float("inf")) -> list[tuple[str, str, bool]]:
        with self._lock:
            return [(level, text, exc) for at, level, text, exc in self.records
                    if start <= at <= end]


@pytest.fixture
def lines() -> Iterator[Lines]:
    captured = Lines()
    sink = logger.add(captured, level="INFO",
                      filter=lambda record: (record["name"] or "").startswith(ENGINE_LOGGERS),
                      format="{level} {name}: {message}")
    yield captured
    logger.remove(sink)


@pytest.fixture
def engine(server: RunningApiServer, proxy: CuttableProxy) -> Iterator[EngineRun]:
    run = start_engine(client_through(server, proxy), FAST)
    yield run
    run.stop()


@pytest.fixture
def health(engine: EngineRun) -> Iterator[HealthServer]:
    with serve_metrics_and_health(0, engine.engine.metrics, lambda: engine.engine.synced,
                                  api_health=engine.engine.api_health) as running:
        yield running


def readyz(health: HealthServer) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{health.port}/readyz", timeout=5) as r:
            return int(r.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_an_outage_is_logged_once_reported_on_readyz_and_recovered_from(
    server: RunningApiServer, proxy: CuttableProxy, engine: EngineRun, health: HealthServer,
    lines: Lines,
) -> None:
    client = KubeClient.from_kubeconfig(server.kubeconfig)
    try:
        engine.engine.wait_until_governed("PyTorchJob", timeout_s=30)
        wait_until(lambda: readyz(health) == 200, what="the engine is ready")
        ns = new_namespace(client)
        client.create(PYTORCHJOBS, pytorchjob("before", ns, master=Replica(run_s=3.0)), ns)
        late = pytorchjob("late", ns, master=Replica(run_s=60.0))
        late["spec"]["runPolicy"]["activeDeadlineSeconds"] = 5
        client.create(PYTORCHJOBS, late, ns)
        wait_for_replica(client, ns, "before", "Master-0", "Running")
        wait_for_replica(client, ns, "late", "Master-0", "Running")

        cut_at = time.monotonic()
        proxy.cut()
        client.create(PYTORCHJOBS, pytorchjob("during", ns, master=Replica(run_s=0.5)), ns)
        wait_until(lambda: readyz(health) == 503, what="/readyz says not ready in the outage")
        time.sleep(max(0.0, cut_at + OUTAGE_S - time.monotonic()))
        assert readyz(health) == 503
        restored_at = time.monotonic()
        proxy.restore()

        wait_until(lambda: readyz(health) == 200, what="/readyz is ready again")
        wait_for_phase(client, ns, "before", "Succeeded", timeout=20)
        wait_for_phase(client, ns, "during", "Succeeded", timeout=20)
        failed = wait_for_phase(client, ns, "late", "Failed", timeout=20)
        assert (condition(failed, "Failed") or {}).get("reason") == "DeadlineExceeded"
        done_at = time.monotonic()
    finally:
        client.close()

    during = lines.since(cut_at, restored_at)
    around = lines.since(cut_at, done_at)
    report = "\n".join(text for _, text, _ in around)
    loud = [text for level, text, _ in around if level not in ("DEBUG", "INFO", "SUCCESS")]
    assert len(loud) <= 6, f"{len(loud)} warnings or errors in a {OUTAGE_S:.0f}s outage:\n{report}"
    assert not any(exc for _, _, exc in around), f"a traceback was logged:\n{report}"
    assert len(during) <= 3, f"{len(during)} lines while the server was away:\n{report}"
    went = [text for level, text, _ in around if "unreachable" in text]
    back = [text for level, text, _ in around if "reachable again" in text]
    assert len(went) == 1 and went[0].startswith("WARNING"), report
    assert len(back) == 1 and back[0].startswith("INFO"), report
    assert engine.engine.api_health.reachable
    events = engine.engine.recorder.stats()
    assert (events.failed, events.dropped) == (0, 0), events
