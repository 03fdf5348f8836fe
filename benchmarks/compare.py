"""Benchmark: jobmachine side by side with an idiomatic kopf operator (benchmarks/kopf_operator.py).

Each controller runs as its own process against a fresh embedded API server (TLS) with the
local node in simulate mode, both run by this script. Per workload it measures:
  - N single-replica PyTorchJobs submitted at once: lifecycles per second (submission to the
    last Succeeded), the controller's CPU seconds (utime + stime from /proc) per lifecycle,
    its requests per lifecycle counted at the server once it is quiet (events apart from the
    control path), and its peak memory (VmHWM); and, for context, the CPU this process spent
    meanwhile (the API server, the node, submitting and watching): both share the machine;
    and fairness: per job, the time from its pod seen ended to the job seen ended (this
    script's watches), median and p99, since all jobs arrive at once;
  - one PyTorchJob with M Workers: seconds to Succeeded, requests, CPU and memory.
A warm-up job, run first on every server, is left out of the figures. jobmachine runs with the
client rate limit `--qps` (its events too); kopf has none.

Run: python benchmarks/compare.py --jobs 100,300,1000,3000 --wide 100,500 --rounds 1 \
         --out docs/images/performance-scaling.png --json compare.json
`--profile DIR` has py-spy sample each controller (GIL mode) over the measured span and write
its profile as speedscope JSON into DIR.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import re
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
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
from engine.kube.client import KubeClient  # noqa: E402
from engine.kube.errors import ApiError, Gone  # noqa: E402
from engine.kube.resources import PODS, Resource  # noqa: E402
from engine.subprocesses import stop_gracefully  # noqa: E402

CRDS, MACHINES = ROOT / "crds", ROOT / "machines"
PYTORCHJOBS = next(r for r in crd_resources(CRDS) if r.kind == "PyTorchJob")
NAMESPACE = "default"
HARNESS_AGENT = "compare"
JOB_LABEL = "training.kubeflow.org/job-name"
METRIC = re.compile(r"^apiserver_request_total\{([^}]*)\} (\d+)$", re.MULTILINE)
LABEL = re.compile(r'(\w+)="([^"]*)"')


@dataclass(frozen=True)
class Controller:
    """How to start one controller, and the clients (User-Agent words) its requests carry."""

    name: str
    clients: frozenset[str]
    command: Callable[[Path, argparse.Namespace], list[str]]
    env: Callable[[Path, argparse.Namespace], dict[str, str]]


CONTROLLERS = (
    Controller(
        # kopf's own requests say `kopf/1.45.0`; its handlers' official client says
        # `OpenAPI-Generator/37.0.2/python`.
        name="kopf", clients=frozenset({"kopf", "OpenAPI-Generator"}),
        command=lambda _k, _a: [sys.executable, "-m", "kopf", "run", "--standalone",
                                "--all-namespaces", str(ROOT / "benchmarks/kopf_operator.py")],
        env=lambda kubeconfig, _a: {"KUBECONFIG": str(kubeconfig)},
    ),
    Controller(
        name="jobmachine", clients=frozenset({"jobmachine"}),
        command=lambda kubeconfig, _a: [str(Path(sys.executable).parent / "jobmachine"), "run",
                                        "--kubeconfig", str(kubeconfig)],
        # Events have a rate budget of their own: the same, so neither limit binds.
        env=lambda _k, args: {
            f"JOBMACHINE_{budget}_{knob}": value
            for budget in ("CLIENT", "EVENT")
            for knob, value in (("QPS", str(args.qps)), ("BURST", str(max(int(args.qps * 2), 1))))
        },
    ),
)


@dataclass(frozen=True)
class Workload:
    """`jobs` PyTorchJobs of `replicas` replicas each: one Master, else that many Workers."""

    jobs: int
    replicas: int

    @property
    def label(self) -> str:
        if self.replicas == 1:
            return f"{self.jobs} jobs"
        return f"1 job x {self.replicas} Workers"


# --- what the server counted --------------------------------------------------------------


def server_counts(server: RunningApiServer, clients: frozenset[str]) -> Counter[str]:
    """Requests of `clients` so far, by `VERB RESOURCE[/SUBRESOURCE]` and the code unless
    it is 2xx: `create pods`, `update pytorchjobs/status`, `patch pods 422`."""
    request = urllib.request.Request(
        server.url + "/metrics", headers={"Authorization": f"Bearer {server.token}"}
    )
    context = ssl.create_default_context(cafile=str(server.ca_file)) if server.ca_file else None
    with urllib.request.urlopen(request, context=context) as response:
        text = response.read().decode()
    counts: Counter[str] = Counter()
    for labels_text, value in METRIC.findall(text):
        labels = dict(LABEL.findall(labels_text))
        if labels.get("client") not in clients:
            continue
        key = f"{labels['verb']} {labels.get('resource') or 'discovery'}"
        if labels.get("subresource"):
            key += f"/{labels['subresource']}"
        if not labels["code"].startswith("2"):
            key += f" {labels['code']}"
        counts[key] += int(value)
    return counts


def is_event(key: str) -> bool:
    """Core and events.k8s.io events alike (the server's resource label has no group)."""
    return key.split(" ")[1] == "events"


def wait_quiet(server: RunningApiServer, clients: frozenset[str], quiet_s: float,
               check: Callable[[], None], timeout_s: float = 300) -> Counter[str]:
    """The counts once `clients` made no request for `quiet_s` seconds."""
    deadline = time.monotonic() + timeout_s
    last, since = server_counts(server, clients), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.25)
        check()
        counts = server_counts(server, clients)
        if counts != last:
            last, since = counts, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return counts
    raise TimeoutError(f"{sorted(clients)} still busy after {timeout_s:.0f} s")


