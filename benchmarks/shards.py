"""Benchmark: sharded engines hand shards over (issue 12, goal 8).

Goal: "Killing one replica with -9 moves its shards to the others within the lease
duration." This runs `--replicas` engine processes (`jobmachine run --shards N`, the default
lease timings: 15 s lease, 10 s renew deadline, 2 s retry) against the embedded API server
and a simulated node in this process, with jobs running, and measures per trial:

- kill -9: seconds from the kill to every shard of the killed replica held by another
  replica, and from the killed replica's last renewal (its leases' renewTime) to then; the
  rules allow a take-over no earlier than one lease duration after the last renewal it was
  seen to make, and a survivor looks every retry period (plus up to 20% jitter);
- SIGTERM: seconds from the signal to every shard of the stopped replica held by another;
- that every job submitted during the trials succeeded.

A replacement replica is started after each trial and the shares are let settle first.

Run: python benchmarks/shards.py [--replicas 3] [--shards 6] [--trials 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from compare import stop_process  # noqa: E402
from stopping import stop_cleanly_on_signals  # noqa: E402

from engine.cluster import running_apiserver  # noqa: E402
from engine.cluster.apiserver.endpoints.serve import RunningApiServer  # noqa: E402
from engine.cluster.node import running_node  # noqa: E402
from engine.controller.coordination.shard_leases import ROLE_LABEL  # noqa: E402
from engine.controller.machines.install import crd_resources, prepare_cluster  # noqa: E402
from engine.kube.client import KubeClient  # noqa: E402
from engine.kube.resources import LEASES  # noqa: E402
from engine.kube.timestamps import parse_time  # noqa: E402

CRDS, MACHINES = ROOT / "crds", ROOT / "machines"
PYTORCHJOBS = next(r for r in crd_resources(CRDS) if r.kind == "PyTorchJob")
NAMESPACE = "default"


def seconds(stamp: str) -> float:
    """A metav1.Time or MicroTime as seconds since the epoch."""
    return parse_time(stamp).timestamp()


def pytorchjob(name: str) -> dict[str, Any]:
    """One Worker that runs 2 s in the simulated node."""
    return {
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"pytorchReplicaSpecs": {"Worker": {
            "replicas": 1, "restartPolicy": "OnFailure",
            "template": {"metadata": {"annotations": {"sim.jobmachine.dev/run-seconds": "2"}},
                         "spec": {"containers": [{"name": "pytorch", "image": "python:3"}]}},
        }}},
    }


class Replicas:
    """The engine processes, each known by the identity on its membership lease."""

    def __init__(self, server: RunningApiServer, client: KubeClient, shards: int,
                 logs: Path) -> None:
        self.server, self.client, self.shards, self.logs = server, client, shards, logs
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def start(self) -> str:
        before = set(self.members())
        with (self.logs / f"engine-{len(self.processes)}.log").open("wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "engine.cli", "run", "--kubeconfig",
                 str(self.server.kubeconfig), "--shards", str(self.shards)],
                stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
            )
        while not (new := set(self.members()) - before):
            time.sleep(0.05)
        identity = new.pop()
        self.processes[identity] = process
        return identity

    def members(self) -> list[str]:
        items, _ = self.client.list(LEASES, NAMESPACE, label_selector=f"{ROLE_LABEL}=member")
        return [item["spec"]["holderIdentity"] for item in items]

    def shard_leases(self) -> list[dict[str, Any]]:
        items, _ = self.client.list(LEASES, NAMESPACE, label_selector=f"{ROLE_LABEL}=shard")
        return items

    def holders(self) -> Counter[str]:
        return Counter(lease["spec"].get("holderIdentity") or ""
                       for lease in self.shard_leases())

    def wait_balanced(self) -> None:
        alive = [i for i, p in self.processes.items() if p.poll() is None]
        share = -(-self.shards // len(alive))
        while True:
            held = self.holders()
            if sum(held[i] for i in alive) == self.shards and all(
                    held[i] <= share for i in alive):
                return
            time.sleep(0.1)

    def wait_moved(self, gone: str) -> float:
        """The time at which no shard is held by `gone` and every shard has a holder."""
        alive = {i for i, p in self.processes.items() if p.poll() is None} - {gone}
        while True:
            held = self.holders()
            if sum(held[i] for i in alive) == self.shards:
                return time.time()
            time.sleep(0.02)

    def stop_all(self) -> None:
        for process in self.processes.values():
            stop_process(process, 60)


def submit(client: KubeClient, start: int, count: int) -> None:
    for i in range(start, start + count):
        client.create(PYTORCHJOBS, pytorchjob(f"job-{i}"), NAMESPACE)


def trial(replicas: Replicas, client: KubeClient, jobs: int, index: int) -> dict[str, float]:
    replicas.wait_balanced()
    victim = next(i for i, p in replicas.processes.items() if p.poll() is None)
    submit(client, 2 * index * jobs, jobs)
    time.sleep(1.0)
    last_renewal = max(seconds(lease["spec"]["renewTime"]) for lease in replicas.shard_leases()
                       if lease["spec"].get("holderIdentity") == victim)
    os.kill(replicas.processes[victim].pid, signal.SIGKILL)
    killed = time.time()
    replicas.processes[victim].wait()
    moved = replicas.wait_moved(victim)
    last_renewal = max([last_renewal] + [
        seconds(lease["spec"]["renewTime"]) for lease in replicas.shard_leases()
        if lease["spec"].get("holderIdentity") == victim])
    replicas.start()
    replicas.wait_balanced()
    stopping = next(i for i, p in replicas.processes.items() if p.poll() is None)
    submit(client, (2 * index + 1) * jobs, jobs)
    time.sleep(1.0)
    replicas.processes[stopping].send_signal(signal.SIGTERM)
    signalled = time.time()
    released = replicas.wait_moved(stopping)
    replicas.processes[stopping].wait(60)
    replicas.start()
    return {"kill_to_moved_s": moved - killed, "last_renewal_to_moved_s": moved - last_renewal,
            "sigterm_to_moved_s": released - signalled}


def main() -> None:
    stop_cleanly_on_signals()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--shards", type=int, default=6)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=30, help="jobs submitted per hand-over")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as logs, running_apiserver(tls=True) as server:
        client = KubeClient.from_kubeconfig(server.kubeconfig)
        prepare_cluster(client, crds=[CRDS], machines=MACHINES)
        replicas = Replicas(server, client, args.shards, Path(logs))
        with running_node(server, mode="simulate"):
            try:
                for _ in range(args.replicas):
                    replicas.start()
                results = [trial(replicas, client, args.jobs, i) for i in range(args.trials)]
                submitted = 2 * args.trials * args.jobs
                deadline = time.monotonic() + 300
                while True:
                    items, _ = client.list(PYTORCHJOBS, NAMESPACE)
                    phases = Counter((job.get("status") or {}).get("phase") for job in items)
                    if phases["Succeeded"] == submitted or time.monotonic() > deadline:
                        break
                    time.sleep(0.5)
            finally:
                replicas.stop_all()
        client.close()
    report = {
        "replicas": args.replicas, "shards": args.shards, "trials": results,
        "median": {key: statistics.median(r[key] for r in results) for key in results[0]},
        "jobs_submitted": submitted, "jobs_phases": dict(phases),
    }
    print(json.dumps(report, indent=2))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
