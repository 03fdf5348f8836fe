"""KubeClient's transport (`engine.kube.http`) as users rely on it: kept-alive
connections, a connection the server dropped while idle replaced, refused connections and bad
certificates as Unavailable, a rotated token read again after a 401, tls-server-name, http://
proxies and no_proxy, a server URL with a path, and a watch closed from another thread.

The embedded API server shows what it can; small stdlib servers in threads (a TCP relay that
counts connections or acts as a CONNECT proxy, an HTTP/1.1 stub that records requests) show
the rest. Every server, socket and thread a test starts is stopped by its fixture.
"""

from __future__ import annotations

import contextlib
import select
import socket
import ssl
import struct
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson
import pytest
from cryptography import x509
from kubernetes.client import Configuration

from engine.cluster import running_apiserver
from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from engine.cluster.apiserver.endpoints.tls import TlsFiles, create_ca_and_server_cert, ssl_context
from engine.kube.client import KubeClient
from engine.kube.errors import ApiError, Unavailable
from engine.kube.resources import NAMESPACES, PODS, Resource
from tests.polling import eventually

CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
OBJECT: dict[str, Any] = {"kind": "ConfigMap", "apiVersion": "v1", "items": [],
                          "metadata": {"name": "a", "resourceVersion": "1"}}
"""What the stub answers by default: an object `get` accepts and an empty page `list` accepts."""
UNAUTHORIZED: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                "message": "Unauthorized", "reason": "Unauthorized", "code": 401}
PROXY_AUTHORIZATION = "Basic ZW5naW5lOnNlY3JldA=="


# --- a TCP relay: counts connections, or acts as an http:// CONNECT proxy ---------------------


class Relay:
    """Accepts TCP connections and pipes each to `target`, counting them.

    With `tunnel=True` it is an http:// proxy instead: each connection starts with a CONNECT
    request, whose head is recorded, and is then piped to the host:port it names.
    """

    def __init__(
        self, target: tuple[str, int] | None = None, *, tunnel: bool = False,
        host: str = "127.0.0.1",
    ) -> None:
        self._target = target
        self._tunnel = tunnel
        self._listener = socket.create_server((host, 0))
        self.host, self.port = self._listener.getsockname()[:2]
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._accepting = threading.Thread(target=self._accept, name="relay-accept", daemon=True)
        self._relaying: list[threading.Thread] = []
        self.accepted = 0
        self.ended = 0
        """Relayed connections that are over (either side closed)."""
        self.heads: list[str] = []
        """The CONNECT requests' heads (request line and headers), in arrival order."""

    def url(self, scheme: str) -> str:
        return f"{scheme}://{self.host}:{self.port}"

    def start(self) -> None:
        self._accepting.start()

    def stop(self) -> None:
        """Stop accepting, cut every relayed connection and wait for every thread."""
        self._stop.set()
        self._accepting.join(10)
        with self._lock:
            sockets, threads = list(self._sockets), list(self._relaying)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for thread in threads:
            thread.join(10)
        for sock in [*sockets, self._listener]:
            sock.close()
        assert not any(t.is_alive() for t in [self._accepting, *threads]), "a relay thread hangs"

    def _accept(self) -> None:
        self._listener.settimeout(0.05)
        while not self._stop.is_set():
            try:
                downstream, _ = self._listener.accept()
            except TimeoutError:
                continue
            downstream.settimeout(5)
            thread = threading.Thread(target=self._relay, args=(downstream,), daemon=True)
            with self._lock:
                self.accepted += 1
                self._sockets.append(downstream)
                self._relaying.append(thread)
            thread.start()

    def _relay(self, downstream: socket.socket) -> None:
        upstream: socket.socket | None = None
        try:
            target = self._read_connect(downstream) if self._tunnel else self._target
            assert target is not None
            upstream = socket.create_connection(target, timeout=5)
            with self._lock:
                self._sockets.append(upstream)
            if self._tunnel:
                downstream.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            _pipe(downstream, upstream, self._stop)
        except OSError:
            pass  # a refused target or a side that hung up: the connection is over
        finally:
            for sock in (downstream, upstream):
                if sock is not None:
                    sock.close()
            with self._lock:
                self.ended += 1

    def _read_connect(self, downstream: socket.socket) -> tuple[str, int]:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = downstream.recv(4096)
            if not chunk:
                raise ConnectionResetError("the client hung up before its CONNECT ended")
            head += chunk
        text = head.decode("latin-1").split("\r\n\r\n")[0]
        with self._lock:
            self.heads.append(text)
        method, authority, _ = text.split("\r\n")[0].split(" ")
        assert method == "CONNECT", text
        host, port = authority.rsplit(":", 1)
        return host, int(port)


