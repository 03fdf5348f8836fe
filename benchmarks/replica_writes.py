"""Benchmark: the API server's CPU per request of one PyTorchJob Worker's lifecycle (issue 33).

A Worker on `jobmachine up` costs the server about eleven requests: the engine creates its pod
and Service, the node's scheduler binds the pod, the node reads the ConfigMap its token
volume projects, writes the pod's status (Running, then Succeeded) and posts four events
(Scheduled, ImageIgnored, Created, Started), the engine releases the pod's tracking
finalizer and counts one of its own events again. Each kind is sent N times (8 threads of
the engine's own client, as the node sends them) to `jobmachine apiserver` in its own process
(HTTPS, persisted, as `up` runs it) with four watchers attached (three on pods, as the
engine, the node and the web view watch them, one on events), and the server process's CPU
over each phase is divided by its requests; the sending threads' CPU is the client's share,
which for the node's requests is spent in up's process too. The bodies are those the engine
and the node send (a pod as rendered by machines/kubeflow.yaml, without its owner so that no
garbage collector removes it).

`--store` drives the store in this process instead (no HTTP, no watchers, no journal): its CPU
per write, the minimum of `--rounds` rounds on a fresh store each.

Run: python benchmarks/replica_writes.py [-n 400] [--store] [--rounds 3]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "benchmarks"))  # its siblings (stopping.py), after the package

from stopping import stop_cleanly_on_signals  # noqa: E402

from engine.kube.client import KubeClient  # noqa: E402
from engine.kube.resources import CONFIGMAPS, EVENTS, PODS, Resource  # noqa: E402

SERVICES = Resource("", "v1", "services", "Service")
NODES = Resource("", "v1", "nodes", "Node")
NODE = "jobmachine-local"
THREADS = 8
MERGE = "application/merge-patch+json"
STAMP = "2026-11-30T10:55:13Z"

_LABELS = {
    "training.kubeflow.org/job-name": "bench", "training.kubeflow.org/operator-name":
    "pytorchjob-controller", "training.kubeflow.org/replica-type": "worker",
    "jobmachine.dev/job-name": "bench", "jobmachine.dev/replica-type": "Worker",
    "jobmachine.dev/job-uid": "19ed04a1-e596-497e-8680-56484097bda4",
    "jobmachine.dev/restart-attempt": "0",
}
_ENV = [("MASTER_ADDR", "bench-worker-0"), ("MASTER_PORT", "23456"), ("WORLD_SIZE", "1000"),
        ("PET_NNODES", "1000"), ("PET_NPROC_PER_NODE", "auto"), ("PYTHONUNBUFFERED", "1")]


def pod(i: int) -> dict[str, Any]:
    """Worker i's pod as the engine creates it."""
    labels = {**_LABELS, "training.kubeflow.org/replica-index": str(i),
              "jobmachine.dev/replica-index": str(i)}
    env = [{"name": name, "value": value} for name, value in _ENV]
    env += [{"name": "RANK", "value": str(i)}, {"name": "PET_NODE_RANK", "value": str(i)}]
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"bench-worker-{i}", "namespace": "default", "labels": labels,
                     "annotations": {"sim.jobmachine.dev/run-seconds": "0.1"},
                     "finalizers": ["jobmachine.dev/tracking"]},
        "spec": {"containers": [{"name": "pytorch", "image": "example/train:1", "env": env}],
                 "restartPolicy": "Never"},
    }


def service(i: int) -> dict[str, Any]:
    selector = {"jobmachine.dev/job-name": "bench", "jobmachine.dev/replica-type": "Worker",
                "jobmachine.dev/replica-index": str(i)}
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": f"bench-worker-{i}", "namespace": "default",
                         "labels": dict(_LABELS)},
            "spec": {"clusterIP": "None", "selector": selector,
                     "ports": [{"name": "pytorchjob-port", "port": 23456,
                                "targetPort": 23456}]}}


def binding(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": f"bench-worker-{i}"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": NODE}}


def status(phase: str) -> dict[str, Any]:
    """The pod status the node writes, whole, as it writes it."""
    ended = phase == "Succeeded"
    state = ({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": STAMP,
                             "finishedAt": STAMP}} if ended else {"running": {"startedAt": STAMP}})
    ready = "False" if ended else "True"
    conditions = [{"type": kind, "status": "True" if kind in ("PodScheduled", "Initialized")
                   else ready, "lastProbeTime": None, "lastTransitionTime": STAMP}
                  for kind in ("PodScheduled", "Initialized", "ContainersReady", "Ready")]
    return {"phase": phase, "conditions": conditions, "hostIP": "127.0.0.1",
            "hostIPs": [{"ip": "127.0.0.1"}], "podIP": "127.0.0.1",
            "podIPs": [{"ip": "127.0.0.1"}], "startTime": STAMP,
            "containerStatuses": [{"name": "pytorch", "state": state, "lastState": {},
                                   "ready": not ended, "started": not ended, "restartCount": 0,
                                   "image": "example/train:1", "imageID": "",
                                   "containerID": "jobmachine-simulated://0123456789abcdef"}]}


