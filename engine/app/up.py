"""`jobmachine up`: the API server with the CRDs, the local node and the engine.

The node runs as a process of its own, as a kubelet does (`jobmachine node`, started and
stopped by `up`: `engine.cluster.node.child`), and the command runs the engine as another
child (`jobmachine run --live` against the server), so the server is not charged for the
node's or the engine's side of their requests; `running_local_cluster` runs the engine in
this process instead, for tests and the demo, which look into the engine.
With a data dir everything persists (objects, the node's state, the token and
CA), so stopping and starting again resumes every job where it was: the engine
reads each job's state back from its status, the write-ahead log.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from engine.app.web import RunningWebView, WebOptions, serving_web_view
from engine.cluster import running_apiserver
from engine.cluster.apiserver.admission.pod_security import default_namespace_labels
from engine.cluster.apiserver.controllers.event_expiry import DEFAULT_EVENT_TTL
from engine.cluster.apiserver.core import DEFAULT_COMPACTION_INTERVAL
from engine.cluster.apiserver.endpoints.serve import RunningApiServer, ServerOptions
from engine.cluster.node import Capacity, RestartBackoff
from engine.cluster.node.child import NodeSpec, node_process
from engine.collector import freeze_start_up, tune_collector
from engine.controller.machines.install import prepare_cluster
from engine.controller.runtime.manager import Engine
from engine.kube.client import KubeClient
from engine.kube.resources import NAMESPACES
from engine.settings import ENV_PREFIX, EngineSettings
from engine.shipped import shipped_dir, shipped_dir_if_present
from engine.subprocesses import stop_gracefully

NodeMode = Literal["process", "simulate"]


@dataclass(frozen=True)
class UpOptions:
    """What `up` runs and where it keeps its files."""

    data_dir: Path | None = None
    port: int = 6443
    node_mode: NodeMode = "process"
    machines: Path | None = None
    settings: EngineSettings = field(
        default_factory=lambda: EngineSettings(stand_in_for_built_ins=True))
    """The engine's (its embedded cluster has no job controller: the engine stands in)."""
    restart_backoff: RestartBackoff | None = None
    """How the local node backs off restarting crashed containers (default: the kubelet's)."""
    node_capacity: Capacity | None = None
    """What the local node offers pods (default: this machine's CPUs and memory)."""
    audit_log: str | None = None
    """Where the API server appends its audit log ("-": standard output); None: no log."""
    token_auth_file: Path | None = None
    """Users who log in with a bearer token (kube-apiserver's --token-auth-file format)."""
    event_ttl: float = DEFAULT_EVENT_TTL
    """Seconds an Event is kept after its last write (kube-apiserver's --event-ttl); 0: kept
    until deleted."""
    compaction_interval: float = DEFAULT_COMPACTION_INTERVAL
    """Seconds between compactions of the data dir's journal while serving (0: at start)."""
    pod_security: str = "baseline"
    """The Pod Security level the `default` namespace enforces (privileged: none)."""
    ui_port: int | None = 0
    """The web view's port (0: a free one; None: no web view); `serve_until_interrupted`
    serves it."""
    ui_address: str = "127.0.0.1"
    """The address the web view listens on (loopback unless told otherwise)."""


UNLIMITED_ON_OWN_SERVER = ("client_qps", "event_qps")
"""Settings `up` leaves unlimited unless the environment sets them: the server is `up`'s
own, so a client-side rate limit would protect nothing and only slow jobs down."""


def local_settings(environ: Mapping[str, str] | None = None, **overrides: object) -> EngineSettings:
    """The engine's settings under `up`: from the environment, with no client rate limit
    unless one is set there."""
    env = os.environ if environ is None else environ
    unlimited: dict[str, object] = {
        name: math.inf for name in UNLIMITED_ON_OWN_SERVER
        if ENV_PREFIX + name.upper() not in env
    }
    return EngineSettings.from_env(
        env, **{**unlimited, "stand_in_for_built_ins": True, **overrides})


@dataclass(frozen=True)
class LocalCluster:
    """A running `up`: how to reach the server, and the engine (for tests and the demo)."""

    server: RunningApiServer
    client: KubeClient
    engine: Engine


@contextmanager
def running_local_server(options: UpOptions) -> Iterator[tuple[RunningApiServer, KubeClient]]:
    """The local server and node (no engine); see `_serving`."""
    with _serving(options) as (server, client, _):
        yield server, client


