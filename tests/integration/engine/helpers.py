"""Small helpers for the engine's integration tests: a PyTorchJob builder, polling, reads,
a pod watch for "at any time" checks, and engines started by hand.

Jobs run on the local node in simulate mode, so what each replica does comes from
annotations (`sim.jobmachine.dev/exit-codes`, `run-seconds`). Everything asynchronous is
waited for by polling with a generous bound; durations are never asserted.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from kubernetes import client as k8s
from kubernetes import config

from engine.app.up import LocalCluster
from engine.cluster import running_apiserver
from engine.cluster.apiserver.endpoints.serve import RunningApiServer, ServerOptions
from engine.cluster.node import RestartBackoff, running_node
from engine.controller.coordination.leader import LeaderElector
from engine.controller.machines.install import prepare_cluster
from engine.controller.reconcile.reconcile import RecordedTransition
from engine.controller.reconcile.record import MachineRecord, read_record, state_of
from engine.controller.runtime.manager import Engine
from engine.kube.client import KubeClient
from engine.kube.errors import ApiError, NotFound, Unavailable
from engine.kube.resources import EVENTS, NAMESPACES, PODS, Resource
from engine.settings import EngineSettings
from tests.kinds import CRDS, MACHINES, PYTORCHJOBS

JOB_NAME = "jobmachine.dev/job-name"
REPLICA_TYPE = "jobmachine.dev/replica-type"
REPLICA_INDEX = "jobmachine.dev/replica-index"
TRACKING = "jobmachine.dev/tracking"
CLEANUP = "jobmachine.dev/cleanup"
EXIT_CODES = "sim.jobmachine.dev/exit-codes"
RUN_SECONDS = "sim.jobmachine.dev/run-seconds"

HOLD = "test.jobmachine.dev/hold"
"""A foreign finalizer that keeps a deleted job in deletion for as long as a test needs."""

FAST = EngineSettings(replica_backoff_base_s=0.05, replica_backoff_cap_s=0.5,
                      stand_in_for_built_ins=True)
"""The engine's settings in these tests: production defaults except the restart back-off."""

FAST_NODE = RestartBackoff(initial_s=0.05, max_s=0.5)
"""The local node's crash-loop back-off in these tests (the kubelet's is 10 s to 5 min)."""

WAIT_S = 45.0
"""Generous bound for something asynchronous to happen; a bound, never a measurement (CI
runs two workers on two cores, so a few seconds of work can take many times that)."""

T = TypeVar("T")
Obj = dict[str, Any]


@dataclass(frozen=True)
class Replica:
    """One replica type of a test job: how many, what each attempt exits with, the policy."""

    count: int = 1
    codes: str = "0"
    policy: str | None = None
    run_s: float = 0.4


def pytorchjob(
    name: str,
    namespace: str,
    *,
    master: Replica | None = None,
    workers: Replica | None = None,
    backoff_limit: int | None = None,
    clean_pod_policy: str | None = None,
    finalizers: tuple[str, ...] = (),
) -> Obj:
    """A PyTorchJob whose pods simulate `codes` (one exit code per attempt, the last repeats)."""
    specs = {
        kind: replica_spec(replica)
        for kind, replica in (("Master", master), ("Worker", workers))
        if replica is not None
    }
    run_policy: Obj = {}
    if backoff_limit is not None:
        run_policy["backoffLimit"] = backoff_limit
    if clean_pod_policy is not None:
        run_policy["cleanPodPolicy"] = clean_pod_policy
    metadata: Obj = {"name": name, "namespace": namespace}
    if finalizers:
        metadata["finalizers"] = list(finalizers)
    return {
        "apiVersion": PYTORCHJOBS.api_version,
        "kind": "PyTorchJob",
        "metadata": metadata,
        "spec": {"runPolicy": run_policy, "pytorchReplicaSpecs": specs},
    }


def replica_spec(replica: Replica, container: str = "pytorch") -> Obj:
    """One replica type's spec whose main container `container` simulates `replica`."""
    spec: Obj = {
        "replicas": replica.count,
        "template": {
            "metadata": {
                "annotations": {EXIT_CODES: replica.codes, RUN_SECONDS: str(replica.run_s)}
            },
            "spec": {"containers": [{"name": container, "image": "pytorch/pytorch:2.3"}]},
        },
    }
    if replica.policy is not None:
        spec["restartPolicy"] = replica.policy
    return spec


def with_rules(job: Obj, *rules: Obj) -> Obj:
    """The job with these spec.failureRules (the first match wins)."""
    job["spec"]["failureRules"] = list(rules)
    return job