# --- the controller's process ---------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_memory_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for process {pid}")


@contextlib.contextmanager
def running_controller(controller: Controller, server: RunningApiServer,
                       args: argparse.Namespace, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """The controller as a subprocess (its own session: a Ctrl-C reaches us, we stop it)."""
    env = {**os.environ, **controller.env(server.kubeconfig, args)}
    with log.open("wb") as out:
        process = subprocess.Popen(
            controller.command(server.kubeconfig, args), env=env, cwd=ROOT, stdout=out,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )
        try:
            yield process
        finally:
            stop_process(process, args.stop_timeout)


def stop_process(process: subprocess.Popen[bytes], timeout_s: float) -> None:
    """SIGTERM, `timeout_s` to stop, then SIGKILL (as `up` stops its own children)."""
    stop_gracefully(process, timeout_s, f"process {process.pid}")


def start_up(data_dir: Path, log: Path, *flags: str) -> tuple[subprocess.Popen[bytes], Path]:
    """`jobmachine up --node-mode simulate` as a user runs it (no JOBMACHINE_* variable set,
    a free port, its log in `log`) and the kubeconfig it prints once it serves."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBMACHINE_")}
    with log.open("wb") as err:
        process = subprocess.Popen(
            [str(Path(sys.executable).parent / "jobmachine"), "up", "--port", "0",
             "--node-mode", "simulate", "--quiet", "--data-dir", str(data_dir), *flags],
            env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=err, start_new_session=True)
    assert process.stdout is not None
    kubeconfig = next((line.decode().strip().split("=", 1)[1] for line in process.stdout
                       if line.startswith(b"export KUBECONFIG=")), None)
    if kubeconfig is None:
        process.wait()
        raise RuntimeError(f"jobmachine up exited with {process.returncode} before serving:\n"
                           + log.read_text(errors="replace")[-3000:])
    return process, Path(kubeconfig)


def profiling(pid: int, out: Path, *, output_format: str = "speedscope",
              rate: int = 100) -> subprocess.Popen[bytes]:
    """py-spy sampling `pid` in GIL mode (CPU, not waiting) `rate` times a second until
    interrupted, written to `out` in `output_format`: speedscope JSON
    (https://www.speedscope.app, or `py-spy`'s own viewer), or `raw` folded stacks."""
    out.parent.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        [str(Path(sys.executable).parent / "py-spy"), "record", "--pid", str(pid), "--gil",
         "--nonblocking", "--rate", str(rate), "--format", output_format, "--output",
         str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def alive_check(process: subprocess.Popen[bytes], log: Path) -> Callable[[], None]:
    def check() -> None:
        if process.poll() is not None:
            tail = log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"the controller exited with {process.returncode}:\n{tail}")

    return check


# --- jobs ---------------------------------------------------------------------------------


def pytorchjob(name: str, replicas: int, run_seconds: float) -> dict[str, Any]:
    """One Master when `replicas` is 1, else `replicas` Workers; pods recreated for exit codes
    >= 128 (Kubeflow's ExitCode policy, which is what the kopf operator does)."""
    template = {
        "metadata": {"annotations": {"sim.jobmachine.dev/run-seconds": str(run_seconds)}},
        "spec": {"containers": [{"name": "pytorch", "image": "example/train:1"}]},
    }
    replica_type = "Master" if replicas == 1 else "Worker"
    specs = {replica_type: {"replicas": replicas, "restartPolicy": "ExitCode",
                            "template": template}}
    return {
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"pytorchReplicaSpecs": specs},
    }


class Watched:
    """One resource watched by this script: `when(test)` waits until `test` holds for what
    was seen so far (object name -> the object as last seen) and gives the monotonic time."""

    def __init__(self, client: KubeClient, resource: Resource,
                 note: Callable[[dict[str, Any]], None]) -> None:
        self._client = client
        self._resource = resource
        self._note = note
        self.changed = threading.Condition()
        self._stop = threading.Event()
        self._stream: Any = None
        self._thread = threading.Thread(target=self._run, name=f"watch-{resource.plural}",
                                        daemon=True)
        self._thread.start()

    def wait(self, test: Callable[[], float | None], timeout_s: float,
             check: Callable[[], None], *, missing: Callable[[], str] | None = None) -> float:
        """The monotonic time `test` first gave (it returns None until it holds); on timeout
        a TimeoutError saying what is `missing`."""
        deadline = time.monotonic() + timeout_s
        with self.changed:
            while (at := test()) is None:
                if time.monotonic() > deadline:
                    raise TimeoutError(missing() if missing is not None else
                                       f"{self._resource.plural}: not there after {timeout_s} s")
                self.changed.wait(0.5)
                check()
        return at

    def close(self) -> None:
        self._stop.set()
        if self._stream is not None:
            self._stream.close()
        self._thread.join(10)

    def _run(self) -> None:
        version = ""
        while not self._stop.is_set():
            try:
                if not version:
                    found, version = self._client.list(self._resource, NAMESPACE)
                    for obj in found:
                        self._seen(obj)
                self._stream = self._client.watch(self._resource, NAMESPACE,
                                                  resource_version=version)
                for event in self._stream:
                    obj = event["object"]
                    version = obj["metadata"].get("resourceVersion") or version
                    if event["type"] != "BOOKMARK":
                        self._seen(obj)
            except Gone:
                version = ""
            except ApiError:
                if not self._stop.is_set():
                    time.sleep(0.5)

    def _seen(self, obj: dict[str, Any]) -> None:
        with self.changed:
            self._note(obj)
            self.changed.notify_all()


class Endings:
    """When each PyTorchJob (or pod) reached a final phase, as seen by a watch of this script."""

    def __init__(self, client: KubeClient, resource: Resource = PYTORCHJOBS) -> None:
        self._ended: dict[str, tuple[str, float]] = {}
        self.jobs: dict[str, str] = {}
        """Pod name -> its job's name (the job-name label both controllers set)."""
        self._watched = Watched(client, resource, self._note)

    def wait(self, names: set[str], timeout_s: float, check: Callable[[], None]) -> float:
        """The monotonic time the last of `names` succeeded; raises if one failed."""
        self._watched.wait(lambda: 0.0 if names <= self._ended.keys() else None, timeout_s,
                           check, missing=lambda: f"{len(names - self._ended.keys())} jobs "
                                                  f"not finished after {timeout_s:.0f} s")
        with self._watched.changed:
            ended = [self._ended[name] for name in names]
        failed = [phase for phase, _ in ended if phase != "Succeeded"]
        if failed:
            raise RuntimeError(f"{len(failed)} jobs ended {failed[0]}")
        return max(at for _, at in ended)

    def close(self) -> None:
        self._watched.close()

    def ended_at(self) -> dict[str, float]:
        """Name -> the monotonic time it was seen in a final phase."""
        with self._watched.changed:
            return {name: at for name, (_, at) in self._ended.items()}

    def _note(self, obj: dict[str, Any]) -> None:
        """(Under the watch's lock.)"""
        phase = (obj.get("status") or {}).get("phase")
        name = obj["metadata"]["name"]
        job = (obj["metadata"].get("labels") or {}).get(JOB_LABEL)
        if job:
            self.jobs[name] = job
        if phase in ("Succeeded", "Failed") and name not in self._ended:
            self._ended[name] = (phase, time.monotonic())


def submit(client: KubeClient, workload: Workload, run_seconds: float) -> set[str]:
    names = [f"bench-{i}" for i in range(workload.jobs)]
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda name: client.create(
            PYTORCHJOBS, pytorchjob(name, workload.replicas, run_seconds), NAMESPACE), names))
    return set(names)


