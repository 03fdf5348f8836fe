"""Benchmark: the engine end to end on the embedded cluster, with the node in simulate mode.

Measures (medians of --rounds runs):
  1. lifecycles per second for N single-replica PyTorchJobs submitted at once
     (submission to the last Succeeded);
  2. one PyTorchJob with M Workers (it succeeds when all have), submission to Succeeded;
  3. API requests the engine makes per job lifecycle, counted at the server's
     /metrics (client "jobmachine"; the node and this script are counted apart);
  4. memory the engine's pod cache holds per 1,000 pods (tracemalloc);
  5. fairness under the burst: per job, the time from its pod's end (the container's
     finishedAt) to its Succeeded condition, as median and p99 (timestamps are whole
     seconds, so each figure is +-1 s).
Each pod "runs" for --run-seconds. The engine's client is rate limited like
client-go (EngineSettings.client_qps, default 50); `--qps` changes it.

Run: python benchmarks/engine.py [--jobs 1000] [--replicas 500] [--rounds 3] [--qps 50]
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import threading
import time
import tracemalloc
import urllib.request
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "benchmarks"))  # its siblings (stopping.py), after the package

from loguru import logger  # noqa: E402
from stopping import stop_cleanly_on_signals  # noqa: E402

from engine.cluster import running_apiserver  # noqa: E402
from engine.cluster.apiserver.endpoints.serve import RunningApiServer  # noqa: E402
from engine.cluster.node import running_node  # noqa: E402
from engine.controller.machines.install import crd_resources, prepare_cluster  # noqa: E402
from engine.controller.runtime.manager import Engine  # noqa: E402
from engine.controller.runtime.projections import project_pod  # noqa: E402
from engine.kube.cache import Cache  # noqa: E402
from engine.kube.client import KubeClient  # noqa: E402
from engine.kube.resources import PODS  # noqa: E402
from engine.settings import EngineSettings  # noqa: E402

CRDS, MACHINES = ROOT / "crds", ROOT / "machines"
PYTORCHJOBS = next(r for r in crd_resources(CRDS) if r.kind == "PyTorchJob")


def pytorchjob(name: str, replicas: int, run_seconds: float) -> dict[str, Any]:
    """One Master when `replicas` is 1; else `replicas` Workers (the job succeeds when all do)."""
    template = {
        "metadata": {"annotations": {"sim.jobmachine.dev/run-seconds": str(run_seconds)}},
        "spec": {"containers": [{"name": "pytorch", "image": "example/train:1"}]},
    }
    replica_type = "Master" if replicas == 1 else "Worker"
    specs = {replica_type: {"replicas": replicas, "template": template}}
    return {
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"pytorchReplicaSpecs": specs},
    }


def engine_requests(server: RunningApiServer) -> int:
    request = urllib.request.Request(
        server.url + "/metrics", headers={"Authorization": f"Bearer {server.token}"}
    )
    context = None
    if server.ca_file is not None:
        import ssl

        context = ssl.create_default_context(cafile=str(server.ca_file))
    with urllib.request.urlopen(request, context=context) as response:
        text = response.read().decode()
    pattern = r'apiserver_request_total\{client="jobmachine",[^}]*\} (\d+)'
    return sum(int(n) for n in re.findall(pattern, text))


def wait_all_finished(client: KubeClient, names: set[str], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        jobs, _ = client.list(PYTORCHJOBS, "default")
        finished = {
            j["metadata"]["name"] for j in jobs
            if (j.get("status") or {}).get("phase") in ("Succeeded", "Failed")
        }
        if names <= finished:
            failed = [j["metadata"]["name"] for j in jobs
                      if (j.get("status") or {}).get("phase") == "Failed"]
            if failed:
                raise RuntimeError(f"jobs failed: {failed[:5]}")
            return
        time.sleep(0.2)
    raise TimeoutError(f"jobs did not finish within {timeout_s}s")


def end_to_terminal_lags(client: KubeClient) -> list[float]:
    """Per finished job: seconds from its last pod's end to its Succeeded condition."""
    ended: dict[str, datetime] = {}
    pods, _ = client.list(PODS, "default")
    for pod in pods:
        job = (pod["metadata"].get("labels") or {}).get("training.kubeflow.org/job-name")
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            finished = (status.get("state") or {}).get("terminated", {}).get("finishedAt")
            if job and finished:
                at = datetime.fromisoformat(finished)
                ended[job] = max(ended.get(job, at), at)
    lags = []
    jobs, _ = client.list(PYTORCHJOBS, "default")
    for job in jobs:
        for condition in (job.get("status") or {}).get("conditions") or []:
            name = job["metadata"]["name"]
            if condition["type"] == "Succeeded" and name in ended:
                done = datetime.fromisoformat(condition["lastTransitionTime"])
                lags.append((done - ended[name]).total_seconds())
    return lags


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def run_round(args: argparse.Namespace, jobs: int, replicas: int) -> tuple[float, float]:
    """Seconds from submission to the last success, and engine requests per job; the lags
    from pod end to job end are printed."""
    settings = EngineSettings(workers=args.workers, client_qps=args.qps,
                              client_burst=max(int(args.qps * 2), 1))
    with running_apiserver(tls=True) as server:
        submitter = KubeClient.from_kubeconfig(server.kubeconfig, qps=10_000, burst=10_000,
                                               user_agent="benchmark")
        prepare_cluster(submitter, crds=[CRDS], machines=MACHINES)
        with running_node(server, mode="simulate"):
            engine_client = KubeClient.from_kubeconfig(
                server.kubeconfig, qps=settings.client_qps, burst=settings.client_burst
            )
            engine = Engine(engine_client, settings)
            stop = threading.Event()
            runner = threading.Thread(target=engine.run, args=(stop,), daemon=True)
            runner.start()
            engine.wait_until_governed("PyTorchJob", timeout_s=60)
            before = engine_requests(server)
            started = time.perf_counter()
            names = {f"bench-{i}" for i in range(jobs)}
            for name in sorted(names):
                submitter.create(PYTORCHJOBS, pytorchjob(name, replicas, args.run_seconds),
                                 "default")
            wait_all_finished(submitter, names, args.timeout)
            elapsed = time.perf_counter() - started
            requests = engine_requests(server) - before
            lags = end_to_terminal_lags(submitter)
            print(f"  {jobs} job(s) x {replicas}: pod end to job Succeeded: median "
                  f"{percentile(lags, 0.5):.0f} s, p99 {percentile(lags, 0.99):.0f} s, "
                  f"max {max(lags, default=float('nan')):.0f} s", flush=True)
            stop.set()
            runner.join(60)
            engine_client.close()
        submitter.close()
    return elapsed, requests / jobs