def _pipe(one: socket.socket, other: socket.socket, stop: threading.Event) -> None:
    """Copy bytes both ways until either side closes or the relay stops."""
    peer = {one: other, other: one}
    while not stop.is_set():
        readable, _, _ = select.select([one, other], [], [], 0.05)
        for sock in readable:
            data = sock.recv(65536)
            if not data:
                return
            peer[sock].sendall(data)


# --- a stub HTTP/1.1 server: records requests, answers what the test says ---------------------


@dataclass(frozen=True)
class Seen:
    """One request as the stub received it; header names are lower-cased."""

    method: str
    path: str
    headers: dict[str, str]


Respond = Callable[[Seen], tuple[int, dict[str, Any]]]


class StubServer:
    """An HTTP/1.1 server in a thread (TLS if given a context) that records every request.

    With `close_after_answer` it closes each connection once it has answered, without saying
    `Connection: close` - what a server does to a kept-alive connection it finds idle.
    """

    def __init__(
        self, respond: Respond = lambda _seen: (200, OBJECT), *,
        tls: ssl.SSLContext | None = None, close_after_answer: bool = False,
    ) -> None:
        self.respond = respond
        self.tls = tls
        self.close_after_answer = close_after_answer
        self.requests: list[Seen] = []
        self.connections = 0
        self.closed = 0
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self.resetting: list[socket.socket] = []
        self._server = _StubHTTPServer(self)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop serving, cut the connections clients keep alive and wait for every thread."""
        self._server.shutdown()
        self._thread.join(10)
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._server.server_close()  # joins the handler threads

    def reset_connections(self) -> None:
        """Abort every open connection with a TCP reset, as a load balancer does to idle ones
        (AWS NLB, Azure's with TCP reset on): no FIN, no TLS close_notify."""
        with self._lock:
            sockets = list(self._sockets)
            self.resetting.extend(sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):  # some are closed already
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                # Wakes the handler's read; its close then sends the reset (linger 0).
                sock.shutdown(socket.SHUT_RD)

    def opened(self, sock: socket.socket) -> None:
        with self._lock:
            self.connections += 1
            self._sockets.append(sock)

    def ended(self) -> None:
        with self._lock:
            self.closed += 1

    def record(self, seen: Seen) -> None:
        with self._lock:
            self.requests.append(seen)


class _StubHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, stub: StubServer) -> None:
        self.stub = stub
        super().__init__(("127.0.0.1", 0), _StubHandler)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = super().get_request()
        # The handler writes head and body apart: without this, Nagle and delayed ACKs add 40 ms.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.stub.tls is not None:
            # The handshake happens on the handler's first read, not in the accepting thread.
            sock = self.stub.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        self.stub.opened(sock)
        return sock, address

    def shutdown_request(self, request: Any) -> None:
        if request in self.stub.resetting:
            self.close_request(request)  # without the base's shutdown(SHUT_WR): no FIN first
        else:
            super().shutdown_request(request)
        self.stub.ended()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client hanging up mid-request is what some tests do; nothing to report."""


class _StubHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _StubHTTPServer

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        stub = self.server.stub
        seen = Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()})
        stub.record(seen)
        status, body = stub.respond(seen)
        data = orjson.dumps(body)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        if stub.close_after_answer:
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test asserts on what was recorded."""


# --- fixtures and helpers -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[RunningApiServer]:
    with running_apiserver(tls=True) as running:
        yield running


@pytest.fixture(scope="module")
def stub_tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    """A CA and a certificate for 127.0.0.1, made the way the embedded server makes its own."""
    return create_ca_and_server_cert(tmp_path_factory.mktemp("stub-tls"))


@pytest.fixture
def start_relay() -> Iterator[Callable[..., Relay]]:
    relays: list[Relay] = []

    def start(*args: Any, **kwargs: Any) -> Relay:
        relay = Relay(*args, **kwargs)
        relays.append(relay)
        relay.start()
        return relay

    try:
        yield start
    finally:
        for relay in relays:
            relay.stop()


