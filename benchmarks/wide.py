"""Benchmark: wide jobs on `jobmachine up` at its defaults (issue 33, part 3).

Two workloads, each on a fresh `jobmachine up --node-mode simulate --quiet` started as a user
starts it (no JOBMACHINE_* variable set: the engine's settings are up's defaults), with the
node's pod capacity raised so every pod fits (`--node-capacity pods=...`; the default, 110
pods as a kubelet's, would hold all but 110 Workers Pending whatever the engine does):
  - `--pytorch M`: one PyTorchJob with M Workers whose pods "run" `--run-seconds`; seconds
    from its submission until every Worker pod was seen Running (or already ended), and
    until the job was seen Succeeded;
  - `--indexed C,P`: one Indexed batch/v1 Job of C completions, P at a time, pods "run"
    `--run-seconds`; seconds from submission until P pods were seen started (the first
    wave), and to `Complete`; completions per second.
Per round it also reads the CPU seconds of up's process (the API server), of its node and of
its engine (each a child process of up) over the workload, from /proc. A warm-up job runs
first.

`--passes W,S` runs no server: one PyTorchJob of W Workers decided pass after pass in this
process, S pods starting per pass, with the job's replica steps remembered and without (the
engine's CPU of a pass, and the replica steps it took). `--indexed-passes C,P,E` likewise
decides one Indexed Job of C completions, P at a time, E of its pods ending per pass.

Run: python benchmarks/wide.py --pytorch 500,1000 --indexed 10000,500 --rounds 3
     python benchmarks/wide.py --passes 1000,100 --passes 10000,1000
     python benchmarks/wide.py --indexed-passes 10000,500,20
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import signal
import ssl
import statistics
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compare import (
    HARNESS_AGENT,
    LABEL,
    METRIC,
    NAMESPACE,
    PYTORCHJOBS,
    ROOT,
    Watched,
    alive_check,
    counts,
    cpu_seconds,
    profiling,
    pytorchjob,
    start_up,
    stop_process,
)
from stopping import stop_cleanly_on_signals

from engine.controller.reconcile.children import ReplicaId
from engine.kube.client import KubeClient
from engine.kube.resources import PODS, Resource

JOBS = Resource("batch", "v1", "jobs", "Job")
RUN_SECONDS = "sim.jobmachine.dev/run-seconds"


def indexed_job(name: str, completions: int, parallelism: int,
                run_seconds: float) -> dict[str, Any]:
    """An Indexed Job whose pods "run" `run_seconds` and exit 0."""
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "completions": completions, "parallelism": parallelism,
            "completionMode": "Indexed", "backoffLimit": 0,
            "template": {
                "metadata": {"annotations": {RUN_SECONDS: str(run_seconds)}},
                "spec": {"restartPolicy": "Never",
                         "containers": [{"name": "shard", "image": "example/shard:1"}]},
            },
        },
    }


class Workers:
    """When each pod of one job was first seen Running or ended (pods that "run" 0.1 s may
    be seen only once they ended)."""

    def __init__(self, job: str) -> None:
        self._job = job
        self.started: dict[str, float] = {}

    def note(self, pod: dict[str, Any]) -> None:
        labels = pod["metadata"].get("labels") or {}
        if self._job not in labels.values():
            return
        phase = (pod.get("status") or {}).get("phase")
        name = pod["metadata"]["name"]
        if phase in ("Running", "Succeeded", "Failed") and name not in self.started:
            self.started[name] = time.monotonic()

    def started_count(self, count: int) -> Callable[[], float | None]:
        """When the `count`-th pod was first seen started."""
        return lambda: (sorted(self.started.values())[count - 1]
                        if len(self.started) >= count else None)


class Ends:
    """When each job was first seen ended: a PyTorchJob's phase, a Job's condition."""

    def __init__(self) -> None:
        self.ended: dict[str, tuple[str, float]] = {}

    def note(self, job: dict[str, Any]) -> None:
        status = job.get("status") or {}
        outcome = status.get("phase")
        for condition in status.get("conditions") or []:
            if condition.get("type") in ("Complete", "Failed") and condition.get(
                    "status") == "True":
                outcome = condition["type"]
        name = job["metadata"]["name"]
        if outcome in ("Succeeded", "Failed", "Complete") and name not in self.ended:
            self.ended[name] = (outcome, time.monotonic())

    def of(self, name: str) -> Callable[[], float | None]:
        def test() -> float | None:
            if name not in self.ended:
                return None
            outcome, at = self.ended[name]
            if outcome == "Failed":
                raise RuntimeError(f"{name} failed")
            return at
        return test


def requests_by_client(kubeconfig: Path) -> Counter[str]:
    """Every client's requests so far by the server's /metrics, as `CLIENT VERB RESOURCE`;
    the client is the User-Agent's first word (the engine's is `jobmachine`)."""
    from ruamel.yaml import YAML

    config = YAML(typ="safe").load(kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    request = urllib.request.Request(
        cluster["server"] + "/metrics",
        headers={"Authorization": f"Bearer {config['users'][0]['user']['token']}"})
    context = ssl.create_default_context(
        cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    with urllib.request.urlopen(request, context=context) as response:
        text = response.read().decode()
    found: Counter[str] = Counter()
    for labels_text, value in METRIC.findall(text):
        labels = dict(LABEL.findall(labels_text))
        resource = labels.get("resource") or "discovery"
        if labels.get("subresource"):
            resource += f"/{labels['subresource']}"
        found[f"{labels.get('client')} {labels['verb']} {resource}"] += int(value)
    return found


def up_children(up_pid: int) -> dict[str, int]:
    """up's child processes by what they run: "engine" (`jobmachine run`) and "node"
    (`jobmachine node`)."""
    found: dict[str, int] = {}
    for task in Path(f"/proc/{up_pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            for name, command in (("engine", b"run"), ("node", b"node")):
                if b"engine.cli" in argv and command in argv:
                    found[name] = int(child)
    if set(found) != {"engine", "node"}:
        raise RuntimeError(f"jobmachine up ({up_pid}) has children {found}, not an engine "
                           "and a node")
    return found


def run_one(kind: str, size: tuple[int, int], args: argparse.Namespace,
            data_dir: Path, log: Path) -> dict[str, float]:
    """One workload on a fresh `jobmachine up`; its figures."""
    capacity = size[0] + 50 if kind == "pytorch" else size[1] + 50
    process, kubeconfig = start_up(
        data_dir, log, "--node-capacity", f"pods={capacity}",
        *(["--machines", str(args.machines)] if args.machines else []))
    try:
        client = KubeClient.from_kubeconfig(kubeconfig, qps=100_000, burst=100_000,
                                            user_agent=HARNESS_AGENT)
        check = alive_check(process, log)
        resource = PYTORCHJOBS if kind == "pytorch" else JOBS
        ends = Ends()
        workers = Workers("bench")
        jobs = Watched(client, resource, ends.note)
        pods = Watched(client, PODS, workers.note)
        try:
            warmup = (pytorchjob("warmup", 1, args.run_seconds) if kind == "pytorch"
                      else indexed_job("warmup", 1, 1, args.run_seconds))
            client.create(resource, warmup, NAMESPACE)
            jobs.wait(ends.of("warmup"), args.startup_timeout, check)
            children = up_children(process.pid)
            pids = (process.pid, children["node"], children["engine"])
            profilers = ([] if args.profile is None else
                         [profiling(pid, args.profile / f"{name}-{kind}-{size[0]}.txt",
                                    output_format="raw", rate=50)
                          for name, pid in zip(("up", "node", "engine"), pids, strict=True)])
            cpu_before = [cpu_seconds(pid) for pid in pids]
            requests_before = requests_by_client(kubeconfig)
            started = time.monotonic()
            if kind == "pytorch":
                client.create(resource, pytorchjob("bench", size[0], args.run_seconds),
                              NAMESPACE)
                running = pods.wait(workers.started_count(size[0]), args.timeout, check)
            else:
                client.create(resource, indexed_job("bench", size[0], size[1],
                                                    args.run_seconds), NAMESPACE)
                running = pods.wait(workers.started_count(size[1]), args.timeout, check)
            ended = jobs.wait(ends.of("bench"), args.timeout, check)
            cpu_after = [cpu_seconds(pid) for pid in pids]
            requests = requests_by_client(kubeconfig) - requests_before
            for profiler in profilers:
                profiler.send_signal(signal.SIGINT)
                profiler.wait(60)
        finally:
            jobs.close()
            pods.close()
            client.close()
    finally:
        process.send_signal(signal.SIGINT)
        stop_process(process, args.stop_timeout)
    if args.requests:
        print(", ".join(f"{key} {n}" for key, n in requests.most_common()), flush=True)
    return {"running_s": running - started, "ended_s": ended - started,
            "server_cpu_s": cpu_after[0] - cpu_before[0],
            "node_cpu_s": cpu_after[1] - cpu_before[1],
            "engine_cpu_s": cpu_after[2] - cpu_before[2],
            "engine_requests": sum(n for key, n in requests.items()
                                   if key.startswith("jobmachine ")),
            "all_writes": sum(n for key, n in requests.items()
                              if key.split(" ")[1] not in ("get", "list", "watch"))}


def _sim_pod(job: dict[str, Any], replica: ReplicaId, phase: str) -> dict[str, Any]:
    """A replica's pod as the API server shows it, Pending (waiting) or Running."""
    state = ({"running": {"startedAt": "2026-01-01T00:00:00Z"}} if phase == "Running"
             else {"waiting": {"reason": "ContainerCreating"}})
    return {"metadata": {"name": f"{job['metadata']['name']}-{replica.type.lower()}-"
                                 f"{replica.index}", "uid": f"uid-{replica}"},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "pytorch"}]},
            "status": {"phase": phase, "containerStatuses": [
                {"name": "pytorch", "state": state, "restartCount": 0}]}}


