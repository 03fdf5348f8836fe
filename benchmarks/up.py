"""Benchmark: `jobmachine up` at its defaults against kopf, in lifecycles per second (goal 4).

Goal: "`jobmachine up` at its defaults ≥ 2x kopf's lifecycles/s on the same machine."
Per round and workload (N single-replica PyTorchJobs submitted at once, pods "run" 0.1 s):
  - kopf: as in compare.py, the operator as its own process against a fresh embedded API
    server and simulated node run by this script (two processes in all);
  - jobmachine: `jobmachine up --node-mode simulate --quiet` exactly as a user starts it,
    with no JOBMACHINE_* variable set (its server in one process, its node and its engine
    each in a child: three processes in all); this script only submits and watches.
Lifecycles/s is N divided by the time from the first submission to the last Succeeded, as
seen by this script's watch; a warm-up job runs first on each. CPU per lifecycle over the
same span: kopf's server and node (this script's process, its watches and submissions
included) and operator; up's own process (the API server), its node and its engine.

Run: python benchmarks/up.py [--jobs 300,1000] [--rounds 2] [--json up.json]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compare import (
    CONTROLLERS,
    HARNESS_AGENT,
    NAMESPACE,
    PYTORCHJOBS,
    Endings,
    Workload,
    alive_check,
    counts,
    cpu_seconds,
    measure,
    pytorchjob,
    start_up,
    stop_process,
    submit,
)
from stopping import stop_cleanly_on_signals
from wide import up_children

from engine.kube.client import KubeClient


def measure_up(workload: Workload, args: argparse.Namespace, data_dir: Path,
               log: Path) -> dict[str, float]:
    """`jobmachine up` as a user runs it; seconds from submission to the last Succeeded and
    the CPU seconds of up's process (the server), of its node and of its engine meanwhile."""
    process, kubeconfig = start_up(data_dir, log)
    try:
        client = KubeClient.from_kubeconfig(kubeconfig, qps=100_000, burst=100_000,
                                            user_agent=HARNESS_AGENT)
        check = alive_check(process, log)
        endings = Endings(client)
        try:
            client.create(PYTORCHJOBS, pytorchjob("warmup", 1, args.run_seconds), NAMESPACE)
            endings.wait({"warmup"}, args.startup_timeout, check)
            children = up_children(process.pid)
            pids = (process.pid, children["node"], children["engine"])
            cpu_before = [cpu_seconds(pid) for pid in pids]
            started = time.monotonic()
            names = submit(client, workload, args.run_seconds)
            elapsed = endings.wait(names, args.timeout, check) - started
            cpu_after = [cpu_seconds(pid) for pid in pids]
        finally:
            endings.close()
            client.close()
    finally:
        process.send_signal(signal.SIGINT)
        stop_process(process, args.stop_timeout)
    return {"seconds": elapsed, "up_cpu_seconds": cpu_after[0] - cpu_before[0],
            "node_cpu_seconds": cpu_after[1] - cpu_before[1],
            "engine_cpu_seconds": cpu_after[2] - cpu_before[2]}


def main() -> None:
    stop_cleanly_on_signals()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=counts, default=[300, 1000])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--run-seconds", type=float, default=0.1)
    parser.add_argument("--quiet", type=float, default=3.0)
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--startup-timeout", type=float, default=120.0)
    parser.add_argument("--stop-timeout", type=float, default=40.0)
    parser.add_argument("--qps", type=float, default=1000.0)
    parser.add_argument("--profile", type=Path,
                        help="a folder for py-spy profiles (speedscope) of kopf's operator, "
                             "as compare.py takes them")
    args = parser.parse_args()
    kopf = next(c for c in CONTROLLERS if c.name == "kopf")
    results: dict[int, dict[str, list[float]]] = {}
    cpu: dict[int, dict[str, list[float]]] = {}  # ms per lifecycle
    with tempfile.TemporaryDirectory() as scratch:
        for jobs in args.jobs:
            workload = Workload(jobs, 1)
            for round_ in range(args.rounds):
                found = results.setdefault(jobs, {"kopf": [], "jobmachine up": []})
                run = measure(kopf, workload, args, Path(scratch) / f"kopf-{jobs}-{round_}.log")
                found["kopf"].append(jobs / run["seconds"])
                up = measure_up(workload, args, Path(scratch) / f"up-{jobs}-{round_}",
                                Path(scratch) / f"up-{jobs}-{round_}.log")
                found["jobmachine up"].append(jobs / up["seconds"])
                per = cpu.setdefault(jobs, {})
                for key, seconds in (("kopf server+node", run["harness_cpu_seconds"]),
                                     ("kopf operator", run["cpu_seconds"]),
                                     ("up server", up["up_cpu_seconds"]),
                                     ("up node", up["node_cpu_seconds"]),
                                     ("up engine", up["engine_cpu_seconds"])):
                    per.setdefault(key, []).append(1000 * seconds / jobs)
                print(f"{jobs} jobs, round {round_ + 1}: kopf {found['kopf'][-1]:.1f}/s, "
                      f"jobmachine up {found['jobmachine up'][-1]:.1f}/s; CPU ms per "
                      "lifecycle: " + ", ".join(f"{k} {v[-1]:.1f}" for k, v in per.items())
                      + f"; load {os.getloadavg()[0]:.2f}", flush=True)
    print("\n| jobs | kopf lifecycles/s | `jobmachine up` lifecycles/s | ratio |")
    print("| --- | --- | --- | --- |")
    for jobs, found in results.items():
        kopf_rate = statistics.median(found["kopf"])
        up_rate = statistics.median(found["jobmachine up"])
        print(f"| {jobs} | {kopf_rate:.1f} | {up_rate:.1f} | {up_rate / kopf_rate:.2f} |")
    print("\n| jobs | CPU ms per lifecycle (median) | kopf server+node | kopf operator "
          "| up server | up node | up engine |\n| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for jobs, per in cpu.items():
        print(f"| {jobs} | | " + " | ".join(f"{statistics.median(v):.1f}" for v in per.values())
              + " |")
    if args.json is not None:
        args.json.write_text(json.dumps({str(k): v for k, v in results.items()}, indent=2))


if __name__ == "__main__":
    main()