EVENT_REASONS = (
    ("Scheduled", "default-scheduler", "Successfully assigned default/{pod} to " + NODE, ""),
    ("ImageIgnored", "jobmachine-node", "simulate mode: image example/train:1 not pulled", ""),
    ("Created", "jobmachine-node", "Created container pytorch", "spec.containers{pytorch}"),
    ("Started", "jobmachine-node", "Started container pytorch", "spec.containers{pytorch}"),
)


def event(i: int, uid: str, reason: tuple[str, str, str, str]) -> dict[str, Any]:
    """An event the node posts about Worker i's pod."""
    name, component, message, path = reason
    involved = {"apiVersion": "v1", "kind": "Pod", "name": f"bench-worker-{i}",
                "namespace": "default", "uid": uid, **({"fieldPath": path} if path else {})}
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"bench-worker-{i}.{uuid.uuid4().hex[:16]}",
                         "namespace": "default"},
            "involvedObject": involved, "reason": name,
            "message": message.format(pod=f"bench-worker-{i}"), "type": "Normal",
            "source": {"component": component}, "reportingComponent": component,
            "reportingInstance": NODE, "firstTimestamp": STAMP, "lastTimestamp": STAMP,
            "count": 1}


Step = Callable[[int], None]


class Lifecycle:
    """The requests of one Worker, by kind, over some API: `create`, `bind`, `get` and
    `patch` as functions of (resource, ...)."""

    def __init__(self, create: Callable[[Resource, dict[str, Any]], dict[str, Any]],
                 bind: Callable[[int], None], get: Callable[[Resource, str], None],
                 patch: Callable[[Resource, str, dict[str, Any], str | None], None]) -> None:
        self._create, self._bind, self._get, self._patch = create, bind, get, patch
        self.uids: dict[int, str] = {}
        self.events: dict[int, str] = {}

    def steps(self) -> list[tuple[str, Step, int]]:
        """(kind, step for Worker i, requests per step), in the lifecycle's order."""
        return [
            ("engine: create pod", self._create_pod, 1),
            ("engine: create service", lambda i: self._drop(self._create(SERVICES, service(i))), 1),
            ("node: pods/binding", self._bind, 1),
            ("node: get configmap", lambda i: self._get(CONFIGMAPS, "kube-root-ca.crt"), 1),
            ("node: status patch Running", lambda i: self._status(i, "Running"), 1),
            ("node: create event", self._post_events, len(EVENT_REASONS)),
            ("node: status patch Succeeded", lambda i: self._status(i, "Succeeded"), 1),
            ("engine: patch pod (finalizer)", lambda i: self._patch(
                PODS, f"bench-worker-{i}", {"metadata": {"finalizers": None}}, None), 1),
            ("engine: patch event (count)", lambda i: self._patch(
                EVENTS, self.events[i], {"count": 2, "lastTimestamp": STAMP}, None), 1),
        ]

    @staticmethod
    def _drop(_answer: object) -> None:
        return None

    def _create_pod(self, i: int) -> None:
        self.uids[i] = self._create(PODS, pod(i))["metadata"]["uid"]

    def _status(self, i: int, phase: str) -> None:
        self._patch(PODS, f"bench-worker-{i}",
                    {"metadata": {"uid": self.uids[i]}, "status": status(phase)}, "status")

    def _post_events(self, i: int) -> None:
        for reason in EVENT_REASONS:
            body = event(i, self.uids[i], reason)
            self._create(EVENTS, body)
            self.events[i] = body["metadata"]["name"]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def over_http(count: int) -> None:
    from apiserver import started_server

    with started_server(persist=True, tls=True) as server:
        def client() -> KubeClient:
            return KubeClient.for_server(server.url, token=server.token,
                                         ca_file=server.ca_file, qps=1e9, burst=10**6)

        api = client()
        api.create(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}})
        stop = threading.Event()

        def drain(resource: Resource) -> None:
            own = client()
            while not stop.is_set():
                for _ in own.watch(resource, "default", resource_version="0", timeout_seconds=5):
                    if stop.is_set():
                        break

        for resource in (PODS, PODS, PODS, EVENTS):
            threading.Thread(target=drain, args=(resource,), daemon=True).start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the root CA's ConfigMap is published at start
            try:
                api.get(CONFIGMAPS, "kube-root-ca.crt", "default")
                break
            except Exception:
                time.sleep(0.2)
        lifecycle = Lifecycle(
            create=lambda res, body: api.create(res, body, "default"),
            bind=lambda i: lifecycle_bind(api, i),
            get=lambda res, name: lifecycle_drop(api.get(res, name, "default")),
            patch=lambda res, name, body, sub: lifecycle_drop(
                api.patch(res, name, body, namespace="default", subresource=sub)))
        print(f"| request | server CPU µs | client CPU µs |  (N={count}, load "
              f"{os.getloadavg()[0]:.1f})\n| --- | ---: | ---: |")
        total = [0.0, 0.0]
        for kind, step, per in lifecycle.steps():
            spent: list[float] = []

            def work(indices: range, step: Step = step, spent: list[float] = spent) -> None:
                started = time.thread_time()
                for i in indices:
                    step(i)
                spent.append(time.thread_time() - started)

            before = cpu_seconds(server.pid)
            with ThreadPoolExecutor(THREADS) as pool:
                list(pool.map(work, [range(k, count, THREADS) for k in range(THREADS)]))
            time.sleep(0.3)  # the last watch events out
            server_us = 1e6 * (cpu_seconds(server.pid) - before) / (count * per)
            client_us = 1e6 * sum(spent) / (count * per)
            total[0] += server_us * per
            total[1] += client_us * per
            print(f"| {kind} | {server_us:.0f} | {client_us:.0f} |", flush=True)
        print(f"| one Worker, all of the above | {total[0]:.0f} | {total[1]:.0f} |")
        stop.set()