def _pass(definition: Any, job: dict[str, Any], spec: Any, facts: dict[ReplicaId, Any],
          memo: Any, *, remembered: bool, machine: str) -> Any:
    """One in-process pass as the reconciler makes it: decide on `facts` (with the replica
    memo when `remembered`) and write the status back into `job`; the decision."""
    from engine.controller.machines.registry import Assignment
    from engine.controller.reconcile.decide import decide
    from engine.controller.reconcile.observe import job_observations
    from engine.controller.reconcile.record import read_record
    from engine.controller.reconcile.status import build_status

    now = "2026-01-01T00:00:01Z"
    decision = decide(definition, job, spec, read_record(job.get("status") or {}), facts,
                      now=now, memo=memo if remembered else None,
                      job_observations=job_observations(
                          job, spec, start_time=None, now=datetime.fromisoformat(now),
                          terminating_pods=0))
    job["status"] = build_status(job, Assignment(machine, "1", definition), spec, decision,
                                 now=now)
    return decision


def _created(decision: Any, pods: dict[ReplicaId, dict[str, Any]],
             make: Callable[[ReplicaId], dict[str, Any]]) -> None:
    """The pods `decision` plans to create, made Pending in `pods`."""
    for planned in decision.actions:
        if (planned.action.name == "createPod" and planned.replica is not None
                and planned.replica not in pods):
            pods[planned.replica] = make(planned.replica)