# --- one measurement --------------------------------------------------------------------------


def measure(controller: Controller, workload: Workload, args: argparse.Namespace,
            log: Path) -> dict[str, Any]:
    """One run of `workload` under `controller` on a fresh server; the raw figures."""
    with running_apiserver(tls=True) as server:
        client = KubeClient.from_kubeconfig(server.kubeconfig, qps=100_000, burst=100_000,
                                            user_agent=HARNESS_AGENT)
        try:
            prepare_cluster(client, crds=[CRDS], machines=MACHINES)
            with running_node(server, mode="simulate"), \
                    running_controller(controller, server, args, log) as process:
                return measure_running(controller=controller, workload=workload, args=args,
                                       server=server, client=client, process=process, log=log)
        finally:
            client.close()


def measure_running(*, controller: Controller, workload: Workload, args: argparse.Namespace,
                    server: RunningApiServer, client: KubeClient,
                    process: subprocess.Popen[bytes], log: Path) -> dict[str, Any]:
    check = alive_check(process, log)
    endings, pod_endings = Endings(client), Endings(client, PODS)
    profiler: subprocess.Popen[bytes] | None = None
    try:
        client.create(PYTORCHJOBS, pytorchjob("warmup", 1, args.run_seconds), NAMESPACE)
        endings.wait({"warmup"}, args.startup_timeout, check)
        before = wait_quiet(server, controller.clients, args.quiet, check)
        profiler = (None if args.profile is None else profiling(
            process.pid, args.profile / f"{log.stem}.json"))
        cpu_before, harness_before = cpu_seconds(process.pid), time.process_time()
        started = time.monotonic()
        names = submit(client, workload, args.run_seconds)
        submitted = time.monotonic() - started
        elapsed = endings.wait(names, args.timeout, check) - started
        after = wait_quiet(server, controller.clients, args.quiet, check)
        cpu = cpu_seconds(process.pid) - cpu_before
        harness_cpu = time.process_time() - harness_before
        memory = peak_memory_mib(process.pid)
        lags = end_lags(names, endings, pod_endings)
    finally:
        if profiler is not None:  # it writes its profile once interrupted
            profiler.send_signal(signal.SIGINT)
            profiler.wait(60)
        endings.close()
        pod_endings.close()
    requests = after - before
    return {
        "controller": controller.name, "jobs": workload.jobs, "replicas": workload.replicas,
        "seconds": elapsed, "submit_seconds": submitted, "cpu_seconds": cpu,
        "peak_memory_mib": memory, "harness_cpu_seconds": harness_cpu,
        "lag_p50_seconds": percentile(lags, 0.5), "lag_p99_seconds": percentile(lags, 0.99),
        "event_requests": sum(n for k, n in requests.items() if is_event(k)),
        "control_requests": sum(n for k, n in requests.items() if not is_event(k)),
        "requests": dict(sorted(requests.items())),
    }