def lifecycle_bind(api: KubeClient, i: int) -> None:
    api.create_subresource(PODS, f"bench-worker-{i}", "binding", binding(i), "default")


def lifecycle_drop(_answer: object) -> None:
    return None


def _store_lifecycle(store: Any) -> Lifecycle:
    """The lifecycle's writes straight to a store (as `ResourceHandlers` calls it)."""
    from engine.cluster.apiserver.registry import builtins

    types = {PODS: builtins.PODS, SERVICES: builtins.SERVICES, EVENTS: builtins.EVENTS}
    return Lifecycle(
        create=lambda res, body: store.create(types[res], "default", body,
                                              field_manager="bench").entry.obj,
        bind=lambda i: lifecycle_drop(store.bind(builtins.PODS, "default", f"bench-worker-{i}",
                                                 binding(i), dry_run=False)),
        get=lambda res, name: None,
        patch=lambda res, name, body, sub: lifecycle_drop(store.patch(
            types[res], "default", name, MERGE, orjson.dumps(body), subresource=sub,
            field_manager="bench")))


def in_store(count: int, rounds: int) -> None:
    from engine.cluster.apiserver.core import open_core
    from engine.cluster.apiserver.registry.builtins import NODES as NODE_TYPE
    from tests.unit.cluster.store_support import ManualReactor

    best: dict[str, float] = {}
    steps: list[tuple[str, Step, int]] = []
    for _ in range(rounds):
        reactor = ManualReactor()
        store = open_core(reactor, clock=reactor.clock).store
        reactor.run()
        store.create(NODE_TYPE, "", {"metadata": {"name": NODE}})
        steps = [s for s in _store_lifecycle(store).steps() if "configmap" not in s[0]]
        for kind, step, per in steps:
            gc.collect()
            started = time.process_time()
            for i in range(count):
                step(i)
            spent = (time.process_time() - started) / (count * per)
            best[kind] = min(best.get(kind, spent), spent)
    print(f"| write (store only) | CPU µs, min of {rounds} |  (N={count}, load "
          f"{os.getloadavg()[0]:.1f})\n| --- | ---: |")
    for kind, _step, _per in steps:
        print(f"| {kind} | {1e6 * best[kind]:.0f} |")
    print(f"| one Worker, all of the above | "
          f"{sum(1e6 * best[kind] * per for kind, _s, per in steps):.0f} |")


def main() -> None:
    stop_cleanly_on_signals()
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("-n", type=int, default=400, help="Workers")
    parser.add_argument("--store", action="store_true", help="the store in-process instead")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.store:
        in_store(args.n, args.rounds)
    else:
        over_http(args.n)


if __name__ == "__main__":
    main()
