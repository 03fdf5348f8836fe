"""Running the embedded API server: `jobmachine apiserver`, or in a thread for tests and tools.

Both ways bind the address, write a kubeconfig (context `jobmachine`, the
bearer token, and the CA when serving TLS) and keep serving until stopped;
`running_apiserver` runs the server on its own asyncio loop in a background
thread and stops it cleanly (journal flushed and closed) on exit. The loop is uvloop's
(libuv, with its TLS layer in C): asyncio's own loop and pure-Python SSL layer cost about
a third of the server's CPU per request (docs/performance.md).
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import uvloop
from aiohttp import web
from loguru import logger

from engine.cluster.apiserver.auth.audit import AuditLog
from engine.cluster.apiserver.auth.authentication import load_or_create_token, load_token_users
from engine.cluster.apiserver.auth.service_account_tokens import TokenAuthority
from engine.cluster.apiserver.controllers.event_expiry import DEFAULT_EVENT_TTL
from engine.cluster.apiserver.core import DEFAULT_COMPACTION_INTERVAL, Core, open_core
from engine.cluster.apiserver.endpoints.faults import FaultInjector
from engine.cluster.apiserver.endpoints.http_errors import HTTP_LIMITS, StatusAppRunner
from engine.cluster.apiserver.endpoints.kubeconfig import write_kubeconfig
from engine.cluster.apiserver.endpoints.server import build_app
from engine.cluster.apiserver.endpoints.tls import create_ca_and_server_cert, ssl_context
from engine.cluster.apiserver.endpoints.watch_stream import WatchSettings
from engine.cluster.apiserver.registry.reactor import LoopReactor
from engine.cluster.apiserver.storage.watch import DEFAULT_HISTORY, DEFAULT_HISTORY_AGE
from engine.collector import freeze_start_up, tune_collector
from engine.loop_thread import run_on, running_loop

_STARTUP_TIMEOUT = 60.0
# How long in-flight requests (a followed log, a watch) get to finish when stopping.
_SHUTDOWN_TIMEOUT = 2.0


@dataclass(frozen=True)
class ServerOptions:
    """Tuning knobs beyond the command line's."""

    # Changes kept per resource type for watch resumption and consistent paging...
    history: int = DEFAULT_HISTORY
    # ...and none older than this many seconds (0: no age bound).
    history_age: float = DEFAULT_HISTORY_AGE
    # Seconds an Event lives after its last write (kube-apiserver's --event-ttl); 0 keeps
    # events until someone deletes them.
    event_ttl: float = DEFAULT_EVENT_TTL
    watch: WatchSettings = field(default_factory=WatchSettings)
    # Where to append the audit log ("-": standard output); None writes none.
    audit_log: str | None = None
    # A kube-apiserver `--token-auth-file` of users who may log in with a token.
    token_auth_file: Path | None = None
    # Faults to inject (tests and the harness; `faults.py`); None installs nothing.
    faults: FaultInjector | None = None
    # Seconds between compactions of the journal while serving; 0 compacts only at start.
    compaction_interval: float = DEFAULT_COMPACTION_INTERVAL


@dataclass(frozen=True)
class RunningApiServer:
    """Where a running server is and how to reach it."""

    url: str
    kubeconfig: Path
    token: str
    ca_file: Path | None
    # Where the server keeps its files: the --data-dir, or a temporary directory when
    # objects live in memory only (then `persistent` is False).
    data_dir: Path
    persistent: bool
    # Where the pod log subresource reads `<namespace>/<pod>/<container>.log` from.
    logs_dir: Path


class _Server:
    """One started server on the current event loop."""

    def __init__(self, runner: web.AppRunner, core: Core, info: RunningApiServer,
                 audit: AuditLog | None) -> None:
        self.runner = runner
        self.core = core
        self.info = info
        self.audit = audit

    async def stop(self) -> None:
        self.core.store.hub.close_all()
        await self.runner.cleanup()
        await self.core.close()
        if self.audit is not None:
            self.audit.close()


def _url_host(host: str) -> str:
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