@pytest.fixture
def start_stub() -> Iterator[Callable[..., StubServer]]:
    stubs: list[StubServer] = []

    def start(*args: Any, **kwargs: Any) -> StubServer:
        stub = StubServer(*args, **kwargs)
        stubs.append(stub)
        stub.start()
        return stub

    try:
        yield start
    finally:
        for stub in stubs:
            stub.stop()


@pytest.fixture
def make_client() -> Iterator[Callable[[Configuration], KubeClient]]:
    """KubeClients without a tight rate limit, closed (with their pooled connections) after."""
    clients: list[KubeClient] = []

    def make(configuration: Configuration) -> KubeClient:
        kube = KubeClient(configuration, qps=10_000, burst=10_000)
        clients.append(kube)
        return kube

    try:
        yield make
    finally:
        for kube in clients:
            kube.close()


def configuration(
    url: str, *, ca_file: Path | None = None, token: str | None = None, **settings: Any,
) -> Configuration:
    """A client configuration for `url`, blind to the environment's proxy variables."""
    config = Configuration()
    config.host = url
    config.proxy = None
    config.no_proxy = None
    if ca_file is not None:
        config.ssl_ca_cert = str(ca_file)
    if token is not None:
        config.api_key = {"BearerToken": token}
        config.api_key_prefix = {"BearerToken": "Bearer"}
    for name, value in settings.items():
        setattr(config, name, value)
    return config


def for_server(server: RunningApiServer, url: str | None = None, **settings: Any) -> Configuration:
    """The embedded server's CA and token, at its own URL or at `url` (a relay in front)."""
    return configuration(url or server.url, ca_file=server.ca_file, token=server.token,
                         **settings)


def address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