def decide_passes(workers: int, wave: int, *, remembered: bool) -> dict[str, float]:
    """One PyTorchJob of `workers` Workers decided in this process, without a server: each
    pass observes the pods, decides (with the job's replica steps remembered from its last
    passes or not) and builds the status; the pods it plans appear Pending, and `wave` of
    them Running per pass, until all run, then two passes more. The engine's CPU (ms) of
    the first pass (every replica created), of the median pass while `wave` replicas
    start, and of a pass with nothing changed; for each, the replica steps taken (with the
    memo: those not recalled)."""
    from engine.controller.reconcile.jobspec import read_job_spec
    from engine.controller.reconcile.manifests import main_container_name
    from engine.controller.reconcile.observe import observe_replica_pod
    from engine.controller.reconcile.replica_memo import ReplicaMemo
    from engine.definition import load_definitions

    (definition,) = [d for d in load_definitions([ROOT / "machines" / "kubeflow.yaml",
                                                  ROOT / "machines" / "pytorchjob.yaml"])
                     if d.governs.kind == "PyTorchJob"]
    job = pytorchjob("passes", workers, 0.1)
    job["metadata"].update(uid="uid-passes", creationTimestamp="2026-01-01T00:00:00Z")
    spec = read_job_spec(job, definition)
    memo = ReplicaMemo()
    pods: dict[ReplicaId, dict[str, Any]] = {}
    spent: list[float] = []
    steps: list[int] = []
    settled = 0
    while settled < 2:
        settled = settled + 1 if pods and all(
            p["status"]["phase"] == "Running" for p in pods.values()) else 0
        started = time.process_time()
        taken = memo.steps_taken
        facts = {replica: observe_replica_pod(
            pod, replica_type=replica.type, failure_rules=spec.failure_rules,
            main_container=main_container_name(definition, {}), node_ready=lambda _: True)
            for replica, pod in pods.items()}
        decision = _pass(definition, job, spec, facts, memo, remembered=remembered,
                         machine="pytorchjob")
        spent.append(1000 * (time.process_time() - started))
        steps.append(memo.steps_taken - taken)
        _created(decision, pods, lambda replica: _sim_pod(job, replica, "Pending"))
        waiting = [r for r, pod in sorted(pods.items()) if pod["status"]["phase"] == "Pending"]
        for replica in waiting[:wave]:
            pods[replica] = _sim_pod(job, replica, "Running")
    found = {"first_pass_ms": spent[0], "wave_pass_ms": statistics.median(spent[2:-1]),
             "steady_pass_ms": spent[-1]}
    if remembered:
        found.update(first_pass_steps=steps[0], wave_pass_steps=statistics.median(steps[2:-1]),
                     steady_pass_steps=steps[-1])
    return found