def cache_bytes_per_1000_pods(server_pod: dict[str, Any]) -> float:
    """Bytes the projected pod cache holds for 1,000 realistic pods, each of its own job
    (the worst case for what pods share: every owner and job label differs)."""
    import orjson

    raw = orjson.dumps(server_pod)
    tracemalloc.start()
    cache = Cache(project_pod)
    baseline = tracemalloc.take_snapshot()
    for i in range(1000):
        pod = orjson.loads(raw)
        pod["metadata"]["name"] = f"job-{i:04}-master-0"
        pod["metadata"]["uid"] = f"{i:08}-2592-4228-aa84-9b75cd52dc2f"
        job_uid = f"{i:08}-1111-4228-aa84-9b75cd52dc2f"
        for key, value in list(pod["metadata"].get("labels", {}).items()):
            if value == "sample":
                pod["metadata"]["labels"][key] = f"job-{i:04}"
            elif key.endswith("job-uid"):
                pod["metadata"]["labels"][key] = job_uid
        for reference in pod["metadata"].get("ownerReferences", []):
            reference.update(name=f"job-{i:04}", uid=job_uid)
        cache.apply("ADDED", pod)
        del pod
    grown = tracemalloc.take_snapshot().compare_to(baseline, "filename")
    tracemalloc.stop()
    return float(sum(stat.size_diff for stat in grown))


def sample_pod() -> dict[str, Any]:
    """A pod as the server returns it once it has run (what the cache is fed)."""
    with running_apiserver() as server:
        client = KubeClient.from_kubeconfig(server.kubeconfig)
        prepare_cluster(client, crds=[CRDS], machines=MACHINES)
        with running_node(server, mode="simulate"):
            engine = Engine(client, EngineSettings())
            stop = threading.Event()
            runner = threading.Thread(target=engine.run, args=(stop,), daemon=True)
            runner.start()
            client.create(PYTORCHJOBS, pytorchjob("sample", 1, 0.05), "default")
            wait_all_finished(client, {"sample"}, 30)
            pod = client.get(PODS, "sample-master-0", "default")
            stop.set()
            runner.join(60)
        client.close()
    return pod


def main() -> None:
    stop_cleanly_on_signals()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--replicas", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--qps", type=float, default=EngineSettings().client_qps)
    parser.add_argument("--workers", type=int, default=EngineSettings().workers)
    parser.add_argument("--run-seconds", type=float, default=0.05)
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args()
    logger.remove()
    logger.add(sys.stderr, level="ERROR")

    print(f"engine benchmark: {args.rounds} rounds, client qps {args.qps}, "
          f"{args.workers} workers, pods run {args.run_seconds}s (simulate mode)")
    many = [run_round(args, args.jobs, 1) for _ in range(args.rounds)]
    seconds = statistics.median(m[0] for m in many)
    print(f"{args.jobs} single-replica jobs: median {seconds:.1f} s, "
          f"{args.jobs / seconds:.1f} lifecycles/s; "
          f"engine requests per lifecycle: median {statistics.median(m[1] for m in many):.1f}")
    wide = [run_round(args, 1, args.replicas) for _ in range(args.rounds)]
    seconds = statistics.median(w[0] for w in wide)
    print(f"1 job with {args.replicas} replicas: median {seconds:.1f} s "
          f"({args.replicas / seconds:.0f} replicas/s); engine requests: "
          f"median {statistics.median(w[1] for w in wide):.0f} "
          f"({statistics.median(w[1] for w in wide) / args.replicas:.1f} per replica)")
    per_thousand = cache_bytes_per_1000_pods(sample_pod())
    print(f"pod cache: {per_thousand / 1024:.0f} KiB per 1,000 pods "
          f"({per_thousand / 1000:.0f} bytes per pod)")


if __name__ == "__main__":
    main()