def end_lags(names: set[str], jobs: Endings, pods: Endings) -> list[float]:
    """Per job: seconds from its last pod seen ended to the job seen ended (fairness: work
    in progress should not wait behind new arrivals)."""
    pod_ends: dict[str, float] = {}
    for pod, at in pods.ended_at().items():
        job = pods.jobs.get(pod)
        if job in names:
            pod_ends[job] = max(pod_ends.get(job, at), at)
    job_ends = jobs.ended_at()
    return [job_ends[name] - pod_ends[name] for name in names
            if name in job_ends and name in pod_ends]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


# --- reporting ------------------------------------------------------------------------------


def summary(runs: list[dict[str, Any]]) -> dict[str, float]:
    """Medians over rounds, per job lifecycle for the many-jobs workloads."""
    per = runs[0]["jobs"] if runs[0]["replicas"] == 1 else 1
    med = {key: statistics.median(run[key] for run in runs)
           for key in ("seconds", "cpu_seconds", "harness_cpu_seconds", "peak_memory_mib",
                       "event_requests", "control_requests", "lag_p50_seconds",
                       "lag_p99_seconds")}
    return {
        "seconds": med["seconds"], "per_second": runs[0]["jobs"] / med["seconds"],
        "cpu_ms": med["cpu_seconds"] * 1000 / per, "memory_mib": med["peak_memory_mib"],
        "harness_cpu_ms": med["harness_cpu_seconds"] * 1000 / per,
        "events": med["event_requests"] / per, "control": med["control_requests"] / per,
        "requests": (med["event_requests"] + med["control_requests"]) / per,
        "lag_p50": med["lag_p50_seconds"], "lag_p99": med["lag_p99_seconds"],
    }