def certificate_names(server: RunningApiServer) -> set[str]:
    """The DNS names and IP addresses the embedded server's certificate is valid for."""
    assert server.ca_file is not None
    cert = x509.load_pem_x509_certificate((server.ca_file.parent / "server.crt").read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return {*names.get_values_for_type(x509.DNSName),
            *map(str, names.get_values_for_type(x509.IPAddress))}


class TokenCheck:
    """The stub's answer: 200 for the one token it accepts (None: none), else 401."""

    def __init__(self, accepted: str | None) -> None:
        self.accepted = accepted

    def __call__(self, seen: Seen) -> tuple[int, dict[str, Any]]:
        if self.accepted is not None and seen.headers.get(
                "authorization") == f"Bearer {self.accepted}":
            return 200, OBJECT
        return 401, UNAUTHORIZED


# --- 1. kept-alive connections ------------------------------------------------------------------


def test_sequential_requests_share_one_kept_alive_connection(
    server: RunningApiServer, start_relay: Callable[..., Relay],
    make_client: Callable[[Configuration], KubeClient],
) -> None:
    """50 GETs through one client open one TCP connection to the server, not 50."""
    relay = start_relay(address(server.url))
    kube = make_client(for_server(server, relay.url("https")))
    for _ in range(50):
        kube.list(NAMESPACES)
    assert relay.accepted == 1


def test_threads_share_the_pool_and_leave_their_connections_in_it(
    server: RunningApiServer, start_relay: Callable[..., Relay],
    make_client: Callable[[Configuration], KubeClient],
) -> None:
    """8 threads x 10 GETs open at most one connection per thread; later GETs reuse them."""
    relay = start_relay(address(server.url))
    kube = make_client(for_server(server, relay.url("https")))
    with ThreadPoolExecutor(8) as threads:
        list(threads.map(lambda _: [kube.list(NAMESPACES) for _ in range(10)], range(8)))
    opened = relay.accepted
    assert 1 <= opened <= 8
    for _ in range(20):
        kube.list(NAMESPACES)
    assert relay.accepted == opened


# --- 2. a kept-alive connection the server closed while idle ------------------------------------


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
def test_a_connection_the_server_closed_while_idle_is_replaced(
    tls: bool, stub_tls: TlsFiles, start_stub: Callable[..., StubServer],
    make_client: Callable[[Configuration], KubeClient],
) -> None:
    """The server hangs up after each answer (no `Connection: close`): every next request,
    whether sent once the hang-up arrived or right away, still gets its answer."""
    stub = start_stub(tls=ssl_context(stub_tls) if tls else None, close_after_answer=True)
    kube = make_client(configuration(stub.url(), ca_file=stub_tls.ca_cert if tls else None))
    for answered in (1, 2, 3):
        assert kube.get(CONFIGMAPS, "a", "ns")["metadata"]["name"] == "a"
        eventually(lambda n=answered: stub.closed == n, timeout=5)
    for _ in range(10):  # back to back: the hang-up may race the next request
        assert kube.get(CONFIGMAPS, "a", "ns")["metadata"]["name"] == "a"
    assert len(stub.requests) == stub.connections == 13
    assert kube.request_count == 13


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
def test_a_connection_reset_while_idle_is_replaced(
    tls: bool, stub_tls: TlsFiles, start_stub: Callable[..., StubServer],
    make_client: Callable[[Configuration], KubeClient],
) -> None:
    """Idle kept-alive connections aborted with a TCP reset (a load balancer's idle timeout):
    each next request is sent again on a new connection and gets its answer."""
    stub = start_stub(tls=ssl_context(stub_tls) if tls else None)
    kube = make_client(configuration(stub.url(), ca_file=stub_tls.ca_cert if tls else None))
    for answered in (1, 2, 3):
        assert kube.get(CONFIGMAPS, "a", "ns")["metadata"]["name"] == "a"
        stub.reset_connections()
        eventually(lambda n=answered: stub.closed == n, timeout=5)
    assert len(stub.requests) == stub.connections == 3


# --- 3. a first connection that fails -----------------------------------------------------------


@pytest.mark.timeout(10)
@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_refused_connection_is_unavailable_at_once(
    scheme: str, make_client: Callable[[Configuration], KubeClient],
) -> None:
    """Nothing listening: one attempt, then Unavailable (status 0), no retry loop."""
    with socket.socket() as placeholder:
        placeholder.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        port = placeholder.getsockname()[1]
        kube = make_client(configuration(f"{scheme}://127.0.0.1:{port}"))
        with pytest.raises(Unavailable) as refused:
            kube.list(NAMESPACES)
    assert refused.value.status == 0 and "ConnectionRefusedError" in str(refused.value)
    assert kube.request_count == 1


@pytest.mark.timeout(10)
@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_new_connection_dropped_before_the_answer_is_unavailable_not_retried(
    scheme: str, start_relay: Callable[..., Relay],
    make_client: Callable[[Configuration], KubeClient],
) -> None:
    """A server that accepts and hangs up at once: a fresh connection is not "stale", so
    the pool must not take the hang-up for a dropped idle connection and try again."""
    with socket.socket() as placeholder:
        placeholder.bind(("127.0.0.1", 0))
        hang_up = start_relay(placeholder.getsockname()[:2])  # its target refuses
        kube = make_client(configuration(hang_up.url(scheme)))
        with pytest.raises(Unavailable):
            kube.list(NAMESPACES)
    assert hang_up.accepted == 1 and kube.request_count == 1


# --- 4. 401: rotated and revoked tokens ---------------------------------------------------------


def test_a_rotated_token_is_read_again_after_one_401(
    start_stub: Callable[..., StubServer], make_client: Callable[[Configuration], KubeClient],
) -> None:
    """The token rotates while the client holds the old one: one 401, then the refresh hook's
    new token, kept for the requests after."""
    check = TokenCheck("token-1")
    stub = start_stub(check)
    token_file = {"token": "token-1"}  # where the hook reads from, as a projected token file

    def reread(config: Configuration) -> None:
        config.api_key["BearerToken"] = token_file["token"]

    kube = make_client(configuration(stub.url(), token="token-1", refresh_api_key_hook=reread))
    assert kube.get(CONFIGMAPS, "a", "ns")["metadata"]["name"] == "a"
    token_file["token"] = check.accepted = "token-2"
    assert kube.get(CONFIGMAPS, "a", "ns")["metadata"]["name"] == "a"
    assert kube.get(CONFIGMAPS, "a", "ns")["metadata"]["name"] == "a"
    assert [r.headers.get("authorization") for r in stub.requests] == [
        "Bearer token-1", "Bearer token-1", "Bearer token-2", "Bearer token-2"]


def test_a_401_that_persists_with_fresh_credentials_is_an_api_error(
    start_stub: Callable[..., StubServer], make_client: Callable[[Configuration], KubeClient],
) -> None:
    """A revoked token: asked once more with credentials read afresh, then the 401 is raised
    as a plain ApiError (not Unavailable: waiting will not fix it)."""
    stub = start_stub(TokenCheck(None))
    kube = make_client(configuration(stub.url(), token="revoked"))
    with pytest.raises(ApiError) as refused:
        kube.get(CONFIGMAPS, "a", "ns")
    assert type(refused.value) is ApiError
    assert (refused.value.status, refused.value.reason) == (401, "Unauthorized")
    assert len(stub.requests) == 2 and kube.request_count == 2


def test_a_401_without_credentials_is_not_retried(
    start_stub: Callable[..., StubServer], make_client: Callable[[Configuration], KubeClient],
) -> None:
    """No token to refresh: a single request."""
    stub = start_stub(TokenCheck(None))
    kube = make_client(configuration(stub.url()))
    with pytest.raises(ApiError) as refused:
        kube.get(CONFIGMAPS, "a", "ns")
    assert refused.value.status == 401
    assert len(stub.requests) == 1 and "authorization" not in stub.requests[0].headers


# --- 5. tls-server-name -------------------------------------------------------------------------


@pytest.mark.timeout(10)
def test_tls_server_name_is_the_name_the_certificate_is_checked_against(
    server: RunningApiServer, make_client: Callable[[Configuration], KubeClient],
) -> None:
    """By 127.0.0.1 with tls_server_name=localhost (a name the certificate carries) the
    client gets in; with a name it does not carry it is refused as Unavailable."""
    names = certificate_names(server)
    assert "localhost" in names and "wrong.example" not in names
    kube = make_client(for_server(server, tls_server_name="localhost"))
    assert kube.list(NAMESPACES)[0]
    wrong = make_client(for_server(server, tls_server_name="wrong.example"))
    with pytest.raises(Unavailable) as mismatch:
        wrong.list(NAMESPACES)
    assert "CERTIFICATE_VERIFY_FAILED" in str(mismatch.value)
    assert "wrong.example" in str(mismatch.value)


@pytest.mark.timeout(10)
def test_tls_server_name_reaches_a_server_at_an_address_its_certificate_lacks(
    server: RunningApiServer, start_relay: Callable[..., Relay],
    make_client: Callable[[Configuration], KubeClient],
) -> None:
    """At 127.0.0.2 (not in the certificate) the address alone fails; tls_server_name helps."""
    assert "127.0.0.2" not in certificate_names(server)
    try:
        relay = start_relay(address(server.url), host="127.0.0.2")
    except OSError as exc:
        pytest.skip(f"127.0.0.2 is not a loopback address here: {exc}")
    by_address = make_client(for_server(server, relay.url("https")))
    with pytest.raises(Unavailable, match="CERTIFICATE_VERIFY_FAILED"):
        by_address.list(NAMESPACES)
    by_name = make_client(for_server(server, relay.url("https"), tls_server_name="localhost"))
    assert by_name.list(NAMESPACES)[0]
    asserted = make_client(for_server(server, relay.url("https"), assert_hostname="localhost"))
    assert asserted.list(NAMESPACES)[0]
    unchecked = make_client(for_server(server, relay.url("https"), assert_hostname=False))
    assert unchecked.list(NAMESPACES)[0], "assert_hostname=False skips the name, as urllib3 does"


# --- 6. http:// proxies -------------------------------------------------------------------------


@pytest.mark.parametrize("server_name", [None, "localhost"])
def test_an_http_proxy_carries_tls_in_a_connect_tunnel_with_the_proxy_headers(
    server_name: str | None, server: RunningApiServer, ns: str,
    start_relay: Callable[..., Relay], make_client: Callable[[Configuration], KubeClient],
) -> None:
    """Pods are listed through the proxy; it saw one CONNECT to the server's host:port with
    the proxy headers, and the tunnel is kept alive across requests."""
    proxy = start_relay(tunnel=True)
    kube = make_client(for_server(
        server, proxy=proxy.url("http"), tls_server_name=server_name,
        proxy_headers={"Proxy-Authorization": PROXY_AUTHORIZATION}))
    for _ in range(3):
        assert kube.list(PODS, ns)[0] == []
    host, port = address(server.url)
    assert proxy.accepted == 1
    request_line, *header_lines = proxy.heads[0].split("\r\n")
    assert request_line.startswith(f"CONNECT {host}:{port} HTTP/1.")
    headers = dict(line.split(": ", 1) for line in header_lines)
    assert headers == {"Proxy-Authorization": PROXY_AUTHORIZATION}


@pytest.mark.parametrize(("no_proxy", "through_proxy"), [
    ("127.0.0.1", 0), ("localhost, 127.0.0.0/8", 0), ("*", 0), ("example.com", 1),
])
def test_no_proxy_covering_the_server_bypasses_the_proxy(
    no_proxy: str, through_proxy: int, server: RunningApiServer,
    start_relay: Callable[..., Relay], make_client: Callable[[Configuration], KubeClient],
) -> None:
    """A no_proxy entry matching the server's address (exactly, by CIDR or `*`) skips the
    proxy; one naming another host does not."""
    proxy = start_relay(tunnel=True)
    kube = make_client(for_server(server, proxy=proxy.url("http"), no_proxy=no_proxy))
    assert kube.list(NAMESPACES)[0]
    assert proxy.accepted == through_proxy


def test_plain_http_through_a_proxy_names_the_whole_url_and_sends_the_proxy_headers(
    start_stub: Callable[..., StubServer], make_client: Callable[[Configuration], KubeClient],
) -> None:
    """Without TLS there is no tunnel: the proxy gets the absolute URL (path prefix included)."""
    proxy = start_stub()
    kube = make_client(configuration(
        "http://apiserver.invalid:8080/k8s", proxy=proxy.url(),
        proxy_headers={"Proxy-Authorization": PROXY_AUTHORIZATION}))
    kube.get(CONFIGMAPS, "a", "ns")
    [seen] = proxy.requests
    assert seen.path == "http://apiserver.invalid:8080/k8s/api/v1/namespaces/ns/configmaps/a"
    assert seen.headers["host"] == "apiserver.invalid:8080"
    assert seen.headers["proxy-authorization"] == PROXY_AUTHORIZATION


def test_plain_http_through_a_proxy_brackets_an_ipv6_server(
    start_stub: Callable[..., StubServer], make_client: Callable[[Configuration], KubeClient],
) -> None:
    proxy = start_stub()
    kube = make_client(configuration("http://[fd00::1]:8080", proxy=proxy.url()))
    kube.get(CONFIGMAPS, "a", "ns")
    [seen] = proxy.requests
    assert seen.path == "http://[fd00::1]:8080/api/v1/namespaces/ns/configmaps/a"


@pytest.mark.parametrize("proxy", ["socks5://127.0.0.1:1080", "https://127.0.0.1:3128"])
def test_a_proxy_other_than_http_is_refused_with_a_clear_error(proxy: str) -> None:
    with pytest.raises(ValueError, match=f"only http:// proxies are supported.*{proxy}"):
        KubeClient(configuration("https://127.0.0.1:6443", proxy=proxy))


# --- 7. a server URL with a path ----------------------------------------------------------------


@pytest.mark.parametrize("server_path", ["/k8s/clusters/c-1", "/k8s/clusters/c-1/"])
def test_a_server_url_with_a_path_keeps_it_on_every_request(
    server_path: str, stub_tls: TlsFiles, start_stub: Callable[..., StubServer],
    make_client: Callable[[Configuration], KubeClient],
) -> None:
    """A server behind a path (Rancher's /k8s/clusters/NAME): every verb, query and watch
    goes below it."""
    stub = start_stub(tls=ssl_context(stub_tls))
    kube = make_client(configuration(stub.url() + server_path, ca_file=stub_tls.ca_cert))
    kube.get(CONFIGMAPS, "a", "n1")
    kube.list(CONFIGMAPS, "n1", label_selector="app=x")
    kube.create(CONFIGMAPS, {"metadata": {"name": "a"}}, "n1")
    kube.watch(CONFIGMAPS, "n1", resource_version="5", timeout_seconds=1).close()
    prefix = "/k8s/clusters/c-1/api/v1/namespaces/n1/configmaps"
    assert [(r.method, r.path) for r in stub.requests] == [
        ("GET", f"{prefix}/a"),
        ("GET", f"{prefix}?limit=500&labelSelector=app%3Dx"),
        ("POST", prefix),
        ("GET", f"{prefix}?watch=true&resourceVersion=5&timeoutSeconds=1"
                "&allowWatchBookmarks=true"),
    ]


# --- 8. a watch closed from another thread ------------------------------------------------------


@pytest.mark.timeout(20)
def test_a_watch_closed_while_blocked_in_a_read_ends_and_the_client_goes_on(
    server: RunningApiServer, client: KubeClient, ns: str, start_relay: Callable[..., Relay],
    make_client: Callable[[Configuration], KubeClient],
) -> None:
    """close() from another thread wakes the reader (its loop ends, no error); the watch's
    connection is closed rather than pooled, and the next GET gets a fresh one."""
    relay = start_relay(address(server.url))
    kube = make_client(for_server(server, relay.url("https")))
    _, resource_version = kube.list(CONFIGMAPS, ns)
    stream = kube.watch(CONFIGMAPS, ns, resource_version=resource_version,
                        timeout_seconds=300, allow_bookmarks=False)
    events: list[str] = []
    outcome: list[str] = []

    def read() -> None:
        try:
            events.extend(event["type"] for event in stream)
            outcome.append("ended")
        except BaseException as exc:
            outcome.append(repr(exc))

    reader = threading.Thread(target=read, name="watch-reader", daemon=True)
    reader.start()
    try:
        client.create(CONFIGMAPS, {"metadata": {"name": "a"}}, ns)
        eventually(lambda: events == ["ADDED"], timeout=5)
        # The reader is back in read1(), waiting for the next event (the path under test).
        eventually(lambda: stream._reading, timeout=5)
        stream.close()
        reader.join(5)
        assert not reader.is_alive(), "the watch did not return after close()"
    finally:
        stream.close()
        reader.join(5)
    assert outcome == ["ended"] and events == ["ADDED"]
    eventually(lambda: relay.ended == 1, timeout=5)  # the watch's connection was closed
    assert relay.accepted == 1
    for _ in range(5):
        assert kube.get(CONFIGMAPS, "a", ns)["metadata"]["name"] == "a"
    assert relay.accepted == 2  # one fresh connection, then kept alive


@pytest.mark.timeout(20)
def test_a_watch_closed_between_events_does_not_leave_its_stream_in_the_pool(
    server: RunningApiServer, client: KubeClient, ns: str, start_relay: Callable[..., Relay],
    make_client: Callable[[Configuration], KubeClient],
) -> None:
    """Closed by its reader mid-stream, the watch's connection is closed: were it pooled, the
    next GET would read the stream's next event as its answer."""
    relay = start_relay(address(server.url))
    kube = make_client(for_server(server, relay.url("https")))
    _, resource_version = kube.list(CONFIGMAPS, ns)
    client.create(CONFIGMAPS, {"metadata": {"name": "a"}}, ns)
    stream = kube.watch(CONFIGMAPS, ns, resource_version=resource_version,
                        timeout_seconds=300, allow_bookmarks=False)
    assert next(stream)["type"] == "ADDED"
    stream.close()
    with pytest.raises(StopIteration):
        next(stream)
    client.create(CONFIGMAPS, {"metadata": {"name": "b"}}, ns)  # an event for the old stream
    assert kube.get(CONFIGMAPS, "b", ns)["metadata"]["name"] == "b"
    eventually(lambda: relay.ended == 1, timeout=5)
    assert relay.accepted == 2


@pytest.mark.timeout(20)
def test_a_watch_the_server_ended_gives_its_connection_back(
    server: RunningApiServer, ns: str, start_relay: Callable[..., Relay],
    make_client: Callable[[Configuration], KubeClient],
) -> None:
    """A watch read to its end (the server's timeoutSeconds) leaves its connection reusable."""
    relay = start_relay(address(server.url))
    kube = make_client(for_server(server, relay.url("https")))
    _, resource_version = kube.list(CONFIGMAPS, ns)
    assert list(kube.watch(CONFIGMAPS, ns, resource_version=resource_version,
                           timeout_seconds=1, allow_bookmarks=False)) == []
    kube.list(CONFIGMAPS, ns)
    assert relay.accepted == 1 and relay.ended == 0