@contextmanager
def _serving(
    options: UpOptions,
) -> Iterator[tuple[RunningApiServer, KubeClient, subprocess.Popen[bytes]]]:
    """Start the server, install the CRDs (the job kinds', and the PodGroups' of the two gang
    schedulers the local node stands in for), apply the machines as StateMachine objects
    and the shipped manifests (Kubeflow Trainer's default runtimes), and start the node as
    a process of its own (`engine.cluster.node.child`; no engine); stop all on exit."""
    crds = [shipped_dir("crds"), shipped_dir("crds") / "podgroups"]
    machines = options.machines or shipped_dir("machines")
    node_dir = options.data_dir / "node" if options.data_dir else None
    server_options = ServerOptions(audit_log=options.audit_log,
                                   token_auth_file=options.token_auth_file,
                                   event_ttl=options.event_ttl,
                                   compaction_interval=options.compaction_interval)
    with running_apiserver(data_dir=options.data_dir, tls=True, port=options.port,
                           options=server_options) as server:
        settings = options.settings
        client = KubeClient.from_kubeconfig(
            server.kubeconfig, qps=settings.client_qps, burst=settings.client_burst
        )
        try:
            # Before any pod can be created there: the labels of kube-apiserver's PodSecurity.
            client.patch(NAMESPACES, "default", {
                "metadata": {"labels": default_namespace_labels(options.pod_security)}})
            prepare_cluster(client, crds=crds, machines=machines,
                            manifests=shipped_dir_if_present("manifests"))
            with node_process(NodeSpec(
                url=server.url, ca_file=server.ca_file, logs_dir=server.logs_dir,
                state_dir=node_dir or server.data_dir / "node", mode=options.node_mode,
                restart_backoff=options.restart_backoff, capacity=options.node_capacity,
            ), server.token) as node:
                yield server, client, node
        finally:
            client.close()


@contextmanager
def running_local_cluster(options: UpOptions) -> Iterator[LocalCluster]:
    """The local server and node with the engine in this process (tests, the demo)."""
    with running_local_server(options) as (server, client):
        engine = Engine(client, options.settings)
        stop = threading.Event()
        runner = threading.Thread(target=engine.run, args=(stop,), name="jobmachine-engine",
                                  daemon=True)
        runner.start()
        try:
            yield LocalCluster(server, client, engine)
        finally:
            stop.set()
            runner.join(60)


def serve_until_interrupted(
    options: UpOptions, *, quiet: bool = False, with_engine: bool = True
) -> None:
    """Run `up` in the foreground: print how to reach it, then (unless `quiet`) one line per
    job state change and per replica failure or restart; stop cleanly on Ctrl-C or SIGTERM.
    Without the engine, only the server and the node run (an engine elsewhere drives jobs)."""
    tune_collector()
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    with _serving(options) as (server, client, node), _web_view(client, options) as view:
        engine = (_start_engine_process(server, options.settings, live=not quiet)
                  if with_engine else None)
        try:
            without = "" if with_engine else ", no engine"
            print(f"jobmachine is up at {server.url} (node mode {options.node_mode}{without})",
                  flush=True)
            capacity = options.node_capacity or Capacity.of_this_machine()
            print("node capacity: " + ", ".join(f"{k}={v}" for k, v in capacity.written.items()),
                  flush=True)
            print(f"export KUBECONFIG={server.kubeconfig}", flush=True)
            if view is not None:
                print(f"web view: {view.login_link(server.token)}", flush=True)
            print("Ctrl-C stops everything; run `jobmachine up` again with the same --data-dir "
                  "to resume.", flush=True)
            freeze_start_up()
            while not stop.wait(1.0):
                gone = next(((name, child) for name, child in (("engine", engine),
                                                               ("node", node))
                             if child is not None and child.poll() is not None), None)
                if gone is not None:
                    print(f"the {gone[0]} exited with code {gone[1].returncode}; stopping",
                          file=sys.stderr, flush=True)
                    break
            print("stopping...", flush=True)
        finally:
            if engine is not None:
                # The engine's own grace (its queued events are posted), then SIGKILL.
                stop_gracefully(engine, options.settings.shutdown_grace_s + 5,
                                "the engine process")


@contextmanager
def _web_view(client: KubeClient, options: UpOptions) -> Iterator[RunningWebView | None]:
    """The web view, when `options` asks for one."""
    if options.ui_port is None:
        yield None
        return
    with serving_web_view(client, WebOptions(
        address=options.ui_address, port=options.ui_port,
        system_namespace=options.settings.system_namespace,
    )) as view:
        yield view


def _start_engine_process(
    server: RunningApiServer, settings: EngineSettings, *, live: bool
) -> subprocess.Popen[bytes]:
    """`jobmachine run` against the local server, with `up`'s settings, as a child that
    shares this terminal and stops when this process goes (even when killed outright)."""
    env = {**os.environ, **{ENV_PREFIX + name.upper(): str(value)
                            for name, value in settings.model_dump().items()}}
    command = [sys.executable, "-m", "engine.cli", "run", "--kubeconfig",
               str(server.kubeconfig), "--parent-pid", str(os.getpid()),
               *(["--live"] if live else [])]
    return subprocess.Popen(command, env=env)
