"""Benchmark: the engine restarting over N finished jobs (issue 12, goal 7).

Goal: "Restart over 10,000 finished jobs: ready in < 10 s with 0 writes." After a long
run with cleanPodPolicy None, a cluster holds every finished job with its pod and its
headless service. A restarted engine (an upgrade, a lost lease, a crash) has to list all
of them and reconcile each once before it is back to work; this measures how long that
takes and what it costs the API server, to show what stands between the engine and the
goal.

How:
  1. The embedded API server (TLS) runs in this process, with the CRDs and machines.
     ONE real single-Master PyTorchJob is run to Succeeded by the real local node
     (simulate mode) and a real engine, both stopped afterwards: the finished job, its
     pod and its service are read back as templates, so the copies look exactly like
     what the engine and the node leave behind.
  2. N-1 copies are written through the API by a fast client (8 threads): per copy the
     job (the template's spec), its pod (same labels and spec, new name, owner and uid
     labels) and the pod's status (Succeeded, container terminated with exit code 0)
     through pods/status, its service, the job's status through the status subresource
     (the template's, with names and uids replaced) and the job's finalizers (a merge
     patch). The node is not running then, nor later: nothing runs the pods again.
     A few copies are compared with the template.
  3. A fresh engine is started as a subprocess (`jobmachine run --metrics-port P`), so
     its CPU and memory are its own (read from /proc), and watched through its own
     /metrics: it is *ready* when its caches are synced (/readyz), every job key has
     been handed out and done (`jobmachine_workqueue_adds` >= N and equal to
     `jobmachine_workqueue_processed`), and no reconcile is in flight. (The engine queues
     every job before its workers start, and a key counts as added once however often
     it is queued meanwhile, so adds == processed means every job was reconciled and
     nothing is queued or running; keys delayed for later are not counted until due.)
     The log's timestamps split the time: caches synced, machines judged, jobs listed.
     The engine's requests are counted at the server's /metrics (client "jobmachine")
     from its start until `--after` seconds after ready; the server counts a list page
     as a `get` (10,000 objects are 20 pages of 500). Watches are counted when their
     stream ends, so a second count is taken after the engine has stopped (writes made
     while stopping, e.g. events still queued, are shown apart).

One restart runs with client QPS `--qps` (burst twice that), one with the default
settings (`EngineSettings()`: 50 QPS, burst 100) unless `--no-default`; with `--restarts K`
each setting restarts K times, taking turns, and medians are printed too (a later restart
also shows whether writes of the first were a one-time repair or happen every time).

Run: python benchmarks/restart.py [--jobs 10000] [--qps 1000] [--json results.json]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import random
import re
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

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
from engine.kube.client import KubeClient  # noqa: E402
from engine.kube.resources import PODS, SERVICES  # noqa: E402
from engine.settings import EngineSettings  # noqa: E402

CRDS, MACHINES = ROOT / "crds", ROOT / "machines"
PYTORCHJOBS = next(r for r in crd_resources(CRDS) if r.kind == "PyTorchJob")
NAMESPACE = "default"
READ_VERBS = ("get", "list", "watch")
WRITE_VERBS = ("create", "update", "patch", "delete")
SERVER_METADATA = ("uid", "resourceVersion", "creationTimestamp", "managedFields",
                   "generation", "deletionTimestamp", "deletionGracePeriodSeconds")
"""Metadata the server sets: left out of a copy's create and of the comparisons."""

Obj = dict[str, Any]
Counts = Counter[tuple[str, str, str, str]]
"""Requests by (verb, resource, subresource, code)."""


# --- The API server's request counts -------------------------------------------------------

_REQUEST_LINE = re.compile(
    r'^apiserver_request_total\{client="(?P<client>[^"]*)",verb="(?P<verb>[^"]*)",'
    r'resource="(?P<resource>[^"]*)",subresource="(?P<subresource>[^"]*)",'
    r'code="(?P<code>[^"]*)"\} (?P<value>[0-9.e+]+)$',
    re.MULTILINE,
)


def server_counts(server: RunningApiServer, client: str = "jobmachine") -> Counts:
    """The server's request counters of one client (the engine's User-Agent is
    "jobmachine"; this script's own requests say "benchmark")."""
    request = urllib.request.Request(
        server.url + "/metrics", headers={"Authorization": f"Bearer {server.token}"}
    )
    context = (ssl.create_default_context(cafile=str(server.ca_file))
               if server.ca_file is not None else None)
    with urllib.request.urlopen(request, context=context, timeout=30) as response:
        text = response.read().decode()
    counts: Counts = Counter()
    for match in _REQUEST_LINE.finditer(text):
        if match["client"] == client:
            key = (match["verb"], match["resource"], match["subresource"], match["code"])
            counts[key] += int(float(match["value"]))
    return counts


def diff(after: Counts, before: Counts) -> Counts:
    """Requests counted between two snapshots (zeros dropped)."""
    return Counter({k: after[k] - before.get(k, 0) for k in after
                    if after[k] - before.get(k, 0) > 0})


def split(counts: Counts, verbs: tuple[str, ...]) -> dict[str, int]:
    """Requests of some verbs as `verb resource[/subresource] code` -> count, sorted."""
    found = {
        f"{verb} {resource}{'/' + sub if sub else ''} {code}": n
        for (verb, resource, sub, code), n in counts.items() if verb in verbs
    }
    return dict(sorted(found.items()))