def _sim_job_pod(replica: ReplicaId, phase: str) -> dict[str, Any]:
    """An Indexed Job's pod as the API server shows it, Pending (waiting) or Succeeded."""
    state = ({"terminated": {"exitCode": 0, "reason": "Completed"}} if phase == "Succeeded"
             else {"waiting": {"reason": "ContainerCreating"}})
    return {"metadata": {"name": f"passes-{replica.index}", "uid": f"uid-{replica.index}"},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "shard"}]},
            "status": {"phase": phase, "containerStatuses": [
                {"name": "shard", "state": state, "restartCount": 0}]}}


def indexed_passes(completions: int, parallelism: int, ending: int, *,
                   remembered: bool) -> dict[str, float]:
    """One Indexed Job decided in this process, without a server, as `decide_passes` does a
    PyTorchJob: each pass observes the pods (an unchanged pod keeps its observation, as the
    reconciler keeps it), decides and builds the status; the pods it plans appear Pending
    and `ending` of them succeed per pass, until the Job is Complete. The engine's CPU per
    completion and of the median pass (ms), the passes, and per pass the replicas visited
    and the steps taken (with the memo)."""
    from engine.controller.reconcile.jobspec import read_job_spec
    from engine.controller.reconcile.observe import (
        PodFacts,
        observe_replica_pod,
    )
    from engine.controller.reconcile.replica_memo import ReplicaMemo
    from engine.definition import load_definitions

    (definition,) = [d for d in load_definitions([ROOT / "machines" / "batch-job.yaml"])
                     if d.governs.kind == "Job"]
    job = indexed_job("passes", completions, parallelism, 0.1)
    job["metadata"].update(uid="uid-passes", creationTimestamp="2026-01-01T00:00:00Z")
    spec = read_job_spec(job, definition)
    memo = ReplicaMemo()
    pods: dict[ReplicaId, dict[str, Any]] = {}
    observed: dict[ReplicaId, tuple[dict[str, Any], PodFacts]] = {}
    spent: list[float] = []
    visits: list[int] = []
    steps: list[int] = []
    while len(spent) < 10 * completions:
        started = time.process_time()
        taken, recalled = memo.steps_taken, memo.steps_recalled
        facts = {}
        for replica, pod in pods.items():
            kept = observed.get(replica)
            if kept is None or kept[0] is not pod:
                kept = observed[replica] = (pod, observe_replica_pod(
                    pod, replica_type=replica.type, failure_rules=spec.failure_rules,
                    main_container=None, node_ready=lambda _: True))
            facts[replica] = kept[1]
        decision = _pass(definition, job, spec, facts, memo, remembered=remembered,
                         machine="batch-job")
        spent.append(1000 * (time.process_time() - started))
        steps.append(memo.steps_taken - taken)
        visits.append(steps[-1] + memo.steps_recalled - recalled)
        if decision.record.state != "Active":
            break
        _created(decision, pods, lambda replica: _sim_job_pod(replica, "Pending"))
        waiting = [r for r, pod in pods.items() if pod["status"]["phase"] == "Pending"]
        for replica in sorted(waiting)[:ending]:
            pods[replica] = _sim_job_pod(replica, "Succeeded")
    found = {"per_completion_ms": sum(spent) / completions,
             "median_pass_ms": statistics.median(spent), "passes": len(spent)}
    if remembered:
        found.update(median_visits=statistics.median(visits),
                     median_steps=statistics.median(steps))
    return found


