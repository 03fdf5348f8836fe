"""Benchmark: memory under load, per 1,000 finished jobs, and what the watch history costs.

Part 1, `jobmachine up`: starts `jobmachine up --node-mode simulate --quiet` as a user would
(its API server and node in one process, the engine in a child process), then submits
PyTorchJobs of 1 Master + 1 Worker whose pods "run" `--run-seconds` (default 0) in
`--batches` batches of `--jobs-per-batch`, waiting for every job of a batch to succeed
(`--event-ttl`, when given, is passed to `up`: with one shorter than `--settle` the
events of a batch have expired when it is measured). After each batch it reads the RSS
(`/proc/PID/status` VmRSS) of the server + node process and of the engine, and lists every
resource type the server offers (found by discovery) to count the stored objects and their
mean JSON size. It prints, per batch and per 1,000 finished jobs, the growth of each process
and the bytes of RSS per stored object added.

With `--running`, the jobs' pods run until the end instead (the warm-up job still finishes):
a batch is measured once every job of it has each replica's pod Running, so the engine's
caches hold every pod (issue 33: the engine's RSS at 10,000 jobs / 100,000 pods cached,
`--jobs-per-batch 10000 --workers 9 --running`). `--workers` sets the Workers per job (one
Master besides); `--engine-qps` raises the engine's client rate limit
(`JOBMACHINE_CLIENT_QPS`, default 50/s) so a batch of 100,000 pods is made in minutes; the
local node is given room for every pod (`--node-capacity pods=...`; a kubelet's 110 by
default).

With `--delete-after-batch`, each batch is then deleted (its jobs, their pods and
services, and the events: `deletecollection`, as `kubectl delete --all` would) and
measured again once the data dir's journal has been compacted (`--compaction-interval`,
passed to `up`): two batches show whether a second cycle of the same work grows the
processes or the data dir beyond the first (a leak) or not (a high-water mark), and how the
data dir follows the live objects.

Part 2, the watch history (`--history-probe`, on by default): the server keeps the last
`DEFAULT_HISTORY` changes per resource type; a change that is not an object's current
version keeps that old version alive. `up` has no option for the history, so this part
starts the embedded server in a fresh child process twice, with `ServerOptions(history=1)`
and with the default, writes the same pods (create, then `--probe-updates` status
patches each, as the node does) and reports the RSS difference per kept change.

Run: python benchmarks/memory.py [--batches 3] [--jobs-per-batch 1000] [--json memory.json]
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # before benchmarks/, whose engine.py would shadow the package
sys.path.insert(1, str(ROOT / "benchmarks"))  # its siblings (stopping.py), after the package

from stopping import stop_cleanly_on_signals  # noqa: E402

from engine.kube.client import KubeClient  # noqa: E402
from engine.kube.resources import Resource  # noqa: E402

NAMESPACE = "default"
AGENT = "memory-bench"
MIB = 1024 * 1024


# --- helpers (pure; tests/unit/test_memory_benchmark.py) ---------------------------------


def rss_bytes(status_text: str) -> int:
    """VmRSS of a `/proc/PID/status` text, in bytes."""
    for line in status_text.splitlines():
        if line.startswith("VmRSS:"):
            value, unit = line.split()[1:3]
            assert unit == "kB", unit
            return int(value) * 1024
    raise ValueError("no VmRSS line")


def per_thousand(delta: float, jobs: int) -> float:
    """A growth over `jobs` finished jobs, scaled to 1,000 jobs."""
    return delta * 1000 / jobs if jobs else float("nan")


def listable_resources(groups: list[tuple[str, str, list[dict[str, Any]]]]) -> list[Resource]:
    """The top-level resources of discovery documents ((group, version, resources) each)
    that can be listed: no subresources (`pods/status`), `list` among the verbs."""
    found: list[Resource] = []
    for group, version, resources in groups:
        for item in resources:
            if "/" in item["name"] or "list" not in item.get("verbs", []):
                continue
            found.append(Resource(group, version, item["name"], item["kind"],
                                  item.get("namespaced", True)))
    return found


@dataclass(frozen=True)
class TypeSize:
    """The stored objects of one type at one moment."""

    count: int
    json_bytes: int  # the sum of their compact JSON sizes

    @property
    def mean(self) -> float:
        return self.json_bytes / self.count if self.count else 0.0


def type_size(objects: list[dict[str, Any]]) -> TypeSize:
    """Count and compact-JSON size of listed objects (as the server stores them: without
    the `apiVersion`/`kind` the client adds to list items, which is a few dozen bytes)."""
    total = sum(len(json.dumps(obj, separators=(",", ":"))) for obj in objects)
    return TypeSize(len(objects), total)


def table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


# --- processes -----------------------------------------------------------------------------


def rss_of(pid: int) -> int:
    return rss_bytes(Path(f"/proc/{pid}/status").read_text())


def children_of(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found += [int(child) for child in text]
    return found


def engine_pid(up_pid: int, timeout_s: float = 60.0) -> int:
    """The engine `up` started as its child (`python -m engine.cli run`)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for child in children_of(up_pid):
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            if b"engine.cli" in cmdline and b"run" in cmdline:
                return child
        time.sleep(0.2)
    raise RuntimeError("`jobmachine up` started no engine")


