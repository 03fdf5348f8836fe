"""`jobmachine run`: the engine against any cluster, with optional leader election and metrics.

Exits 0 on SIGINT/SIGTERM after stopping cleanly, and 1 when leadership was
lost (field notes, story 9: a process that lost its lease must not keep acting;
its supervisor restarts it as a fresh candidate).
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from loguru import logger

from engine.app.live import LiveReport, use_colour
from engine.app.web import WebOptions, serving_web_view
from engine.collector import tune_collector
from engine.controller.coordination.leader import LeaderElector
from engine.controller.coordination.shard_leases import LeaseTimings, ShardCoordinator
from engine.controller.coordination.shards import ShardGate
from engine.controller.machines.install import apply_machines
from engine.controller.reporting.health import serve_metrics_and_health
from engine.controller.runtime.manager import Engine
from engine.kube.client import KubeClient
from engine.kube.errors import Forbidden
from engine.kube.in_cluster import PodIdentity
from engine.kube.refusals import classify
from engine.settings import EngineSettings


@dataclass(frozen=True)
class RunOptions:
    """The flags of `jobmachine run`."""

    kubeconfig: Path | None = None
    in_cluster: PodIdentity | None = None
    """The pod's service account and the API server's address (--in-cluster)."""
    machines: Path | None = None
    """Apply these machine files as StateMachine objects before starting (None: apply
    nothing; the engine runs the StateMachine objects the cluster has)."""
    namespace: str | None = None
    leader_elect: bool = False
    shards: int | None = None
    """Split jobs into this many shards, shared out among the replicas (None: one engine
    does everything)."""
    lease_namespace: str = "default"
    metrics_port: int | None = None
    metrics_address: str = "127.0.0.1"
    """Loopback unless told otherwise (in a pod: 0.0.0.0, for probes and Prometheus)."""
    live: bool = False
    """Print one line per job state change and replica failure or restart (as `up` does)."""
    parent_pid: int | None = None
    """Stop when this process is no longer our parent (`up` runs the engine so)."""
    ui_port: int | None = None
    """Serve the web view on this port (0: a free one; None: no web view)."""
    ui_address: str = "127.0.0.1"
    """The address the web view listens on (loopback unless told otherwise)."""
    settings: EngineSettings = field(default_factory=EngineSettings)


def run_engine(options: RunOptions, *, stop: threading.Event | None = None) -> int:
    """Run until `stop` (default: SIGINT/SIGTERM); the process exit code."""
    if options.shards is not None and options.leader_elect:
        raise ValueError("choose leader election or shards, not both: with shards every "
                         "replica works")
    tune_collector()
    stop = stop or _stop_on_signals()
    settings = options.settings
    client = (
        KubeClient.in_cluster(options.in_cluster, qps=settings.client_qps,
                              burst=settings.client_burst)
        if options.in_cluster is not None
        else KubeClient.from_kubeconfig(
            options.kubeconfig, qps=settings.client_qps, burst=settings.client_burst
        )
    )
    if options.machines is not None:
        _apply_given_machines(client, options.machines)
    identity = f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}"
    gate = ShardGate(options.shards) if options.shards is not None else None
    pod = options.in_cluster
    engine = Engine(client, settings, namespace=options.namespace, shards=gate,
                    identity=identity,
                    in_own_namespace=pod is not None and pod.namespace == settings.system_namespace)
    elector = _elector(client, options, identity) if options.leader_elect else None
    coordinator = (
        ShardCoordinator(
            client, gate, namespace=options.lease_namespace,
            prefix=settings.shard_lease_prefix, identity=identity,
            timings=LeaseTimings(settings.lease_duration_s, settings.renew_deadline_s,
                                 settings.retry_period_s),
            on_granted=engine.shard_granted,
        )
        if gate is not None else None
    )
    health = (
        serve_metrics_and_health(
            options.metrics_port, engine.metrics, lambda: engine.synced,
            is_leader=(lambda: elector.is_leader) if elector else None,
            api_health=engine.api_health, host=options.metrics_address,
        )
        if options.metrics_port is not None
        else None
    )
    report = LiveReport(sys.stdout, colour=use_colour(sys.stdout)) if options.live else None
    if report is not None:
        report.start()
        engine.recorder.add_listener(report)
    if options.parent_pid is not None:
        _stop_when_orphaned(options.parent_pid, stop)
    try:
        with _web_view(client, options):
            engine.run(stop, leader_election=elector, sharding=coordinator)
    finally:
        if health is not None:
            health.stop()
        client.close()
        if report is not None:
            report.stop()
    if elector is not None and not stop.is_set():
        logger.error("leadership lost: exiting so that a supervisor restarts a fresh candidate")
        return 1
    return 0


class MachinesRefused(Exception):  # noqa: N818 (says what happened, as the API's errors do)
    """`--machines` could not be applied: the server refused writing StateMachine objects.

    The shipped RBAC lets the engine read StateMachine objects, never write them: the
    rules it runs are the cluster administrator's to apply, not its own to change. So
    `--machines` is for a user's own credentials (a kubeconfig), and with the engine's
    service account it stops with one line saying what to do instead.
    """


def _apply_given_machines(client: KubeClient, machines: Path) -> None:
    try:
        applied = apply_machines(client, [machines])
    except Forbidden as exc:
        client.close()
        advice = (f"; the engine's RBAC (deploy/base/rbac.yaml) only reads them: apply them "
                  f"as someone who may (kubectl apply -f {machines}) and run without "
                  f"--machines") if classify(exc).rbac else ""
        raise MachinesRefused(f"the API server refused the StateMachine objects of "
                              f"{machines}: {exc.message}{advice}") from exc
    logger.info(f"applied StateMachine objects {', '.join(applied)} from {machines}")


@contextmanager
def _web_view(client: KubeClient, options: RunOptions) -> Iterator[None]:
    """The web view for the engine's run, when `options` asks for one."""
    if options.ui_port is None:
        yield
        return
    with serving_web_view(client, WebOptions(
        address=options.ui_address, port=options.ui_port,
        system_namespace=options.settings.system_namespace, namespace=options.namespace,
    )) as view:
        print(f"web view: {view.url} (log in with a bearer token the API server accepts)",
              flush=True)
        yield


def _elector(client: KubeClient, options: RunOptions, identity: str) -> LeaderElector:
    settings = options.settings
    return LeaderElector(
        client, namespace=options.lease_namespace, name=settings.lease_name, identity=identity,
        lease_duration_s=settings.lease_duration_s, renew_deadline_s=settings.renew_deadline_s,
        retry_period_s=settings.retry_period_s,
    )


def _stop_when_orphaned(parent_pid: int, stop: threading.Event) -> None:
    """Set `stop` once `parent_pid` is no longer our parent (it died, even by SIGKILL)."""

    def watch() -> None:
        while not stop.wait(_ORPHAN_CHECK_S):
            if os.getppid() != parent_pid:
                logger.warning(f"process {parent_pid} that started the engine is gone: "
                               "stopping")
                stop.set()

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


_ORPHAN_CHECK_S = 1.0


def _stop_on_signals() -> threading.Event:
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    return stop