ROWS_MANY = (("lifecycles/s", "per_second", "{:.1f}"),
             ("CPU ms per lifecycle", "cpu_ms", "{:.1f}"),
             ("requests per lifecycle", "requests", "{:.1f}"),
             ("  control path", "control", "{:.1f}"),
             ("  events", "events", "{:.1f}"),
             ("peak memory MiB", "memory_mib", "{:.0f}"),
             ("server + node CPU ms per lifecycle", "harness_cpu_ms", "{:.1f}"),
             ("pod end to job end, median s", "lag_p50", "{:.2f}"),
             ("pod end to job end, p99 s", "lag_p99", "{:.2f}"))
ROWS_WIDE = (("seconds to Succeeded", "seconds", "{:.1f}"), ("CPU ms", "cpu_ms", "{:.0f}"),
             ("requests", "requests", "{:.0f}"), ("  control path", "control", "{:.0f}"),
             ("  events", "events", "{:.0f}"), ("peak memory MiB", "memory_mib", "{:.0f}"),
             ("server + node CPU ms", "harness_cpu_ms", "{:.0f}"))


def table(results: dict[Workload, dict[str, list[dict[str, Any]]]]) -> str:
    lines = ["| workload | measure | kopf | jobmachine | kopf / jobmachine |",
             "| --- | --- | ---: | ---: | ---: |"]
    for workload, by_controller in results.items():
        kopf, ours = summary(by_controller["kopf"]), summary(by_controller["jobmachine"])
        rows = ROWS_MANY if workload.replicas == 1 else ROWS_WIDE
        for title, key, fmt in rows:
            ratio = f"{kopf[key] / ours[key]:.2f}" if ours[key] else "-"
            lines.append(f"| {workload.label} | {title} | {fmt.format(kopf[key])} | "
                         f"{fmt.format(ours[key])} | {ratio} |")
    return "\n".join(lines)


def breakdown(runs: list[dict[str, Any]]) -> str:
    """The median run's requests by verb and resource, per lifecycle."""
    per = runs[0]["jobs"] if runs[0]["replicas"] == 1 else 1
    run = sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]
    items = sorted(run["requests"].items(), key=lambda item: -item[1])
    return ", ".join(f"{key} {count / per:.2f}" for key, count in items)


def plot(results: dict[Workload, dict[str, list[dict[str, Any]]]], out: Path, qps: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    many = sorted((w for w in results if w.replicas == 1), key=lambda w: w.jobs)
    figure, (speed, cpu) = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    labels = {"kopf": "kopf (no client rate limit)", "jobmachine": f"jobmachine (QPS {qps:g})"}
    for name, style in (("kopf", "o--"), ("jobmachine", "s-")):
        figures = [summary(results[w][name]) for w in many]
        xs = [w.jobs for w in many]
        speed.plot(xs, [f["per_second"] for f in figures], style, label=labels[name])
        cpu.plot(xs, [f["cpu_ms"] for f in figures], style, label=labels[name])
    for axes, title in ((speed, "lifecycles per second"), (cpu, "controller CPU ms per lifecycle")):
        axes.set_xscale("log")
        axes.minorticks_off()
        axes.set_xticks([w.jobs for w in many], [str(w.jobs) for w in many])
        axes.set_xlabel("single-replica PyTorchJobs submitted at once")
        axes.set_title(title)
        axes.set_ylim(bottom=0)
        axes.grid(alpha=0.3)
        axes.legend()
    figure.suptitle("jobmachine and kopf on the embedded cluster (simulated pods)")
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=120)
    plt.close(figure)