# --- part 1: `jobmachine up` ---------------------------------------------------------------


def pytorchjob(name: str, run_seconds: float, workers: int = 1) -> dict[str, Any]:
    template = {
        "metadata": {"annotations": {"sim.jobmachine.dev/run-seconds": str(run_seconds)}},
        "spec": {"containers": [{"name": "pytorch", "image": "example/train:1"}]},
    }
    specs = {kind: {"replicas": replicas, "restartPolicy": "ExitCode", "template": template}
             for kind, replicas in (("Master", 1), ("Worker", workers))}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"pytorchReplicaSpecs": specs}}


PYTORCHJOBS = Resource("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob")
RUN_UNTIL_THE_END = 10**7  # seconds a `--running` job's pods "run" in simulate mode


def discover(client: KubeClient) -> list[Resource]:
    groups: list[tuple[str, str, list[dict[str, Any]]]] = []
    core = client._json("GET", "/api/v1")  # raw discovery
    groups.append(("", "v1", core.get("resources") or []))
    for group in client._json("GET", "/apis").get("groups") or []:
        preferred = group["preferredVersion"]["version"]
        doc = client._json("GET", f"/apis/{group['name']}/{preferred}")
        groups.append((group["name"], preferred, doc.get("resources") or []))
    return listable_resources(groups)


def stored(client: KubeClient, resources: list[Resource]) -> dict[str, TypeSize]:
    sizes: dict[str, TypeSize] = {}
    for res in resources:
        try:
            objects, _ = client.list(res)
        except Exception:  # a type that cannot be listed is left out
            continue
        if objects:
            name = f"{res.plural}.{res.group}" if res.group else res.plural
            sizes[name] = type_size(objects)
    return sizes


def wait_succeeded(client: KubeClient, names: set[str], timeout_s: float,
                   process: subprocess.Popen[bytes]) -> None:
    """Poll the jobs until every one of `names` succeeded (a list per second is cheap next
    to a batch, and keeps no watch of this script's open between measurements)."""
    deadline = time.monotonic() + timeout_s
    while True:
        objects, _ = client.list(PYTORCHJOBS, NAMESPACE)
        phases = {obj["metadata"]["name"]: (obj.get("status") or {}).get("phase")
                  for obj in objects}
        failed = [n for n in names if phases.get(n) == "Failed"]
        if failed:
            raise RuntimeError(f"{len(failed)} jobs failed, e.g. {failed[0]}")
        if all(phases.get(n) == "Succeeded" for n in names):
            return
        if process.poll() is not None:
            raise RuntimeError(f"`jobmachine up` exited with {process.returncode}")
        if time.monotonic() > deadline:
            left = sum(phases.get(n) != "Succeeded" for n in names)
            raise TimeoutError(f"{left} jobs not finished after {timeout_s:.0f} s")
        time.sleep(1.0)


