"""What the chaos run does to the cluster: kills the engine, loses the node, injects faults.

- `EngineProcess` runs `jobmachine run` as its own process, so it can be killed
  with SIGKILL at any point (mid-write, mid-reconcile) and started again.
- `NodeHost` runs the local node in this process; losing it stops the node (its
  containers die with it, and it writes nothing more), then does what
  Kubernetes' node lifecycle and pod garbage collector do for a node that is
  gone: every pod bound to it that had not ended gets the `DisruptionTarget`
  condition and phase Failed, and is deleted; the Node object is deleted. A
  fresh node then registers under the same name.
- `FaultPhases` turns the API server's fault plan on and off in phases and
  compacts its watch history now and then, so clients get 410 Expired.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from loguru import logger

from engine.cluster.apiserver.endpoints.faults import FaultInjector, FaultPlan, FaultRule
from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from engine.cluster.node import LocalNode, RestartBackoff
from engine.cluster.node.scheduling.capacity import Capacity
from engine.kube.client import KubeClient
from engine.kube.errors import NotFound
from engine.kube.resources import NODES, PODS

_log = logger.bind(component="chaos")

NODE_NAME = "jobmachine-local"
_TERMINAL = frozenset({"Succeeded", "Failed"})


class EngineProcess:
    """`jobmachine run` in a process of its own, killed and restarted on demand."""

    def __init__(self, kubeconfig: Path, logs_dir: Path, env: Mapping[str, str]) -> None:
        self._kubeconfig = kubeconfig
        self._logs_dir = logs_dir
        self._env = {**os.environ, **env}
        self._process: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.kills: list[float] = []
        """When (time.monotonic) each SIGKILL was sent."""

    @property
    def log_files(self) -> list[Path]:
        return sorted(self._logs_dir.glob("engine-*.log"))

    def start(self) -> None:
        self.starts += 1
        command = [str(Path(sys.executable).with_name("jobmachine")), "run",
                   "--kubeconfig", str(self._kubeconfig)]
        log = (self._logs_dir / f"engine-{self.starts:04d}.log").open("wb")
        with log:
            self._process = subprocess.Popen(command, env=self._env, stdout=log,
                                             stderr=subprocess.STDOUT)

    def kill(self) -> None:
        """SIGKILL: no shutdown, whatever it was doing is cut off."""
        process = self._process
        if process is None or process.poll() is not None:
            return
        self.kills.append(time.monotonic())
        process.send_signal(signal.SIGKILL)
        process.wait(30)

    def restart(self) -> None:
        """Kill it with SIGKILL and start it again at once."""
        self.kill()
        self.start()

    def ensure_running(self) -> None:
        """Start it again if it is not running (died, or was killed)."""
        if self._process is None or self._process.poll() is not None:
            self.start()

    def stop(self) -> None:
        """SIGTERM and wait: the clean shutdown at the end of the run."""
        process = self._process
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


@dataclass
class NodeHost:
    """The local node, run in this process, lost and replaced on demand."""

    server: RunningApiServer
    mode: str
    state_dir: Path
    capacity: Capacity
    restart_backoff: RestartBackoff
    node: LocalNode | None = None
    losses: int = 0
    disrupted_pods: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> None:
        node = LocalNode(url=self.server.url, token=self.server.token,
                         ca_file=self.server.ca_file, logs_dir=self.server.logs_dir,
                         state_dir=self.state_dir, mode="process" if self.mode == "process"
                         else "simulate", restart_backoff=self.restart_backoff,
                         capacity=self.capacity, heartbeat_s=2.0)
        node.start()
        self.node = node

    def stop(self) -> None:
        if self.node is not None:
            self.node.stop()
            self.node = None

    def lose(self, client: KubeClient) -> set[str]:
        """Lose the node and replace it; the uids of the jobs whose pods were lost with it."""
        with self.lock:
            self.stop()
            self.losses += 1
            jobs = self._collect_garbage(client)
            with contextlib.suppress(NotFound):
                client.delete(NODES, NODE_NAME)
            self.start()
        _log.info(f"node lost and replaced; {len(jobs)} jobs had pods on it")
        return jobs

    def _collect_garbage(self, client: KubeClient) -> set[str]:
        """As the pod garbage collector for pods bound to a node that no longer exists."""
        pods, _ = client.list(PODS, field_selector=f"spec.nodeName={NODE_NAME}")
        jobs: set[str] = set()
        for pod in pods:
            meta = pod["metadata"]
            if (pod.get("status") or {}).get("phase") in _TERMINAL:
                continue
            condition = {"type": "DisruptionTarget", "status": "True",
                         "reason": "DeletionByPodGC",
                         "message": "PodGC: node no longer exists",
                         "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                             time.gmtime())}
            try:
                client.patch(PODS, meta["name"], {"status": {
                    "phase": "Failed", "conditions": [condition]}},
                    namespace=meta["namespace"], patch_type="strategic",
                    subresource="status")
                client.delete(PODS, meta["name"], meta["namespace"], uid=meta["uid"],
                              grace_period_seconds=0)
            except NotFound:
                continue
            self.disrupted_pods += 1
            job_uid = (meta.get("labels") or {}).get("jobmachine.dev/job-uid")
            if job_uid:
                jobs.add(str(job_uid))
        return jobs


def chaos_fault_plan(seed: int, spare: str) -> FaultPlan:
    """The faults of a chaos phase: a few percent of requests answered 409, 429, 500 or
    503, delayed, or dropped (some after the write was made); watches cut now and then."""
    spared = (spare,)
    rules = (
        FaultRule("conflict", share=0.03, verbs=("update", "patch"), spare_users=spared),
        FaultRule("throttle", share=0.02, retry_after=1, spare_users=spared),
        FaultRule("error", share=0.015, spare_users=spared),
        FaultRule("unavailable", share=0.015, spare_users=spared),
        FaultRule("delay", share=0.03, seconds=0.3, spare_users=spared),
        FaultRule("drop", share=0.01, stage="after", verbs=("create", "patch", "update",
                                                           "delete"), spare_users=spared),
        FaultRule("drop", share=0.01, stage="mid-body", verbs=("get", "list"),
                  spare_users=spared),
        FaultRule("cut-watch", share=0.3, after_seconds=4.0, spare_users=spared),
    )
    return FaultPlan(rules, seed=seed)


@dataclass
class Every:
    """Calls `action` at random intervals (uniform in `between`) until stopped."""

    name: str
    between: tuple[float, float]
    action: Callable[[], None]
    rng: random.Random
    stopping: threading.Event = field(default_factory=threading.Event)
    errors: list[str] = field(default_factory=list)
    fired: threading.Event = field(default_factory=threading.Event)
    """Set once the action has run: a run must not end before each disruption happened."""

    def __post_init__(self) -> None:
        self._thread = threading.Thread(target=self._loop, name=f"chaos-{self.name}",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop, once the action has run at least once (a quick workload must not end the
        run before every disruption it asked for happened)."""
        self.fired.wait(self.between[1] + 60)
        self.stopping.set()
        self._thread.join(120)

    def _loop(self) -> None:
        while not self.stopping.wait(self.rng.uniform(*self.between)):
            try:
                self.action()
            except Exception as exc:  # a disruption that fails is reported, never fatal
                self.errors.append(f"{self.name}: {type(exc).__name__}: {exc}")
                _log.exception(f"chaos {self.name} failed")
            finally:
                self.fired.set()


@dataclass
class FaultPhases:
    """Faults on for a while, then off; the watch history compacted at random."""

    injector: FaultInjector
    rng: random.Random
    compactions: int = 0

    def toggle(self) -> None:
        self.injector.enabled = not self.injector.enabled
        if self.rng.random() < 0.5:
            self.injector.compact_watch_history()
            self.compactions += 1