async def _start(
    *,
    host: str,
    port: int,
    data_dir: Path | None,
    files_dir: Path,
    kubeconfig: Path | None,
    tls: bool,
    options: ServerOptions,
) -> _Server:
    """Start serving; `files_dir` holds the kubeconfig, logs and TLS files (the data dir
    when persisting)."""
    files_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    token = load_or_create_token(data_dir)
    users = load_token_users(options.token_auth_file) if options.token_auth_file else None
    tls_files = create_ca_and_server_cert(files_dir / "tls", [host]) if tls else None
    root_ca = tls_files.ca_cert.read_text() if tls_files else ""
    core = open_core(LoopReactor(asyncio.get_running_loop()), data_dir=data_dir,
                     history=options.history, history_age=options.history_age,
                     event_ttl=options.event_ttl, root_ca=root_ca)
    core.compact_every(options.compaction_interval)
    logs_dir = files_dir / "logs"
    audit = AuditLog(options.audit_log) if options.audit_log else None
    app = build_app(core, token=token, logs_dir=logs_dir, watch=options.watch,
                    tokens=TokenAuthority.for_data_dir(data_dir), audit=audit, users=users,
                    faults=options.faults)
    runner = StatusAppRunner(
        app, handler_cancellation=True, access_log=None, shutdown_timeout=_SHUTDOWN_TIMEOUT,
        **HTTP_LIMITS,
    )
    await runner.setup()
    site = web.TCPSite(
        runner, host, port, ssl_context=ssl_context(tls_files) if tls_files else None
    )
    await site.start()
    bound_port = runner.addresses[0][1]
    logger.bind(component="apiserver").debug(
        f"serving on port {bound_port}, on {type(asyncio.get_running_loop()).__module__}'s "
        "event loop")
    url = f"{'https' if tls else 'http'}://{_url_host(host)}:{bound_port}"
    ca_file = tls_files.ca_cert if tls_files else None
    config_path = kubeconfig or files_dir / "kubeconfig"
    write_kubeconfig(config_path, server=url, token=token, ca_file=ca_file)
    info = RunningApiServer(url, config_path, token, ca_file, files_dir, data_dir is not None,
                            logs_dir)
    return _Server(runner, core, info, audit)


def serve_forever(
    *,
    host: str = "127.0.0.1",
    port: int = 6443,
    data_dir: Path | None = None,
    kubeconfig: Path | None = None,
    tls: bool = False,
    options: ServerOptions | None = None,
) -> None:
    """Serve until SIGINT or SIGTERM, printing the URL and the kubeconfig path. The
    process's garbage collector is tuned for a server's long-lived objects."""
    tune_collector()
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(_serve_forever(host, port, data_dir, kubeconfig, tls,
                                  options=options or ServerOptions()))


async def _serve_forever(
    host: str, port: int, data_dir: Path | None, kubeconfig: Path | None, tls: bool,
    *, options: ServerOptions,
) -> None:
    files_dir = data_dir or Path(tempfile.mkdtemp(prefix="jobmachine-apiserver-"))
    server = await _start(host=host, port=port, data_dir=data_dir, files_dir=files_dir,
                          kubeconfig=kubeconfig, tls=tls, options=options)
    info = server.info
    print(f"jobmachine apiserver serving at {info.url}", flush=True)
    print(f"kubeconfig: {info.kubeconfig}", flush=True)
    if not info.persistent:
        print("objects are kept in memory only (no --data-dir)", flush=True)
    freeze_start_up()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        await server.stop()
        if data_dir is None:
            shutil.rmtree(files_dir, ignore_errors=True)


@contextmanager
def running_apiserver(
    *,
    data_dir: Path | None = None,
    tls: bool = False,
    host: str = "127.0.0.1",
    port: int = 0,
    options: ServerOptions | None = None,
) -> Iterator[RunningApiServer]:
    """Run a server in a background thread (its own asyncio loop) for the `with` block.
    Without `data_dir` its files (certificates, kubeconfig) go to a scratch folder removed
    at the end; with one, nothing is made elsewhere (a process killed mid-way leaves no
    scratch folder behind)."""
    files_dir = data_dir or Path(tempfile.mkdtemp(prefix="jobmachine-apiserver-"))
    try:
        with running_loop("jobmachine-apiserver", new_loop=uvloop.new_event_loop) as loop:
            server = run_on(loop, _start(
                host=host, port=port, data_dir=data_dir, files_dir=files_dir,
                kubeconfig=None, tls=tls, options=options or ServerOptions(),
            ), timeout_s=_STARTUP_TIMEOUT, what="starting the embedded API server")
            try:
                yield server.info
            finally:
                run_on(loop, server.stop(), timeout_s=30, what="stopping the API server")
    finally:
        if data_dir is None:
            shutil.rmtree(files_dir, ignore_errors=True)