def all_running(job: dict[str, Any], workers: int) -> bool:
    """Whether every replica of a job made by `pytorchjob` has its pod Running (its
    replica statuses count them active)."""
    statuses = (job.get("status") or {}).get("replicaStatuses") or {}
    return ((statuses.get("Master") or {}).get("active") == 1
            and (statuses.get("Worker") or {}).get("active") == workers)


def wait_running(client: KubeClient, names: set[str], workers: int, timeout_s: float,
                 process: subprocess.Popen[bytes]) -> None:
    """Poll the jobs until every one of `names` has all its pods Running (every 5 s: the
    list of 10,000 jobs is not free, and its cost lands on the measured server)."""
    deadline = time.monotonic() + timeout_s
    while True:
        objects, _ = client.list(PYTORCHJOBS, NAMESPACE)
        running = sum(1 for obj in objects
                      if obj["metadata"]["name"] in names and all_running(obj, workers))
        if running == len(names):
            return
        if process.poll() is not None:
            raise RuntimeError(f"`jobmachine up` exited with {process.returncode}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(names) - running} jobs not running after "
                               f"{timeout_s:.0f} s")
        time.sleep(5.0)


def data_dir_bytes(directory: Path) -> int:
    """The bytes of the API server's stored objects: snapshot and journal."""
    return sum(path.stat().st_size for path in (directory / "snapshot.jsonl",
                                                 directory / "journal.jsonl") if path.exists())


EVENTS = Resource("", "v1", "events", "Event")
PODS = Resource("", "v1", "pods", "Pod")