def new_namespace(client: KubeClient) -> str:
    """A fresh namespace, so tests sharing a cluster never see each other's objects."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                               "metadata": {"name": name}})
    return name


def wait_for(read: Callable[[], T], accept: Callable[[T], bool], *, what: str,
             timeout: float = WAIT_S) -> T:
    """Call `read` until `accept` takes its result; that result. Fails naming `what`."""
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if accept(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f}s: {what} (last: {value!r})")
        time.sleep(0.05)


def wait_until(condition: Callable[[], object], *, what: str, timeout: float = WAIT_S) -> None:
    """Poll `condition` until it is true; fail naming `what` otherwise."""
    wait_for(condition, bool, what=what, timeout=timeout)


def reconciles(cluster: LocalCluster) -> int:
    """How many reconciles the cluster's engine has finished so far."""
    return cluster.engine.queue.metrics().processed


def reconciles_of(run: EngineRun) -> int:
    """How many reconciles an engine started with `start_engine` has finished so far."""
    return run.engine.queue.metrics().processed


def settle(cluster: LocalCluster, since: int) -> None:
    """Give the engine its chance to do the wrong thing: it reconciled since then, and a moment."""
    wait_until(lambda: reconciles(cluster) > since, what="the engine reconciled again")
    time.sleep(1.0)


def get_job(client: KubeClient, namespace: str, name: str, *,
            kind: Resource = PYTORCHJOBS) -> Obj | None:
    """The job (a PyTorchJob unless `kind` says) as the server has it now, or None once gone."""
    try:
        return client.get(kind, name, namespace)
    except NotFound:
        return None


def status(job: Obj | None) -> Obj:
    """The job's status (empty when there is no job or no status yet)."""
    return (job or {}).get("status") or {}


def record(job: Obj | None) -> MachineRecord:
    """The engine's record in the job's status, as the engine reads it."""
    return read_record(status(job))


def stored(job: Obj | None) -> Obj:
    """`status.record` as it is stored: `replicas` as index ranges per state, `restarts`
    and `backoff` as `[count, last]` per index, `timers`, `counts`, `history`."""
    text = status(job).get("record")
    return dict(json.loads(text)) if text else {}


class TransitionLog:
    """Every state change the engines of these tests recorded, per job uid: status keeps only
    the last few, and the engine tells its listeners of each once its status write succeeded."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_uid: dict[str, list[Obj]] = defaultdict(list)

    def __call__(self, changes: Sequence[RecordedTransition]) -> None:
        with self._lock:
            for change in changes:
                entry: Obj = {"time": change.time, "level": change.level}
                if change.replica is not None:
                    entry["replica"] = change.replica
                entry.update({"from": change.source, "to": change.target,
                              "reason": change.reason})
                self._by_uid[change.uid].append(entry)

    def of(self, uid: str) -> list[Obj]:
        with self._lock:
            return list(self._by_uid.get(uid, ()))


TRANSITIONS = TransitionLog()
"""Every engine these tests start reports to it (`cluster` and `start_engine` do)."""


def history(job: Obj | None) -> list[Obj]:
    """Every recorded state change of the job (time, level, replica, from, to, reason), oldest
    first, as the engines told `TRANSITIONS`."""
    return TRANSITIONS.of(str((job or {}).get("metadata", {}).get("uid")))


def wait_for_phase(client: KubeClient, namespace: str, name: str, phase: str,
                   *, timeout: float = WAIT_S, kind: Resource = PYTORCHJOBS) -> Obj:
    """Wait until the job's phase is `phase`; the job then."""
    try:
        job = wait_for(lambda: get_job(client, namespace, name, kind=kind),
                       lambda job: status(job).get("phase") == phase,
                       what=f"{namespace}/{name} phase {phase}", timeout=timeout)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the job is at "
                             f"{summary(get_job(client, namespace, name, kind=kind))}"
                             ) from None
    assert job is not None
    return job


def summary(job: Obj | None) -> dict[str, Any]:
    """The status fields that tell where a job is (for failure messages)."""
    return {"phase": status(job).get("phase"), "replicas": stored(job).get("replicas"),
            "restarts": status(job).get("restarts")}


def condition(job: Obj, type_: str) -> Obj | None:
    """The job's condition of this type."""
    return next((c for c in status(job).get("conditions") or [] if c["type"] == type_), None)