# --- Building the finished jobs ----------------------------------------------------------

def pytorchjob(name: str, run_seconds: float, workers: int = 0) -> Obj:
    """A PyTorchJob with one Master and `workers` Workers whose simulated containers run
    `run_seconds` (as `pytorchjob()` in benchmarks/engine.py)."""
    template = {
        "metadata": {"annotations": {"sim.jobmachine.dev/run-seconds": str(run_seconds)}},
        "spec": {"containers": [{"name": "pytorch", "image": "example/train:1"}]},
    }
    specs: Obj = {"Master": {"replicas": 1, "template": template}}
    if workers:
        specs["Worker"] = {"replicas": workers, "template": template}
    return {
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"pytorchReplicaSpecs": specs},
    }


@dataclass(frozen=True)
class Templates:
    """A job the real engine and node finished, its pod(s) and service(s), as read back."""

    job: Obj
    pods: list[Obj]
    services: list[Obj]

    @property
    def name(self) -> str:
        return str(self.job["metadata"]["name"])

    @property
    def uid(self) -> str:
        return str(self.job["metadata"]["uid"])


def job_name(index: int, width: int) -> str:
    """Every job's name has the same width, so no name is a prefix of another."""
    return f"restart-{index:0{width}d}"


KOPF_COMMAND = [sys.executable, "-m", "kopf", "run", "--standalone", "--all-namespaces",
                str(ROOT / "benchmarks" / "kopf_operator.py")]
KOPF_CLIENTS = ("kopf", "OpenAPI-Generator")
"""kopf's own requests and its handlers' official client (as in compare.py)."""
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
"""Kubeflow's label, which both jobmachine and the kopf operator put on a job's children."""