def delete_all(client: KubeClient, process: subprocess.Popen[bytes], timeout_s: float) -> float:
    """Delete every job and event of the namespace and wait until the jobs and their pods
    are gone; the seconds it took."""
    started = time.monotonic()
    for res in (PYTORCHJOBS, EVENTS):
        client._json("DELETE", res.path(NAMESPACE), body={"kind": "DeleteOptions",
                                                          "apiVersion": "v1"})
    deadline = started + timeout_s
    while client.list(PYTORCHJOBS, NAMESPACE)[0] or client.list(PODS, NAMESPACE)[0]:
        if process.poll() is not None:
            raise RuntimeError(f"`jobmachine up` exited with {process.returncode}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"jobs or pods left after {timeout_s:.0f} s")
        time.sleep(1.0)
    return time.monotonic() - started


def settle(seconds: float) -> None:
    """Let the engine finish the batch's last events and the node its last writes."""
    time.sleep(seconds)


def start_up(args: argparse.Namespace, scratch: Path) -> subprocess.Popen[bytes]:
    """`jobmachine up` as a user starts it (no JOBMACHINE_* variable but the rate limit
    asked for), its stderr in scratch/up.log."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBMACHINE_")}
    if args.engine_qps is not None:
        env["JOBMACHINE_CLIENT_QPS"] = str(args.engine_qps)
    ttl = ["--event-ttl", args.event_ttl] if args.event_ttl is not None else []
    ttl += ["--compaction-interval", args.compaction_interval]
    if args.running:
        # The local node takes 110 pods by default, as a kubelet does; every pod must run.
        pods = (args.batches * args.jobs_per_batch + 1) * (1 + args.workers) + 10
        ttl += ["--node-capacity", f"pods={pods}"]
    with (scratch / "up.log").open("wb") as err:
        return subprocess.Popen(
            [str(Path(sys.executable).parent / "jobmachine"), "up", "--port", "0",
             "--node-mode", "simulate", "--quiet", "--data-dir", str(scratch / "data"), *ttl],
            env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=err, start_new_session=True,
        )


def run_up(args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    process = start_up(args, scratch)
    samples: list[dict[str, Any]] = []
    try:
        assert process.stdout is not None
        kubeconfig = next(line.decode().strip().split("=", 1)[1] for line in process.stdout
                          if line.startswith(b"export KUBECONFIG="))
        engine = engine_pid(process.pid)
        client = KubeClient.from_kubeconfig(Path(kubeconfig), qps=100_000, burst=100_000,
                                            user_agent=AGENT)
        try:
            resources = discover(client)
            client.create(PYTORCHJOBS, pytorchjob("warmup", args.run_seconds), NAMESPACE)
            wait_succeeded(client, {"warmup"}, args.timeout, process)
            settle(args.settle)

            def sample(jobs: int, seconds: float, when: str) -> None:
                samples.append({"jobs": jobs, "seconds": seconds, "when": when,
                                "server_rss": rss_of(process.pid), "engine_rss": rss_of(engine),
                                "data_dir": data_dir_bytes(scratch / "data"),
                                "stored": {k: vars(v) for k, v in
                                           stored(client, resources).items()}})
                last = samples[-1]
                print(f"{when} {jobs} jobs ({seconds:.0f} s): server+node "
                      f"{last['server_rss'] / MIB:.1f} MiB, engine "
                      f"{last['engine_rss'] / MIB:.1f} MiB, data dir "
                      f"{last['data_dir'] / MIB:.1f} MiB", flush=True)

            sample(0, 0.0, "finished")
            when = "running" if args.running else "finished"
            run_seconds = RUN_UNTIL_THE_END if args.running else args.run_seconds
            done = 0
            for batch in range(args.batches):
                names = [f"mem-{batch}-{i}" for i in range(args.jobs_per_batch)]
                started = time.monotonic()
                with ThreadPoolExecutor(4) as pool:
                    list(pool.map(lambda n: client.create(
                        PYTORCHJOBS, pytorchjob(n, run_seconds, args.workers), NAMESPACE),
                        names))
                if args.running:
                    wait_running(client, set(names), args.workers, args.timeout, process)
                else:
                    wait_succeeded(client, set(names), args.timeout, process)
                seconds = time.monotonic() - started
                settle(args.settle)
                done += len(names)
                sample(done, seconds, when)
                if args.delete_after_batch:
                    seconds = delete_all(client, process, args.timeout)
                    settle(args.settle)
                    sample(done, seconds, "deleted")
        finally:
            client.close()
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return {"samples": samples}


def report_up(result: dict[str, Any]) -> str:
    samples = result["samples"]
    first, last = samples[0], samples[-1]
    rows = []
    for prev, cur in itertools.pairwise(samples):
        jobs = cur["jobs"] - prev["jobs"]
        growth = [
            f"{per_thousand(cur['server_rss'] - prev['server_rss'], jobs) / MIB:.1f}",
            f"{per_thousand(cur['engine_rss'] - prev['engine_rss'], jobs) / MIB:.1f}",
        ] if jobs else ["-", "-"]
        rows.append([
            cur.get("when", "finished"), f"{cur['jobs']:,}", f"{cur['seconds']:.0f}",
            f"{cur['server_rss'] / MIB:.1f}", f"{cur['engine_rss'] / MIB:.1f}",
            f"{cur.get('data_dir', 0) / MIB:.1f}", *growth,
        ])
    out = ["RSS after each batch (MiB; growth per 1,000 finished jobs over that batch)", "",
           f"before: server+node {first['server_rss'] / MIB:.1f} MiB, "
           f"engine {first['engine_rss'] / MIB:.1f} MiB (after the warm-up job)", "",
           table(["after", "jobs so far", "s", "server+node MiB", "engine MiB", "data dir MiB",
                  "server+node MiB / 1,000 jobs", "engine MiB / 1,000 jobs"], rows), ""]
    types = sorted(set(first["stored"]) | set(last["stored"]),
                   key=lambda t: -last["stored"].get(t, {"json_bytes": 0})["json_bytes"])
    type_rows = []
    total_added = total_json = 0
    jobs = last["jobs"] - first["jobs"]
    for name in types:
        before = first["stored"].get(name, {"count": 0, "json_bytes": 0})
        after = last["stored"].get(name, {"count": 0, "json_bytes": 0})
        added = after["count"] - before["count"]
        total_added += added
        total_json += after["json_bytes"] - before["json_bytes"]
        mean = after["json_bytes"] / after["count"] if after["count"] else 0
        type_rows.append([name, f"{before['count']:,}", f"{after['count']:,}",
                          f"{per_thousand(added, jobs):,.0f}", f"{mean:,.0f}"])
    out += ["Stored objects (from the API, every listable type)", "",
            table(["type", "before", f"after {last['jobs']:,} jobs", "added per 1,000 jobs",
                   "mean JSON bytes"], type_rows), ""]
    server_delta = last["server_rss"] - first["server_rss"]
    out += [f"objects added: {total_added:,} ({per_thousand(total_added, jobs):,.0f} per 1,000 "
            f"jobs), their JSON {total_json / MIB:.1f} MiB; server+node RSS grew "
            f"{server_delta / MIB:.1f} MiB: {server_delta / max(total_added, 1):,.0f} bytes of "
            f"RSS per stored object added ({server_delta / max(total_json, 1):.1f}x its JSON); "
            f"engine grew {(last['engine_rss'] - first['engine_rss']) / MIB:.1f} MiB"]
    if last.get("when") == "running":
        def added(name: str) -> int:
            return int(last["stored"].get(name, {"count": 0})["count"]
                       - first["stored"].get(name, {"count": 0})["count"])

        pods, services = added("pods"), added("services")
        cached = jobs + pods + services
        engine_delta = last["engine_rss"] - first["engine_rss"]
        out += [f"with {jobs:,} jobs, {pods:,} pods and {services:,} services running (all in "
                f"the engine's caches): engine {engine_delta / max(cached, 1):,.0f} bytes of RSS "
                f"per object cached ({engine_delta / max(pods, 1):,.0f} per pod, its job's and "
                f"service's share included); server+node "
                f"{server_delta / max(total_added, 1):,.0f} per stored object, "
                f"{server_delta / max(pods, 1):,.0f} per pod (its job's, service's and events' "
                f"share included)"]
    return "\n".join(out)


# --- part 2: the watch history -------------------------------------------------------------


def probe(history: int, pods: int, updates: int) -> dict[str, Any]:
    """In this (fresh) process: a server with `history`, `pods` pods each created and
    patched `updates` times; RSS after a full collection."""
    from engine.cluster import running_apiserver
    from engine.cluster.apiserver.endpoints.serve import ServerOptions

    pod_res = Resource("", "v1", "pods", "Pod")
    with running_apiserver(tls=False, port=0, options=ServerOptions(history=history)) as server:
        client = KubeClient.from_kubeconfig(server.kubeconfig, qps=100_000, burst=100_000,
                                            user_agent=AGENT)
        gc.collect()
        before = rss_of(os.getpid())

        def one(i: int) -> None:
            name = f"probe-{i}"
            client.create(pod_res, {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": NAMESPACE,
                             "labels": {"training.kubeflow.org/job-name": name,
                                        "training.kubeflow.org/replica-type": "master"},
                             "annotations": {"sim.jobmachine.dev/run-seconds": "0"}},
                "spec": {"containers": [{"name": "pytorch", "image": "example/train:1"}]},
            }, NAMESPACE)
            for step in range(updates):
                client.patch(pod_res, name, {"status": {
                    "phase": "Running", "podIP": f"10.0.{step}.{i % 250}",
                    "conditions": [{"type": "Ready", "status": "True",
                                    "lastTransitionTime": f"2026-11-26T00:00:{step:02d}Z"}],
                    "containerStatuses": [{"name": "pytorch", "ready": True,
                                           "restartCount": step, "image": "example/train:1",
                                           "imageID": "", "containerID": f"sim://{name}-{step}",
                                           "state": {"running": {
                                               "startedAt": "2026-11-26T00:00:00Z"}}}]}},
                    namespace=NAMESPACE, subresource="status")

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(one, range(pods)))
        client.close()
        gc.collect()
        after = rss_of(os.getpid())
        objects, _ = (KubeClient.from_kubeconfig(server.kubeconfig, user_agent=AGENT)
                      .list(pod_res, NAMESPACE))
    return {"history": history, "pods": pods, "updates": updates,
            "rss_delta": after - before, "pod_json": type_size(objects).mean}


def run_probe(history: int, args: argparse.Namespace) -> dict[str, Any]:
    output = subprocess.run(
        [sys.executable, __file__, "--probe-child", str(history), "--probe-pods",
         str(args.probe_pods), "--probe-updates", str(args.probe_updates)],
        cwd=ROOT, check=True, capture_output=True, text=True, timeout=args.timeout,
    ).stdout
    result: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
    return result


def report_probe(runs: list[dict[str, Any]], default_history: int) -> str:
    small = [r for r in runs if r["history"] == 1]
    full = [r for r in runs if r["history"] == default_history]
    pods, updates = full[0]["pods"], full[0]["updates"]
    changes = pods * (1 + updates)
    kept = min(changes, default_history)
    superseded = max(kept - pods, 0)  # the newest change of each pod is its current version
    small_rss = sorted(r["rss_delta"] for r in small)[len(small) // 2]
    full_rss = sorted(r["rss_delta"] for r in full)[len(full) // 2]
    per_change = (full_rss - small_rss) / superseded if superseded else float("nan")
    rows = [[str(r["history"]), f"{r['rss_delta'] / MIB:.1f}"] for r in runs]
    return "\n".join([
        f"Watch history: {pods:,} pods, each created and status-patched {updates} times "
        f"({changes:,} changes); pod JSON {full[0]['pod_json']:,.0f} bytes", "",
        table(["history (changes per type)", "server RSS growth MiB"], rows), "",
        f"the default history ({default_history:,}) kept {superseded:,} old versions more: "
        f"{per_change:,.0f} bytes of RSS per kept old version; a type whose history is full "
        f"costs {per_change * default_history / MIB:.0f} MiB "
        f"({default_history:,} x {per_change:,.0f} bytes)",
    ])


def main() -> None:
    stop_cleanly_on_signals()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--jobs-per-batch", type=int, default=1000)
    parser.add_argument("--run-seconds", type=float, default=0.0)
    parser.add_argument("--workers", type=int, default=1, help="Workers per job (1 Master besides)")
    parser.add_argument("--running", action="store_true",
                        help="the pods run to the end: measure with every pod Running (cached)")
    parser.add_argument("--engine-qps", type=float,
                        help="the engine's client rate limit (JOBMACHINE_CLIENT_QPS for `up`)")
    parser.add_argument("--settle", type=float, default=5.0,
                        help="seconds to wait after a batch before measuring")
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--event-ttl", help="passed to `jobmachine up` (default: its own, 1h)")
    parser.add_argument("--compaction-interval", default="5m",
                        help="passed to `jobmachine up` (settle longer to measure after one)")
    parser.add_argument("--delete-after-batch", action="store_true",
                        help="delete each batch and measure again (cycles of the same work)")
    parser.add_argument("--no-up", action="store_true", help="only the watch-history part")
    parser.add_argument("--no-history-probe", action="store_true")
    parser.add_argument("--probe-pods", type=int, default=1000)
    parser.add_argument("--probe-updates", type=int, default=5)
    parser.add_argument("--probe-child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.probe_child is not None:
        print(json.dumps(probe(args.probe_child, args.probe_pods, args.probe_updates)))
        return
    from engine.cluster.apiserver.storage.watch import DEFAULT_HISTORY

    results: dict[str, Any] = {}
    if not args.no_up:
        with tempfile.TemporaryDirectory() as scratch:
            results["up"] = run_up(args, Path(scratch))
    if not args.no_history_probe:
        runs = []
        for history in (1, DEFAULT_HISTORY, 1, DEFAULT_HISTORY):
            runs.append(run_probe(history, args))
            print(f"history {history}: server RSS grew {runs[-1]['rss_delta'] / MIB:.1f} MiB",
                  flush=True)
        results["history"] = runs
    print()
    if "up" in results:
        print(report_up(results["up"]))
        print()
    if "history" in results:
        print(report_probe(results["history"], DEFAULT_HISTORY))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