def pair(text: str) -> tuple[int, int]:
    completions, parallelism = counts(text)
    return completions, parallelism


def main() -> None:
    stop_cleanly_on_signals()
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--pytorch", type=counts, default=None,
                        help="comma-separated Worker counts, one PyTorchJob each (default "
                             "500,1000 unless --passes is given)")
    parser.add_argument("--indexed", type=pair, action="append", default=None,
                        help="COMPLETIONS,PARALLELISM of an Indexed Job (repeatable)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--run-seconds", type=float, default=0.1)
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--startup-timeout", type=float, default=120.0)
    parser.add_argument("--stop-timeout", type=float, default=40.0)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--requests", action="store_true",
                        help="print each run's requests by client, verb and resource")
    parser.add_argument("--machines", type=Path,
                        help="a folder of machines for up instead of the shipped ones")
    parser.add_argument("--profile", type=Path,
                        help="a folder for py-spy's folded stacks of up and of its engine")
    parser.add_argument("--passes", type=pair, action="append", default=None,
                        help="WORKERS,WAVE: one PyTorchJob decided in this process, without "
                             "a server, WAVE pods starting per pass; the engine's CPU per "
                             "pass with and without its replica steps remembered")
    parser.add_argument("--indexed-passes", type=counts, action="append", default=None,
                        help="COMPLETIONS,PARALLELISM,ENDING: one Indexed Job decided in this "
                             "process, without a server, ENDING pods succeeding per pass")
    args = parser.parse_args()
    for completions, parallelism, ending in args.indexed_passes or []:
        for remembered in (False, True):
            found = indexed_passes(completions, parallelism, ending, remembered=remembered)
            print(f"passes of an Indexed Job of {completions} completions, parallelism "
                  f"{parallelism}, {ending} end per pass, steps "
                  f"{'remembered' if remembered else 'not remembered'}: "
                  + ", ".join(f"{k} {v:.2f}" for k, v in found.items())
                  + f"; load {os.getloadavg()[0]:.2f}", flush=True)
    for workers, wave in args.passes or []:
        for remembered in (False, True):
            found = decide_passes(workers, wave, remembered=remembered)
            print(f"passes of a PyTorchJob x {workers} Workers, {wave} start per pass, "
                  f"steps {'remembered' if remembered else 'not remembered'}: "
                  + ", ".join(f"{k} {v:.2f}" for k, v in found.items())
                  + f"; load {os.getloadavg()[0]:.2f}", flush=True)
    only_passes = args.passes or args.indexed_passes
    pytorch = args.pytorch if args.pytorch is not None else [] if only_passes else [500, 1000]
    workloads = [("pytorch", (m, m)) for m in pytorch] + [
        ("indexed", size) for size in (args.indexed or [])]
    results: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(args.rounds):
            for kind, size in workloads:
                label = (f"PyTorchJob x {size[0]} Workers" if kind == "pytorch"
                         else f"Indexed Job {size[0]} completions, parallelism {size[1]}")
                run = run_one(kind, size, args, Path(scratch) / f"{kind}-{size[0]}-{round_}",
                              Path(scratch) / f"{kind}-{size[0]}-{round_}.log")
                if kind == "indexed":
                    run["completions_per_s"] = size[0] / run["ended_s"]
                results.setdefault(label, []).append(run)
                print(f"{label}, round {round_ + 1}: "
                      + ", ".join(f"{k} {v:.2f}" for k, v in run.items())
                      + f"; load {os.getloadavg()[0]:.2f}", flush=True)
    print("\n| workload | measure | median | runs |\n| --- | --- | ---: | --- |")
    for label, runs in results.items():
        for key in runs[0]:
            values = [run[key] for run in runs]
            print(f"| {label} | {key} | {statistics.median(values):.2f} | "
                  + ", ".join(f"{v:.2f}" for v in values) + " |")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