# --- main -----------------------------------------------------------------------------------


def counts(text: str) -> list[int]:
    """Comma-separated whole numbers, each at least 1 (a workload of no jobs or no Workers
    would wait for an end that never comes); argparse says which one it refused."""
    found = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            count = int(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{part!r} is not a whole number") from None
        if count < 1:
            raise argparse.ArgumentTypeError(f"{count} is not a count: each must be at least 1")
        found.append(count)
    return found


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--jobs", type=counts, default=[100, 300, 1000],
                        help="comma-separated job counts")
    parser.add_argument("--wide", type=counts, default=[100, 500],
                        help="comma-separated Worker counts of the one-job workloads")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--qps", type=float, default=1000.0,
                        help="jobmachine's client and event rate limits (bursts of twice as much)")
    parser.add_argument("--controllers", default="kopf,jobmachine")
    parser.add_argument("--run-seconds", type=float, default=0.1)
    parser.add_argument("--quiet", type=float, default=3.0,
                        help="seconds without a request that make a controller quiet")
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--startup-timeout", type=float, default=120.0)
    parser.add_argument("--stop-timeout", type=float, default=30.0)
    parser.add_argument("--out", type=Path, help="PNG of the scaling curves")
    parser.add_argument("--json", type=Path, help="raw results")
    parser.add_argument("--logs", type=Path, help="controllers' logs (default: a temp folder)")
    parser.add_argument("--profile", type=Path,
                        help="a folder for py-spy profiles (speedscope) of each controller, "
                             "from submission until it is quiet")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    logger.remove()
    logger.add(sys.stderr, level="ERROR")
    stop_cleanly_on_signals()
    names = args.controllers.split(",")
    controllers = [c for c in CONTROLLERS if c.name in names]
    workloads = [Workload(n, 1) for n in args.jobs] + [Workload(1, m) for m in args.wide]
    logs = args.logs or Path(tempfile.mkdtemp(prefix="jobmachine-compare-"))
    logs.mkdir(parents=True, exist_ok=True)
    print(f"compare: {', '.join(names)}; jobmachine qps {args.qps:g}; pods run "
          f"{args.run_seconds}s (simulate mode); {os.cpu_count()} cores; logs in {logs}",
          flush=True)
    started = time.monotonic()
    results: dict[Workload, dict[str, list[dict[str, Any]]]] = {}
    for workload in workloads:
        for round_ in range(args.rounds):
            for controller in controllers:
                log = logs / f"{controller.name}-{workload.jobs}x{workload.replicas}-{round_}.log"
                run = measure(controller, workload, args, log)
                results.setdefault(workload, {}).setdefault(controller.name, []).append(run)
                print(f"  {workload.label}, {controller.name}: {run['seconds']:.1f} s, "
                      f"CPU {run['cpu_seconds']:.1f} s, requests {run['control_requests']} "
                      f"+ {run['event_requests']} events", flush=True)
    print(f"\n{datetime.date.today()}, {time.monotonic() - started:.0f} s in all\n")
    if len(controllers) == 2:
        print(table(results))
    for workload, by_controller in results.items():
        for name, runs in by_controller.items():
            print(f"\n{workload.label}, {name}, requests per lifecycle: {breakdown(runs)}")
    if args.json:
        raw = [run for by in results.values() for runs in by.values() for run in runs]
        args.json.write_text(json.dumps({"date": str(datetime.date.today()),
                                         "args": sys.argv[1:], "runs": raw}, indent=1))
    if args.out and len(controllers) == 2:
        plot(results, args.out, args.qps)
        print(f"\nwrote {args.out}")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        print("interrupted: controllers, node and servers stopped", file=sys.stderr)
        sys.exit(130)