def run_template_job_kopf(server: RunningApiServer, client: KubeClient, name: str,
                          timeout_s: float, workers: int = 0) -> Templates:
    """Run one real job to Succeeded with the real node (simulate mode) and the kopf
    operator as its own process; both are stopped before this returns."""
    with running_node(server, mode="simulate"):
        process = subprocess.Popen(
            KOPF_COMMAND, env={**os.environ, "KUBECONFIG": str(server.kubeconfig)}, cwd=ROOT,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            client.create(PYTORCHJOBS, pytorchjob(name, 0.05, workers), NAMESPACE)
            deadline = time.monotonic() + timeout_s
            while (client.get(PYTORCHJOBS, name, NAMESPACE).get("status") or {}).get(
                    "phase") not in ("Succeeded", "Failed"):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the template job {name} did not finish under kopf")
                time.sleep(0.1)
            time.sleep(2.0)  # kopf's last annotation patch follows the status patch
        finally:
            _stop(process)
    job = client.get(PYTORCHJOBS, name, NAMESPACE)
    phase = (job.get("status") or {}).get("phase")
    if phase != "Succeeded":
        raise RuntimeError(f"the template job ended {phase}, not Succeeded")
    pods, _ = client.list(PODS, NAMESPACE, label_selector=f"{JOB_NAME_LABEL}={name}")
    return Templates(job, pods, [])


def run_template_job(server: RunningApiServer, client: KubeClient, name: str,
                     timeout_s: float, workers: int = 0) -> Templates:
    """Run one real job to Succeeded with the real node (simulate mode) and a real engine
    in this process; both are stopped before this returns."""
    with running_node(server, mode="simulate"):
        engine_client = KubeClient.from_kubeconfig(server.kubeconfig)
        engine = Engine(engine_client, EngineSettings())
        stop = threading.Event()
        runner = threading.Thread(target=engine.run, args=(stop,), name="template-engine",
                                  daemon=True)
        runner.start()
        try:
            engine.wait_until_governed("PyTorchJob", timeout_s=60)
            client.create(PYTORCHJOBS, pytorchjob(name, 0.05, workers), NAMESPACE)
            deadline = time.monotonic() + timeout_s
            while not _settled(client, name):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the template job {name} did not finish")
                time.sleep(0.1)
            _wait_unchanged(client, name, quiet_s=1.0, deadline=deadline)
        finally:
            stop.set()
            runner.join(60)
            engine_client.close()
    job = client.get(PYTORCHJOBS, name, NAMESPACE)
    phase = (job.get("status") or {}).get("phase")
    if phase != "Succeeded":
        raise RuntimeError(f"the template job ended {phase}, not Succeeded")
    selector = f"jobmachine.dev/job-name={name}"
    pods, _ = client.list(PODS, NAMESPACE, label_selector=selector)
    services, _ = client.list(SERVICES, NAMESPACE, label_selector=selector)
    return Templates(job, pods, services)


def _settled(client: KubeClient, name: str) -> bool:
    """The job has finished and the engine has let go of its pods (tracking finalizer)."""
    job = client.get(PYTORCHJOBS, name, NAMESPACE)
    if (job.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
        return False
    pods, _ = client.list(PODS, NAMESPACE, label_selector=f"jobmachine.dev/job-name={name}")
    return bool(pods) and not any(p["metadata"].get("finalizers") for p in pods)


def _wait_unchanged(client: KubeClient, name: str, quiet_s: float, deadline: float) -> None:
    """Wait until the job has not changed for `quiet_s`, so that the copies are of its
    final state (a copy of an unfinished write would be written again at the restart)."""
    version = client.get(PYTORCHJOBS, name, NAMESPACE)["metadata"]["resourceVersion"]
    since = time.monotonic()
    while time.monotonic() - since < quiet_s:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the template job {name} kept changing")
        time.sleep(0.1)
        now = client.get(PYTORCHJOBS, name, NAMESPACE)["metadata"]["resourceVersion"]
        if now != version:
            version, since = now, time.monotonic()


def _renamed(value: Any, replacements: dict[str, str]) -> Any:
    """`value` with every occurrence of the keys replaced, in any string anywhere in it."""
    text = orjson.dumps(value).decode()
    for old, new in replacements.items():
        text = text.replace(old, new)
    return orjson.loads(text)


def _creatable(obj: Obj, replacements: dict[str, str]) -> Obj:
    """A child's body for create: the template renamed, without what the server sets, status
    and empty finalizers."""
    body: Obj = _renamed({k: v for k, v in obj.items() if k != "status"}, replacements)
    metadata = body["metadata"]
    for key in SERVER_METADATA:
        metadata.pop(key, None)
    if not metadata.get("finalizers"):
        metadata.pop("finalizers", None)
    return body


class Copier:
    """Writes copies of the template job, each as if the engine and node had finished it."""

    def __init__(self, client: KubeClient, templates: Templates) -> None:
        self._client = client
        self._t = templates

    def copy(self, name: str) -> None:
        """The job, its pods and services, their status, then the job's status and
        finalizers; in that order so that uids the job's status may hold are known."""
        t, client = self._t, self._client
        job_body = {
            "apiVersion": t.job["apiVersion"], "kind": t.job["kind"],
            "metadata": {"name": name, "namespace": NAMESPACE, **{
                k: v for k, v in t.job["metadata"].items() if k in ("labels", "annotations")
            }},
            "spec": t.job["spec"],
        }
        job = client.create(PYTORCHJOBS, job_body, NAMESPACE)
        replacements = {t.name: name, t.uid: job["metadata"]["uid"]}
        for pod in t.pods:
            created = client.create(PODS, _creatable(pod, replacements), NAMESPACE)
            status = copy.deepcopy(pod.get("status") or {})
            for container in status.get("containerStatuses") or ():
                _new_container_id(container)
            created["status"] = status
            client.replace(PODS, created["metadata"]["name"], created, namespace=NAMESPACE,
                           subresource="status")
            replacements[pod["metadata"]["uid"]] = created["metadata"]["uid"]
            replacements[pod["metadata"]["uid"][:8]] = created["metadata"]["uid"][:8]
        for service in t.services:
            client.create(SERVICES, _creatable(service, replacements), NAMESPACE)
        job["status"] = _renamed(t.job.get("status") or {}, replacements)
        job = client.replace(PYTORCHJOBS, name, job, namespace=NAMESPACE, subresource="status")
        finalizers = t.job["metadata"].get("finalizers") or []
        if finalizers:
            client.patch(PYTORCHJOBS, name, {"metadata": {"finalizers": finalizers}},
                         namespace=NAMESPACE)


def _new_container_id(container: Obj) -> None:
    """A copied container gets an id of its own (same scheme as the node's)."""
    old = container.get("containerID")
    if not old:
        return
    new = f"{old.split('://', 1)[0]}://{uuid.uuid4().hex}"
    container["containerID"] = new
    for state in (container.get("state") or {}).values():
        if isinstance(state, dict) and state.get("containerID") == old:
            state["containerID"] = new


def copy_jobs(client: KubeClient, templates: Templates, names: list[str], threads: int,
              progress: Callable[[int], None]) -> None:
    """Write every copy with `threads` threads; stops early (cancelling the rest) on an
    error or Ctrl-C."""
    copier = Copier(client, templates)
    done = 0
    lock = threading.Lock()

    def one(name: str) -> None:
        nonlocal done
        copier.copy(name)
        with lock:
            done += 1
            progress(done)

    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="copier")
    try:
        for future in [pool.submit(one, name) for name in names]:
            future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _normalised(obj: Obj, name: str, uids: dict[str, str]) -> Obj:
    """An object with names and uids replaced by placeholders and server metadata (and
    container ids and timestamps of the copy's making) dropped, for comparison."""
    replacements = {name: "<job>", **{uid: f"<{what}>" for uid, what in uids.items()}}
    value: Obj = _renamed(obj, replacements)
    for key in SERVER_METADATA:
        value["metadata"].pop(key, None)
    if not value["metadata"].get("finalizers"):
        value["metadata"].pop("finalizers", None)
    for container in (value.get("status") or {}).get("containerStatuses") or ():
        container.pop("containerID", None)
        for state in (container.get("state") or {}).values():
            if isinstance(state, dict):
                state.pop("containerID", None)
    return value


def _differences(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        found: list[str] = []
        for key in sorted(a.keys() | b.keys()):
            if key not in a or key not in b:
                found.append(f"{path}.{key}: only in {'copy' if key in b else 'template'}")
            else:
                found += _differences(a[key], b[key], f"{path}.{key}")
        return found
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


def check_copies(client: KubeClient, templates: Templates, names: list[str]) -> list[str]:
    """How the given copies differ from the template, apart from names, uids, server
    metadata and container ids (an empty list: they look alike)."""
    problems: list[str] = []

    def children(resource: Any, job: str) -> list[Obj]:
        items, _ = client.list(resource, NAMESPACE,
                               label_selector=f"{JOB_NAME_LABEL}={job}")
        return sorted(items, key=lambda o: o["metadata"]["name"])

    for name in names:
        job = client.get(PYTORCHJOBS, name, NAMESPACE)
        pods, services = children(PODS, name), children(SERVICES, name)
        if len(pods) != len(templates.pods) or len(services) != len(templates.services):
            problems.append(f"{name}: {len(pods)} pods, {len(services)} services")
            continue
        pairs = [(templates.job, job), *zip(templates.pods, pods, strict=True),
                 *zip(templates.services, services, strict=True)]
        theirs = {templates.uid: "job-uid", **{p["metadata"]["uid"]: "pod-uid"
                                               for p in templates.pods}}
        ours = {job["metadata"]["uid"]: "job-uid", **{p["metadata"]["uid"]: "pod-uid"
                                                    for p in pods}}
        for template, copied in pairs:
            kind = copied["kind"]
            for problem in _differences(_normalised(template, templates.name, theirs),
                                        _normalised(copied, name, ours)):
                problems.append(f"{name} {kind}{problem}")
    return problems


# --- The restarted engine ----------------------------------------------------------------

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def process_memory_mib(pid: int) -> tuple[float, float]:
    """(resident now, peak resident) in MiB (/proc/PID/status VmRSS and VmHWM)."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0]) / 1024
    return values.get("VmRSS", 0.0), values.get("VmHWM", 0.0)


def load_average() -> str:
    """The 1, 5 and 15 minute load averages (the machine is shared)."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def free_port() -> int:
    """A port nothing listens on now (the engine binds it a moment later)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?P<labels>\{[^}]*\})? "
                     r"(?P<value>\S+)$", re.MULTILINE)


def engine_metrics(port: int) -> dict[str, float] | None:
    """The engine's /metrics as `name{labels}` -> value; None while it does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except (OSError, urllib.error.URLError):
        return None
    return {m["name"] + (m["labels"] or ""): float(m["value"]) for m in _SAMPLE.finditer(text)}


def engine_answers(port: int, path: str) -> bool:
    """Whether the engine's `path` (/healthz: it serves; /readyz: every cache has listed
    once) answers 200. Both are fixed answers, cheap to ask for, unlike /metrics."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def scrape_cpu_ms(pid: int, port: int, scrapes: int = 10) -> float:
    """The engine's CPU per /metrics scrape, measured while it is idle (each scrape walks
    every cached job to count jobs by phase): what watching it for readiness cost it."""
    before = process_cpu_s(pid)
    for _ in range(scrapes):
        engine_metrics(port)
    return 1000 * (process_cpu_s(pid) - before) / scrapes


def is_ready(metrics: dict[str, float], jobs: int) -> bool:
    """Every job key handed out and done, nothing queued or in flight (delayed keys are
    future work, not part of the restart)."""
    adds = metrics.get("jobmachine_workqueue_adds_total", 0.0)
    processed = metrics.get("jobmachine_workqueue_processed_total", -1.0)
    return (
        adds >= jobs and adds == processed
        and metrics.get("jobmachine_workqueue_depth", 1.0) == 0
        and metrics.get("jobmachine_workqueue_longest_running_processor_seconds", 1.0) == 0
    )


@dataclass
class Restart:
    """What one restart of the engine measured."""

    label: str
    qps: float | None
    """None: the default settings."""
    jobs: int
    load_before: str
    objects: int = 0
    """Jobs, pods and services in the cluster, each of which the engine caches."""
    up_s: float | None = None
    """Process start to its /healthz answering (interpreter, imports, Engine built)."""
    synced_s: float | None = None
    """To /readyz 200: the informers of machines, CRDs, revisions, pods, services, nodes."""
    judged_s: float | None = None
    """To the log's "watching PyTorchJob": the machines judged, the jobs' watch started."""
    working_s: float | None = None
    """To the log's "engine working": machines judged, the jobs listed and queued, the
    workers started (from the log's timestamps, to the millisecond)."""
    ready_s: float | None = None
    """To every job reconciled once with nothing queued or in flight."""
    reconciles: int = 0
    """Keys processed until `after_s` past ready."""
    reconcile_results: dict[str, float] = field(default_factory=dict)
    reconcile_seconds_sum: float = 0.0
    cpu_at_ready_s: float = 0.0
    cpu_s: float = 0.0
    """Engine CPU from its start until `after_s` past ready."""
    server_cpu_s: float = 0.0
    """CPU of this process (the API server, plus the polling) over the same span."""
    rss_mib: float = 0.0
    peak_rss_mib: float = 0.0
    after_s: float = 0.0
    reads: dict[str, int] = field(default_factory=dict)
    writes: dict[str, int] = field(default_factory=dict)
    """Engine writes from start until `after_s` past ready."""
    writes_at_stop: dict[str, int] = field(default_factory=dict)
    """Engine writes while it stopped (events still queued are posted then)."""
    watches: dict[str, int] = field(default_factory=dict)
    """Watch streams the engine opened, counted when they ended (at its stop)."""
    events: dict[str, float] = field(default_factory=dict)
    log_lines: dict[str, int] = field(default_factory=dict)
    """INFO and above lines of the engine's log, by message with names and numbers
    replaced (what it said it did)."""
    scrapes: int = 0
    """/metrics scrapes made to tell when it was ready."""
    scrape_cpu_ms: float = 0.0
    """Engine CPU per scrape (measured after the window): scrapes x this is the cost of
    watching it, included in `cpu_s`."""
    load_after: str = ""
    statuses_changed: int = 0
    """Jobs whose status the restart changed (read only when it wrote)."""
    first_change: list[str] = field(default_factory=list)
    """How the first of them changed."""
    error: str | None = None


_LOG_TIME = re.compile(r"^(\d\d):(\d\d):(\d\d\.\d+) ", re.MULTILINE)


def _logged_at(path: Path, message: str, started_wall: float) -> float | None:
    """Seconds from `started_wall` (time.time()) to the first log line containing
    `message` (the text format stamps lines with the local time of day)."""
    text = path.read_text(errors="replace") if path.exists() else ""
    for line in text.splitlines():
        match = _LOG_TIME.match(line)
        if match and message in line:
            start = time.localtime(started_wall)
            day_start = started_wall - (start.tm_hour * 3600 + start.tm_min * 60 + start.tm_sec
                                        + started_wall % 1)
            at = day_start + int(match[1]) * 3600 + int(match[2]) * 60 + float(match[3])
            return (at - started_wall) % 86400
    return None


def _count_log_lines(path: Path) -> dict[str, int]:
    counts: Counter[str] = Counter()
    text = path.read_text(errors="replace") if path.exists() else ""
    for line in text.splitlines():
        parts = line.split(maxsplit=2)
        if len(parts) < 3 or not re.fullmatch(r"\d\d:\d\d:\d\d\.\d+", parts[0]):
            continue
        message = re.sub(r"\[[^\]]*\] ", "", parts[2])
        message = re.sub(r"restart-\d+", "<job>", message)
        message = re.sub(r"\d+(\.\d+)?", "<n>", message)
        counts[f"{parts[1]} {message[:140]}"] += 1
    return dict(counts.most_common(20))


def job_statuses(client: KubeClient) -> dict[str, Any]:
    """Every job's status by name."""
    items, _ = client.list(PYTORCHJOBS, NAMESPACE)
    return {item["metadata"]["name"]: item.get("status") for item in items}


def _note_status_changes(result: Restart, before: dict[str, Any], after: dict[str, Any]) -> None:
    """How many jobs' statuses a restart that wrote changed, and how the first changed."""
    changed = sorted(name for name in after if after[name] != before.get(name))
    result.statuses_changed = len(changed)
    if changed:
        result.first_change = _differences(before.get(changed[0]), after[changed[0]],
                                           f"{changed[0]}.status")[:5]


def restart_engine(server: RunningApiServer, client: KubeClient, *, label: str,
                   qps: float | None, jobs: int, objects: int, args: argparse.Namespace,
                   log_dir: Path) -> Restart:
    """Start `jobmachine run` against the server and measure it until `args.after` s past
    ready; it is always stopped (SIGINT, then SIGKILL) before this returns. The jobs'
    statuses are read before and after, to say what a restart that wrote changed."""
    result = Restart(label=label, qps=qps, jobs=jobs, objects=objects,
                     load_before=load_average())
    statuses = job_statuses(client)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBMACHINE_")}
    if qps is not None:
        env["JOBMACHINE_CLIENT_QPS"] = str(qps)
        env["JOBMACHINE_CLIENT_BURST"] = str(max(int(qps * 2), 1))
    command = [str(Path(sys.executable).with_name("jobmachine")), "run",
               "--kubeconfig", str(server.kubeconfig), "--metrics-port", str(port)]
    log_path = log_dir / f"engine-{label.replace(' ', '-')}.log"
    before = server_counts(server)
    server_cpu = time.process_time()
    with log_path.open("wb") as log:
        started_wall = time.time()
        started = time.perf_counter()
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   cwd=ROOT, start_new_session=True)
    try:
        metrics = _wait_ready(process, port=port, jobs=jobs, result=result, started=started,
                              args=args)
        if result.ready_s is not None:
            result.cpu_at_ready_s = process_cpu_s(process.pid)
            time.sleep(args.after)
            result.after_s = args.after
            metrics = engine_metrics(port) or metrics
        window = diff(server_counts(server), before)
        result.server_cpu_s = time.process_time() - server_cpu
        if process.poll() is None:  # an engine that exited has no /proc entry to read
            result.cpu_s = process_cpu_s(process.pid)
            result.rss_mib, result.peak_rss_mib = process_memory_mib(process.pid)
            result.scrape_cpu_ms = scrape_cpu_ms(process.pid, port)
        result.reconciles = int(metrics.get("jobmachine_workqueue_processed_total", 0))
        result.reconcile_results = {
            k.split('"')[1]: v for k, v in metrics.items()
            if k.startswith("jobmachine_reconcile_total{")
        }
        result.reconcile_seconds_sum = metrics.get(
            "jobmachine_reconcile_duration_seconds_sum", 0.0)
        result.events = {k.removeprefix("jobmachine_"): v for k, v in metrics.items()
                         if k.startswith("jobmachine_events")}
        result.reads = split(window, READ_VERBS)
        result.writes = split(window, WRITE_VERBS)
    finally:
        _stop(process)
    after_stop = diff(server_counts(server), before)
    result.watches = split(after_stop, ("watch",))
    result.writes_at_stop = {
        k: n - result.writes.get(k, 0) for k, n in split(after_stop, WRITE_VERBS).items()
        if n - result.writes.get(k, 0) > 0
    }
    if result.writes or result.writes_at_stop:
        _note_status_changes(result, statuses, job_statuses(client))
    result.log_lines = _count_log_lines(log_path)
    result.judged_s = _logged_at(log_path, "watching PyTorchJob", started_wall)
    result.working_s = _logged_at(log_path, "engine working", started_wall)
    result.load_after = load_average()
    return result


def kopf_counts(server: RunningApiServer) -> Counts:
    counts: Counts = Counter()
    for name in KOPF_CLIENTS:
        counts += server_counts(server, name)
    return counts


def restart_kopf(server: RunningApiServer, *, label: str, jobs: int, args: argparse.Namespace,
                 log_dir: Path) -> Restart:
    """Start the kopf operator over the finished jobs. kopf has no readiness to ask, so it is
    *ready* once it has gone quiet: no request and under 10% of a core for `args.quiet` s;
    the time is that of its last activity. Always stopped before this returns."""
    result = Restart(label=label, qps=None, jobs=jobs, load_before=load_average())
    before = kopf_counts(server)
    server_cpu = time.process_time()
    log_path = log_dir / f"kopf-{label.replace(' ', '-')}.log"
    with log_path.open("wb") as log:
        started = time.perf_counter()
        process = subprocess.Popen(
            KOPF_COMMAND, env={**os.environ, "KUBECONFIG": str(server.kubeconfig)}, cwd=ROOT,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        last_total, last_cpu, last_change = -1, 0.0, started
        while time.perf_counter() < started + args.timeout:
            if process.poll() is not None:
                result.error = f"kopf exited with code {process.returncode}"
                break
            total = sum(diff(kopf_counts(server), before).values())
            cpu, now = process_cpu_s(process.pid), time.perf_counter()
            if total != last_total or cpu - last_cpu > 0.1 * args.poll:
                last_total, last_cpu, last_change = total, cpu, now
            elif total > 0 and now - last_change >= args.quiet:
                result.ready_s = last_change - started
                result.cpu_at_ready_s = result.cpu_s = last_cpu
                break
            time.sleep(args.poll)
        else:
            result.error = f"not quiet within {args.timeout:.0f} s"
        window = diff(kopf_counts(server), before)
        result.server_cpu_s = time.process_time() - server_cpu
        result.rss_mib, result.peak_rss_mib = process_memory_mib(process.pid)
        result.reads = split(window, READ_VERBS)
        result.writes = split(window, WRITE_VERBS)
    finally:
        _stop(process)
    result.load_after = load_average()
    return result


def print_kopf_restart(r: Restart) -> None:
    print(f"\n{r.label}: quiet (ready) after {_seconds(r.ready_s)} s; CPU {r.cpu_s:.1f} s; "
          f"memory {r.rss_mib:.0f} MiB, peak {r.peak_rss_mib:.0f} MiB; load {r.load_before} "
          f"-> {r.load_after}")
    if r.error:
        print(f"  ERROR: {r.error}")
    print(f"  reads  {sum(r.reads.values()):>6}: " + ", ".join(
        f"{k} x{n}" for k, n in r.reads.items()))
    print(f"  writes {sum(r.writes.values()):>6}: " + (", ".join(
        f"{k} x{n}" for k, n in r.writes.items()) or "none"))


def _wait_ready(process: subprocess.Popen[bytes], *, port: int, jobs: int, result: Restart,
                started: float, args: argparse.Namespace) -> dict[str, float]:
    """Poll the engine every `args.poll` s until it is ready (or the timeout): /healthz,
    then /readyz, then /metrics (only once synced: a scrape costs the engine CPU); fills
    the times in `result` and returns the last metrics."""
    metrics: dict[str, float] = {}
    deadline = started + args.timeout
    while time.perf_counter() < deadline:
        if process.poll() is not None:
            result.error = f"the engine exited with code {process.returncode}"
            return metrics
        now = time.perf_counter() - started
        if result.up_s is None and engine_answers(port, "/healthz"):
            result.up_s = now
        if result.up_s is not None and result.synced_s is None and engine_answers(
                port, "/readyz"):
            result.synced_s = now
        if result.synced_s is not None:
            metrics = engine_metrics(port) or metrics
            result.scrapes += 1
            if is_ready(metrics, jobs):
                result.ready_s = time.perf_counter() - started
                return metrics
        time.sleep(args.poll)
    result.error = f"not ready within {args.timeout:.0f} s"
    return metrics


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGINT (a clean stop: workers, watches, events flushed), SIGKILL if it lingers."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


# --- Reporting -----------------------------------------------------------------------------

def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


_STARTUP_LINE = re.compile(r"^INFO (watching |engine working:)")
"""What every start logs once (kinds watched, workers started)."""


def print_restart(r: Restart) -> None:
    """One restart's figures, writes in detail."""
    print(f"\n{r.label}: ready {_seconds(r.ready_s)} s (process up {_seconds(r.up_s)} s, caches "
          f"synced {_seconds(r.synced_s)} s, machines judged {_seconds(r.judged_s)} s, jobs "
          f"listed and workers started {_seconds(r.working_s)} s); load {r.load_before} -> "
          f"{r.load_after}")
    if r.error:
        print(f"  ERROR: {r.error}")
    print(f"  reconciles {r.reconciles} {r.reconcile_results}, "
          f"{r.reconcile_seconds_sum:.1f} s inside reconciles")
    print(f"  engine CPU {r.cpu_at_ready_s:.1f} s to ready, {r.cpu_s:.1f} s to ready + "
          f"{r.after_s:.0f} s; API server (+ polling) CPU {r.server_cpu_s:.1f} s; "
          f"engine memory {r.rss_mib:.0f} MiB, peak {r.peak_rss_mib:.0f} MiB; "
          f"{r.scrapes} scrapes of its /metrics x {r.scrape_cpu_ms:.0f} ms CPU")
    if r.objects:
        print(f"  engine memory per cached object (job, pod or service): "
              f"{r.rss_mib * 1024 / r.objects:.2f} KiB of RSS, {r.objects} objects")
    print(f"  reads  {sum(r.reads.values()):>6}: " + ", ".join(
        f"{k} x{n}" for k, n in r.reads.items()))
    print(f"  watches (counted at stop) {sum(r.watches.values())}: " + ", ".join(
        f"{k} x{n}" for k, n in r.watches.items()))
    print(f"  writes {sum(r.writes.values()):>6}: " + (", ".join(
        f"{k} x{n}" for k, n in r.writes.items()) or "none"))
    if r.writes_at_stop:
        print("  writes while stopping: " + ", ".join(
            f"{k} x{n}" for k, n in r.writes_at_stop.items()))
    if r.statuses_changed:
        print(f"  statuses changed: {r.statuses_changed}, the first: " + "; ".join(
            r.first_change))
    events = {k.split('"')[1] if '"' in k else k.removeprefix("events_").removesuffix(
        "_total"): int(v) for k, v in r.events.items()}
    print(f"  events {events}")
    lines = {line: n for line, n in r.log_lines.items() if not _STARTUP_LINE.search(line)}
    print("  log lines beyond the start-up ones: " + ("none" if not lines else ""))
    for line, n in lines.items():
        print(f"    {n:>6} x {line}")


def print_table(restarts: list[Restart]) -> None:
    """The short table: one line per restart, then the median of each setting's restarts
    when it had several."""
    header = (f"{'run':<22}{'ready s':>8}{'synced s':>9}{'working s':>10}{'reconciles':>11}"
              f"{'reads':>7}{'writes':>7}{'CPU s':>7}{'peak MiB':>9}")
    print("\n" + header)
    print("-" * len(header))

    def line(label: str, rs: list[Restart]) -> str:
        def median(values: list[float | None]) -> float | None:
            known = [v for v in values if v is not None]
            return statistics.median(known) if known else None

        ready = median([r.ready_s for r in rs])
        synced = median([r.synced_s for r in rs])
        working = median([r.working_s for r in rs])
        columns: list[Callable[[Restart], float]] = [
            lambda r: r.reconciles, lambda r: sum(r.reads.values()),
            lambda r: sum(r.writes.values()), lambda r: r.cpu_s, lambda r: r.peak_rss_mib]
        figures = [median([float(f(r)) for r in rs]) or 0.0 for f in columns]
        return (f"{label:<22}{_seconds(ready):>8}{_seconds(synced):>9}{_seconds(working):>10}"
                f"{figures[0]:>11.0f}{figures[1]:>7.0f}{figures[2]:>7.0f}{figures[3]:>7.1f}"
                f"{figures[4]:>9.0f}")

    for r in restarts:
        print(line(r.label, [r]))
    settings: dict[float | None, list[Restart]] = {}
    for r in restarts:
        settings.setdefault(r.qps, []).append(r)
    for qps, rs in settings.items():
        if len(rs) > 1:
            name = "default" if qps is None else f"qps {qps:g}"
            print(line(f"median {name} ({len(rs)})", rs))


# --- Main ----------------------------------------------------------------------------------

@contextlib.contextmanager
def _closing(client: KubeClient) -> Iterator[KubeClient]:
    try:
        yield client
    finally:
        client.close()


def parse_args() -> argparse.Namespace:
    """The command line; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=10_000,
                        help="finished jobs in the cluster (the template and N-1 copies)")
    parser.add_argument("--qps", type=float, default=1000.0,
                        help="the engine's client QPS in the main restart (burst twice it)")
    parser.add_argument("--no-default", action="store_true",
                        help="skip the restart with the default settings (50 QPS)")
    parser.add_argument("--restarts", type=int, default=1,
                        help="restarts per setting, taking turns, over the same jobs")
    parser.add_argument("--after", type=float, default=10.0,
                        help="seconds past ready over which requests are still counted")
    parser.add_argument("--workers", type=int, default=0,
                        help="Workers per job besides its Master (pods per job: 1 + this); "
                        "--jobs 10000 --workers 9 caches 100,000 pods")
    parser.add_argument("--threads", type=int, default=8, help="threads writing the copies")
    parser.add_argument("--poll", type=float, default=0.2,
                        help="seconds between looks at the engine (the resolution of the "
                        "times; each /metrics scrape costs the engine ~10 ms CPU at 10,000 "
                        "jobs)")
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds a restart may take to become ready")
    parser.add_argument("--controller", choices=("jobmachine", "kopf"), default="jobmachine",
                        help="kopf: the template job is finished by benchmarks/kopf_operator.py "
                        "and kopf is restarted instead (needs the .[bench] extra)")
    parser.add_argument("--quiet", type=float, default=3.0,
                        help="kopf: seconds without requests and CPU that count as ready")
    parser.add_argument("--json", type=Path, help="write the raw results here")
    parser.add_argument("--logs", type=Path,
                        help="keep the engines' logs in this folder (default: a temporary one)")
    args = parser.parse_args()
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    if args.workers < 0:
        parser.error("--workers must be 0 or more")
    return args


def planned_restarts(args: argparse.Namespace) -> list[tuple[str, float | None]]:
    """(label, client QPS or None for the default settings) of each restart, in order: the
    settings take turns, so a change of the machine's load touches both alike."""
    runs: list[tuple[str, float | None]] = []
    for i in range(args.restarts):
        suffix = f" #{i + 1}" if args.restarts > 1 else ""
        runs.append((f"qps {args.qps:g}{suffix}", args.qps))
        if not args.no_default:
            runs.append((f"default (qps 50){suffix}", None))
    return runs


def fill_cluster(server: RunningApiServer, client: KubeClient, args: argparse.Namespace,
                 results: dict[str, Any]) -> None:
    """The template job run for real, then its copies, then a check of a few copies; the
    times and the check go into `results`."""
    width = max(5, len(str(args.jobs - 1)))
    names = [job_name(i, width) for i in range(args.jobs)]
    started = time.perf_counter()
    run = run_template_job_kopf if args.controller == "kopf" else run_template_job
    templates = run(server, client, names[0], timeout_s=120, workers=args.workers)
    results["template_s"] = time.perf_counter() - started
    print(f"template job {names[0]} succeeded with the real node and {args.controller} in "
          f"{results['template_s']:.1f} s ({len(templates.pods)} pods, "
          f"{len(templates.services)} services); node and engine stopped")
    results["objects_per_job"] = 1 + len(templates.pods) + len(templates.services)

    step = max(1, (args.jobs - 1) // 10)
    started = time.perf_counter()

    def progress(done: int) -> None:
        if done % step == 0:
            elapsed = time.perf_counter() - started
            print(f"  {done} copies, {elapsed:.0f} s ({done / elapsed:.0f}/s)", flush=True)

    copy_jobs(client, templates, names[1:], args.threads, progress)
    results["copy_s"] = time.perf_counter() - started
    results["copy_requests"] = sum(server_counts(server, "benchmark").values())
    print(f"copied {args.jobs - 1} jobs in {results['copy_s']:.1f} s "
          f"({(args.jobs - 1) / max(results['copy_s'], 1e-9):.0f} jobs/s, {args.threads} "
          f"threads, {results['copy_requests']} requests by this script); "
          f"load {load_average()}")
    results["objects"] = args.jobs * results["objects_per_job"]
    results["server_rss_mib"], results["server_peak_rss_mib"] = process_memory_mib(os.getpid())
    print(f"this process (the API server, holding {results['objects']} jobs, pods and "
          f"services, and the copies' client): {results['server_rss_mib']:.0f} MiB of RSS, "
          f"{results['server_rss_mib'] * 1024 / results['objects']:.1f} KiB per object")
    sample = random.Random(7).sample(names[1:], min(3, args.jobs - 1))
    problems = check_copies(client, templates, sample)
    results["copy_check"] = {"sampled": sample, "differences": problems}
    print(f"copies {', '.join(sample)} compared with the template: "
          + ("alike" if not problems else f"{len(problems)} differences"))
    for problem in problems[:20]:
        print(f"  {problem}")


def main() -> None:
    """Build the cluster, restart the engine over it as planned, report; everything
    started here is stopped on the way out, also on Ctrl-C or SIGTERM."""
    args = parse_args()
    logger.remove()
    logger.add(sys.stderr, level="ERROR")
    stop_cleanly_on_signals()
    shape = "single-Master" if not args.workers else f"Master + {args.workers} Workers"
    print(f"restart benchmark: {args.jobs} finished {shape} PyTorchJobs; "
          f"{os.cpu_count()} cores, load {load_average()}")
    results: dict[str, Any] = {"jobs": args.jobs, "load_at_start": load_average(),
                               "restarts": []}
    with contextlib.ExitStack() as stack:
        log_dir = args.logs or Path(stack.enter_context(
            tempfile.TemporaryDirectory(prefix="jobmachine-restart-")))
        log_dir.mkdir(parents=True, exist_ok=True)
        server = stack.enter_context(running_apiserver(tls=True))
        client = stack.enter_context(_closing(KubeClient.from_kubeconfig(
            server.kubeconfig, qps=1e9, burst=10**9, user_agent="benchmark")))
        prepare_cluster(client, crds=[CRDS], machines=MACHINES)
        fill_cluster(server, client, args, results)
        restarts = []
        if args.controller == "kopf":
            for i in range(args.restarts):
                restart = restart_kopf(server, label=f"kopf #{i + 1}", jobs=args.jobs,
                                       args=args, log_dir=log_dir)
                results["restarts"].append(asdict(restart))
                print_kopf_restart(restart)
        for label, qps in planned_restarts(args) if args.controller == "jobmachine" else []:
            restart = restart_engine(server, client, label=label, qps=qps, jobs=args.jobs,
                                     objects=results["objects"], args=args, log_dir=log_dir)
            restarts.append(restart)
            results["restarts"].append(asdict(restart))
            print_restart(restart)
        if restarts:
            print_table(restarts)
        if args.logs:
            print(f"engine logs in {log_dir}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
        print(f"raw results in {args.json}")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        print("interrupted; everything started was stopped", file=sys.stderr)
        sys.exit(130)
