"""The pod `exec` subresource: a command in a running container of the local node, streamed
over a WebSocket (`v5.channel.k8s.io`, as kubectl 1.30 and newer speak it, or
`v4.channel.k8s.io`).

What kube-apiserver checks itself is answered before the upgrade, with its messages (the
container name, a pod without a node, a request that is no WebSocket upgrade). What the
kubelet finds (the container is not running) comes after it, on the error channel, as
kube-apiserver's stream translator reports the kubelet's answer. SPDY is not served: kubectl
tries the WebSocket first and falls back to SPDY only when the upgrade is refused, and the
SPDY request is checked the same way, so an error before the upgrade reaches kubectl as is.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import hdrs, web
from loguru import logger

from engine.cluster.apiserver.endpoints import params
from engine.cluster.apiserver.errors import bad_request, method_not_allowed
from engine.cluster.apiserver.exec.channels import (
    PROTOCOLS,
    TerminalSize,
    bad_request_status,
    internal_error_status,
    negotiate,
    offered_protocols,
)
from engine.cluster.apiserver.exec.container_ids import is_simulated, process_id
from engine.cluster.apiserver.exec.entry import Entry, EntryError, enter
from engine.cluster.apiserver.exec.process import ExecProcess, Streams, start
from engine.cluster.apiserver.exec.session import Session, StartError
from engine.cluster.apiserver.storage.objects import Obj

_MAX_MESSAGE = 16 * 1024 * 1024

_log = logger.bind(component="apiserver.exec")


@dataclass(frozen=True)
class ExecOptions:
    """PodExecOptions, from the query."""

    command: tuple[str, ...]
    container: str | None
    streams: Streams


def exec_options(query: params.Query) -> ExecOptions:
    tty = params.flag(query, "tty")
    streams = Streams(stdin=params.flag(query, "stdin"), stdout=params.flag(query, "stdout"),
                      # A terminal carries both outputs, as the kubelet has it.
                      stderr=params.flag(query, "stderr") and not tty, tty=tty)
    if not (streams.stdin or streams.stdout or streams.stderr):
        raise bad_request("you must specify at least 1 of stdin, stdout, stderr")
    command = tuple(query.getall("command", []))
    if not command:
        raise bad_request("you must specify a command (the command parameter)")
    return ExecOptions(command, query.get("container") or None, streams)


def _names(pod: Obj, field: str) -> list[str]:
    return [str(c.get("name", "")) for c in (pod.get("spec") or {}).get(field) or ()
            if isinstance(c, dict)]


def choose_container(pod: Obj, wanted: str | None) -> str:
    """The container an exec names, or kube-apiserver's 400 when it names none or a wrong
    one."""
    name = pod["metadata"]["name"]
    main, init = _names(pod, "containers"), _names(pod, "initContainers")
    if wanted:
        if wanted not in main + init + _names(pod, "ephemeralContainers"):
            raise bad_request(f"container {wanted} is not valid for pod {name}")
        return wanted
    if len(main) == 1:
        return main[0]
    if not main:
        raise bad_request(f"a container name must be specified for pod {name}")
    message = (f"a container name must be specified for pod {name}, "
               f"choose one of: [{' '.join(main)}]")
    if init:
        message += f" or one of the init containers: [{' '.join(init)}]"
    raise bad_request(message)


def _container_id(pod: Obj, container: str) -> str | None:
    """The containerID of `container` while it runs."""
    status = pod.get("status") or {}
    for field in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"):
        for entry in status.get(field) or ():
            if entry.get("name") == container and "running" in (entry.get("state") or {}):
                return str(entry.get("containerID") or "") or None
    return None


def locate(pod: Obj, container: str) -> Entry:
    """How to run a command in the container, or the Status that says why not."""
    container_id = _container_id(pod, container)
    if container_id is not None and is_simulated(container_id):
        raise StartError(bad_request_status(
            f'cannot exec in container "{container}" of pod "{pod["metadata"]["name"]}": '
            "the local node runs in simulate mode, where containers have no processes"))
    pid = process_id(container_id or "")
    try:
        if pid is None:
            raise EntryError("not running")
        return enter(pid)
    except EntryError as exc:
        _log.debug("container {} of pod {}: {}", container, pod["metadata"]["name"], exc)
        raise StartError(internal_error_status(
            f'unable to upgrade connection: container not found ("{container}")')) from exc


def _protocol(request: web.Request) -> str:
    """The subprotocol of a WebSocket upgrade, or the 400 for any other request."""
    upgrade = request.headers.get(hdrs.UPGRADE, "").lower()
    if upgrade != "websocket":
        if upgrade:
            raise bad_request(f"exec is served over WebSocket ({', '.join(PROTOCOLS)}), not "
                              f"{request.headers[hdrs.UPGRADE]}")
        raise bad_request("Upgrade request required")
    offered = offered_protocols(request.headers.get(hdrs.SEC_WEBSOCKET_PROTOCOL, ""))
    protocol = negotiate(offered)
    if protocol is None:
        raise bad_request(f"requested protocol(s) are not supported: [{' '.join(offered)}]; "
                          f"supports [{' '.join(PROTOCOLS)}]")
    return protocol


async def serve_exec(request: web.Request, pod: Obj) -> web.StreamResponse:
    """Run the command the query asks for in one of `pod`'s containers, over a WebSocket."""
    if request.method not in ("GET", "POST"):
        raise method_not_allowed(f"{request.method} is not allowed on exec")
    options = exec_options(request.query)
    container = choose_container(pod, options.container)
    name = pod["metadata"]["name"]
    if not (pod.get("spec") or {}).get("nodeName"):
        raise bad_request(f"pod {name} does not have a host assigned")
    protocol = _protocol(request)
    ws = web.WebSocketResponse(protocols=PROTOCOLS, max_msg_size=_MAX_MESSAGE)
    await ws.prepare(request)
    _log.debug("exec {} in {}/{} ({})", list(options.command), name, container, protocol)

    async def begin(size: TerminalSize | None) -> ExecProcess:
        entry = locate(pod, container)
        try:
            return await start(entry, options.command, options.streams, size)
        except OSError as exc:
            raise StartError(internal_error_status(f"error executing command: {exc}")) from exc

    code = await Session(ws, protocol, options.streams).run(begin)
    _log.debug("exec in {}/{} ended with {}", name, container, code)
    return ws