def job_path(job: Obj) -> list[str]:
    """The job-level states the job went through, from its recorded history, once the
    listeners have heard of the state `job` records: the engine tells them after its status
    write returns, which may be after the test read the job (seen under load in CI)."""
    def told() -> list[str]:
        return [h["to"] for h in history(job) if h["level"] == "job"]

    state = state_of(status(job))
    if state:
        wait_until(lambda: state in told(), what=f"the state {state} told to the listeners")
    return told()


def replica_path(job: Obj, replica: str) -> list[str]:
    """The states one replica (e.g. `Worker-0`) went through, from the history."""
    return [
        h["to"] for h in history(job)
        if h["level"] == "replica" and h.get("replica") == replica
    ]


# The paths of a replica whose pod ran and exited 0. A short pod can start and end between
# two of the engine's looks at it on a loaded machine; then the path skips Running (the
# machine's Pending -> Succeeded), as a level-triggered controller's does.
RAN_AND_SUCCEEDED = (["Pending", "Running", "Succeeded"], ["Pending", "Succeeded"])


def job_events(client: KubeClient, job: Obj) -> list[Obj]:
    """The job's Events in the order they were recorded (their names carry the time)."""
    items, _ = client.list(
        EVENTS, job["metadata"]["namespace"],
        field_selector=f"involvedObject.uid={job['metadata']['uid']}",
    )
    return sorted(items, key=lambda e: int(e["metadata"]["name"].rpartition(".")[2], 16))


def count_events(events: list[Obj], reason: str) -> int:
    """How many times events with this reason happened (aggregated repeats included)."""
    return sum(int(e.get("count") or 1) for e in events if e["reason"] == reason)


def pods_of(client: KubeClient, namespace: str, job_name: str) -> list[Obj]:
    """The pods that carry the job's name label."""
    items, _ = client.list(PODS, namespace, label_selector=f"{JOB_NAME}={job_name}")
    return items


def pod_names(client: KubeClient, namespace: str, job_name: str) -> list[str]:
    """Names of the job's pods, sorted."""
    return sorted(p["metadata"]["name"] for p in pods_of(client, namespace, job_name))


def sim_pod(name: str, namespace: str, *, labels: dict[str, str], codes: str = "0",
            run_s: float = 0.2) -> Obj:
    """A bare pod (no owner) whose simulated container exits with `codes` after `run_s`.

    Its restartPolicy is Never, as on the engine's own pods: the engine decides restarts.
    """
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels,
                     "annotations": {EXIT_CODES: codes, RUN_SECONDS: str(run_s)}},
        "spec": {"restartPolicy": "Never",
                 "containers": [{"name": "pytorch", "image": "pytorch/pytorch:2.3"}]},
    }


def controller_uid(obj: Obj) -> str | None:
    """The uid named by the object's controller reference, if it has one."""
    for reference in obj["metadata"].get("ownerReferences") or ():
        if reference.get("controller"):
            return str(reference["uid"])
    return None


def replica_state(job: Obj | None, replica_type: str, index: int) -> str | None:
    """The state status records for one replica index (ranges like `0-3,7` expanded)."""
    for state, ranges in (stored(job).get("replicas") or {}).get(replica_type, {}).items():
        for part in str(ranges).split(","):
            low, _, high = part.partition("-")
            if int(low) <= index <= int(high or low):
                return str(state)
    return None


def wait_for_replica(client: KubeClient, namespace: str, name: str, replica: str,
                     state: str) -> Obj:
    """Wait until status records `replica` (e.g. `Worker-0`) in `state`; the job then."""
    replica_type, _, index = replica.rpartition("-")
    job = wait_for(lambda: get_job(client, namespace, name),
                   lambda job: replica_state(job, replica_type, int(index)) == state,
                   what=f"{namespace}/{name} {replica} {state}")
    assert job is not None
    return job


def wait_for_finalizers(client: KubeClient, namespace: str, name: str,
                        finalizers: list[str]) -> None:
    """Wait until the job's finalizers are exactly these (e.g. once the engine removed its own)."""
    wait_until(lambda: (get_job(client, namespace, name) or {}).get("metadata", {})
               .get("finalizers") == finalizers, what=f"{name}'s finalizers are {finalizers}")


def get_pod(client: KubeClient, namespace: str, name: str) -> Obj | None:
    """The pod as the server has it now, or None once it is gone."""
    try:
        return client.get(PODS, name, namespace)
    except NotFound:
        return None


def replica_key(pod: Obj) -> str:
    """`Worker-0` from the pod's labels, else its name."""
    labels = pod["metadata"].get("labels") or {}
    if REPLICA_TYPE in labels and REPLICA_INDEX in labels:
        return f"{labels[REPLICA_TYPE]}-{labels[REPLICA_INDEX]}"
    return str(pod["metadata"]["name"])


