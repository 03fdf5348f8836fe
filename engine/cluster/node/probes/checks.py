"""Running one readiness probe, as the kubelet's prober does: in process mode for real, in
simulate mode by the clock.

Process mode: `exec` runs the command inside the container (its mount namespace, root,
working directory and environment, entered as `kubectl exec` enters it) and succeeds on exit
code 0; `httpGet` sends a GET for `scheme://host:port/path` (host: the pod's IP, this
machine; a named port is looked up among the container's ports; certificates are not
verified, as the kubelet does not) and succeeds on a status from 200 to 399; `tcpSocket`
succeeds when a connection opens. Each gives up after `timeoutSeconds`. A `grpc` probe is not
run: it fails, saying so.
Simulate mode: nothing runs; a probe succeeds once `sim.jobmachine.dev/ready-seconds`
(`.NAME` for the container NAME; default 0) have passed since the attempt started, so a
simulated pod becomes ready at its first probe after that delay.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.cluster.apiserver.exec.container_ids import process_id
from engine.cluster.apiserver.exec.entry import EntryError, enter
from engine.cluster.node.config.env import POD_IP
from engine.cluster.node.probes.readiness import ProbeSpec
from engine.cluster.node.runtime import sim_annotations

_OUTPUT_LIMIT = 10 * 1024


@dataclass(frozen=True)
class Result:
    """A probe's outcome, and what failed (the kubelet's Unhealthy event says it)."""

    ok: bool
    output: str = ""


@dataclass(frozen=True)
class Target:
    """What a probe reads: the pod, the container's spec and the running attempt."""

    pod: Mapping[str, Any]
    container: Mapping[str, Any]
    container_id: str
    started: float  # monotonic instant the attempt started
    now: float


Prober = Callable[[ProbeSpec, Target], Result]


def process_probe(spec: ProbeSpec, target: Target) -> Result:
    """Runs the probe against the container's process."""
    if spec.handler == "exec":
        return _exec(spec, target)
    if spec.handler == "httpGet":
        return _http_get(spec, target)
    if spec.handler == "tcpSocket":
        return _tcp_socket(spec, target)
    if spec.handler == "grpc":
        return Result(False, "grpc probes are not run by the jobmachine local node")
    return Result(False, "the readiness probe names no handler")


def simulated_probe(spec: ProbeSpec, target: Target) -> Result:
    """Succeeds once the simulated delay since the attempt started has passed."""
    try:
        delay = sim_annotations.ready_seconds(target.pod, str(target.container.get("name")))
    except sim_annotations.SimulationError as exc:
        return Result(False, str(exc))
    if target.now - target.started >= delay:
        return Result(True)
    return Result(False, f"simulated: not ready until {delay:g}s after the start")


def _exec(spec: ProbeSpec, target: Target) -> Result:
    command = [str(part) for part in spec.action.get("command") or []]
    if not command:
        return Result(False, "the exec probe has no command")
    pid = process_id(target.container_id)
    if pid is None:
        return Result(False, "the container has no process")
    try:
        entry = enter(pid)
    except EntryError as exc:
        return Result(False, str(exc))
    try:
        done = subprocess.run([*entry.prefix, *command], env=entry.env, pass_fds=entry.fds,
                              capture_output=True, timeout=spec.timeout, check=False)
    except subprocess.TimeoutExpired:
        return Result(False, f"command timed out after {spec.timeout:g}s")
    except OSError as exc:
        return Result(False, str(exc))
    finally:
        entry.close()
    output = (done.stdout + done.stderr)[-_OUTPUT_LIMIT:].decode(errors="replace").strip()
    return Result(done.returncode == 0, output)


def _port(action: Mapping[str, Any], container: Mapping[str, Any]) -> int | None:
    """A probe's port: a number, or the name of one of the container's ports."""
    port = action.get("port")
    if isinstance(port, int) and not isinstance(port, bool):
        return port
    if isinstance(port, str) and port.isdigit():
        return int(port)
    for entry in container.get("ports") or ():
        if isinstance(entry, Mapping) and entry.get("name") == port:
            number = entry.get("containerPort")
            return number if isinstance(number, int) else None
    return None


def _host(action: Mapping[str, Any]) -> str:
    return str(action.get("host") or POD_IP)


def _http_get(spec: ProbeSpec, target: Target) -> Result:
    """One HTTP/1.1 GET over a socket of its own (the node speaks HTTP to the API server only
    through the client layer), judged by the status line."""
    action = spec.action
    port = _port(action, target.container)
    if port is None:
        return Result(False, f"port {action.get('port')!r} is not one of the container's")
    host, path = _host(action), str(action.get("path") or "/")
    path = path if path.startswith("/") else f"/{path}"
    headers = {"Host": f"{host}:{port}", "User-Agent": "kube-probe/1.32", "Accept": "*/*"}
    for header in action.get("httpHeaders") or ():
        if isinstance(header, Mapping) and header.get("name"):
            headers[str(header["name"])] = str(header.get("value") or "")
    request = f"GET {path} HTTP/1.1\r\n" + "".join(
        f"{name}: {value}\r\n" for name, value in headers.items()) + "Connection: close\r\n\r\n"
    secure = str(action.get("scheme") or "HTTP").upper() == "HTTPS"
    try:
        head = _exchange(host, port, request.encode(), secure=secure, timeout=spec.timeout)
    except (OSError, ValueError) as exc:
        return Result(False, f'Get "{path}": {exc}')
    status = _status_code(head)
    if status is None:
        return Result(False, f'Get "{path}": not an HTTP response')
    if 200 <= status < 400:
        return Result(True)
    return Result(False, f"HTTP probe failed with statuscode: {status}")


def _exchange(host: str, port: int, request: bytes, *, secure: bool, timeout: float) -> bytes:
    """Send `request`, read the response's first line (certificates are not verified)."""
    with socket.create_connection((host, port), timeout=timeout) as raw:
        connection: socket.socket = raw
        if secure:
            context = ssl.create_default_context()
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
            connection = context.wrap_socket(raw, server_hostname=host)
        connection.sendall(request)
        received = b""
        while b"\r\n" not in received and len(received) < _OUTPUT_LIMIT:
            chunk = connection.recv(4096)
            if not chunk:
                break
            received += chunk
        return received.split(b"\r\n", 1)[0]


def _status_code(line: bytes) -> int | None:
    """The code of an `HTTP/1.x NNN reason` status line."""
    parts = line.split()
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
        return None
    return int(parts[1])


def _tcp_socket(spec: ProbeSpec, target: Target) -> Result:
    port = _port(spec.action, target.container)
    if port is None:
        return Result(False, f"port {spec.action.get('port')!r} is not one of the container's")
    address = (_host(spec.action), port)
    try:
        connection = socket.create_connection(address, timeout=spec.timeout)
    except OSError as exc:
        return Result(False, f"dial tcp {address[0]}:{port}: {exc}")
    with contextlib.suppress(OSError):
        connection.close()
    return Result(True)


def prober_for(mode: str) -> Prober:
    """The prober of a runtime mode ("process" or "simulate")."""
    return process_probe if mode == "process" else simulated_probe