@dataclass
class PodWatch:
    """Every pod event in one namespace, watched from the start, for 'at any time' checks.

    It remembers every pod object it saw (by uid), how many existed at once per replica,
    and the uids created per replica. `key` names a pod's replica (`Worker-0` by default;
    tests with several jobs in one namespace put the job's name in it).
    """

    client: KubeClient
    namespace: str
    key: Callable[[Obj], str] = replica_key
    created: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    seen: set[str] = field(default_factory=set)
    most_at_once: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    _alive: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> PodWatch:
        _, version = self.client.list(PODS, self.namespace)
        self._thread = threading.Thread(target=self._run, args=(version,), daemon=True,
                                        name=f"pod-watch-{self.namespace}")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def creations(self) -> dict[str, int]:
        """Pods created per replica so far."""
        with self._lock:
            return {replica: len(uids) for replica, uids in self.created.items()}

    def _run(self, version: str) -> None:
        while not self._stop.is_set():
            try:
                for event in self.client.watch(PODS, self.namespace, resource_version=version,
                                               timeout_seconds=1):
                    version = event["object"]["metadata"].get("resourceVersion") or version
                    self._apply(event["type"], event["object"])
            except Unavailable:
                # A read timeout under load loses nothing: resume from the last version seen.
                # Only an expired version (Gone) or a refused watch means missed events.
                time.sleep(0.1)
            except ApiError as exc:
                self.errors.append(f"pod watch failed: {exc}")
                return

    def _apply(self, kind: str, pod: Obj) -> None:
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            return
        replica, uid = self.key(pod), str(pod["metadata"]["uid"])
        with self._lock:
            self.seen.add(uid)
            if kind == "DELETED":
                self._alive[replica].discard(uid)
                return
            if uid not in self._alive[replica] and uid not in self.created[replica]:
                self.created[replica].append(uid)
            self._alive[replica].add(uid)
            self.most_at_once[replica] = max(self.most_at_once[replica],
                                             len(self._alive[replica]))


@contextlib.contextmanager
def watching_pods(
    client: KubeClient, namespace: str, key: Callable[[Obj], str] = replica_key
) -> Iterator[PodWatch]:
    """A `PodWatch` for the length of the block."""
    watch = PodWatch(client, namespace, key).start()
    try:
        yield watch
    finally:
        watch.stop()
    assert not watch.errors, f"the pod watch missed events: {watch.errors}"


@dataclass
class EngineRun:
    """An engine running on its own thread, as `jobmachine run` would run it."""

    engine: Engine
    client: KubeClient
    thread: threading.Thread
    stopping: threading.Event

    def stop(self) -> None:
        """Stop it (workers first, then watches) and wait until it has stopped; idempotent."""
        if self.stopping.is_set():
            return
        self.stopping.set()
        self.thread.join(30)
        assert not self.thread.is_alive(), "the engine did not stop"
        self.client.close()


def start_engine(
    client: KubeClient, settings: EngineSettings, *, elector: LeaderElector | None = None
) -> EngineRun:
    """Run an engine on `client` (which it owns from now on); it runs the StateMachine objects
    the server has (the `engineless` fixture applies the shipped ones)."""
    engine = Engine(client, settings)
    engine.add_transition_listener(TRANSITIONS)
    stopping = threading.Event()
    thread = threading.Thread(target=engine.run, args=(stopping,),
                              kwargs={"leader_election": elector}, daemon=True, name="engine")
    thread.start()
    return EngineRun(engine, client, thread, stopping)


@contextlib.contextmanager
def running_engineless(options: ServerOptions | None = None) -> Iterator[RunningApiServer]:
    """The API server (with `options`) with the CRDs and machines and a simulated node, but
    no engine: tests run their own."""
    with running_apiserver(tls=True, options=options) as server:
        admin = KubeClient.from_kubeconfig(server.kubeconfig)
        try:
            prepare_cluster(admin, crds=[CRDS], machines=MACHINES)
        finally:
            admin.close()
        with running_node(server, mode="simulate", restart_backoff=FAST_NODE):
            yield server


@contextlib.contextmanager
def official_client(kubeconfig: Path) -> Iterator[k8s.ApiClient]:
    """The `kubernetes` package's client for a kubeconfig, closed afterwards."""
    configuration = k8s.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    api = k8s.ApiClient(configuration)
    try:
        yield api
    finally:
        api.close()
