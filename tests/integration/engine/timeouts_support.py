"""Builders and watches for the integration tests of state timeouts, Kubeflow labels and the
machines' default failure rules: jobs of any kind (MachineJob, TFJob beside helpers' PyTorchJob),
a replica kept Pending on the simulated node, and a watch that keeps every status a job had.

A replica stays Pending while an init container runs: the simulated node runs it for the
pod's `run-seconds` before the main container starts, exactly as a kubelet would.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from engine.controller.client import KubeClient
from engine.controller.errors import ApiError, NotFound
from engine.controller.resources import JOB_RESOURCES, Resource
from tests.integration.engine.helpers import (
    EXIT_CODES,
    RUN_SECONDS,
    WAIT_S,
    Replica,
    status,
    summary,
    wait_for,
)

Obj = dict[str, Any]

MACHINEJOBS = JOB_RESOURCES["MachineJob"]
TFJOBS = JOB_RESOURCES["TFJob"]


def get_obj(client: KubeClient, res: Resource, namespace: str, name: str) -> Obj | None:
    """The object as the server has it now, or None once it is gone."""
    try:
        return client.get(res, name, namespace)
    except NotFound:
        return None


def wait_for_phase_of(client: KubeClient, res: Resource, namespace: str, name: str, phase: str,
                      *, timeout: float = WAIT_S) -> Obj:
    """Wait until the job (of any kind) is in `phase`; the job then."""
    try:
        job = wait_for(lambda: get_obj(client, res, namespace, name),
                       lambda job: status(job).get("phase") == phase,
                       what=f"{namespace}/{name} phase {phase}", timeout=timeout)
    except AssertionError as exc:
        raise AssertionError(
            f"{exc}; the job is at {summary(get_obj(client, res, namespace, name))}") from None
    assert job is not None
    return job


def replica_spec(replica: Replica, container: str) -> Obj:
    """One replica type's spec whose main container `container` simulates `replica`."""
    spec: Obj = {
        "replicas": replica.count,
        "template": {
            "metadata": {
                "annotations": {EXIT_CODES: replica.codes, RUN_SECONDS: str(replica.run_s)}
            },
            "spec": {"containers": [{"name": container, "image": "busybox:1.36"}]},
        },
    }
    if replica.policy is not None:
        spec["restartPolicy"] = replica.policy
    return spec


def machinejob(name: str, namespace: str, *, workers: Replica, backoff_limit: int | None = None,
               failure_rules: list[Obj] | None = None) -> Obj:
    """A MachineJob (the shipped `job` machine) with one replica type, Worker."""
    spec: Obj = {"replicaSpecs": {"Worker": replica_spec(workers, "main")}, "runPolicy": {}}
    if backoff_limit is not None:
        spec["runPolicy"]["backoffLimit"] = backoff_limit
    if failure_rules is not None:
        spec["failureRules"] = failure_rules
    return {"apiVersion": MACHINEJOBS.api_version, "kind": "MachineJob",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def tfjob(name: str, namespace: str, *, chief: Replica, workers: Replica) -> Obj:
    """A TFJob with a Chief and Workers, main container `tensorflow` as Kubeflow names it."""
    specs = {"Chief": replica_spec(chief, "tensorflow"),
             "Worker": replica_spec(workers, "tensorflow")}
    return {"apiVersion": TFJOBS.api_version, "kind": "TFJob",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"runPolicy": {}, "tfReplicaSpecs": specs}}


def kept_pending(job: Obj, replica_type: str) -> Obj:
    """The PyTorchJob with an init container on `replica_type`: its pods stay Pending (the
    init container runs) for the replica's run time before the main container starts."""
    template = job["spec"]["pytorchReplicaSpecs"][replica_type]["template"]
    template["spec"]["initContainers"] = [{"name": "wait-for-data", "image": "busybox:1.36"}]
    return job


def with_pending_timeout(job: Obj, seconds: int) -> Obj:
    """The job with runPolicy.pendingTimeoutSeconds set."""
    job["spec"].setdefault("runPolicy", {})["pendingTimeoutSeconds"] = seconds
    return job


def timer_of(job_status: Obj, replica_type: str, index: int) -> str | None:
    """When status says the replica's current state timer started (None: no timer)."""
    since = (job_status.get("replicaTimers") or {}).get(replica_type, {}).get(str(index))
    return None if since is None else str(since)


@dataclass
class StatusWatch:
    """Every status one job had, in order, watched from before it exists: 'at any time' checks
    on what the engine wrote (a status that lived for one write is seen too)."""

    client: KubeClient
    res: Resource
    namespace: str
    name: str
    statuses: list[Obj] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> StatusWatch:
        _, version = self.client.list(self.res, self.namespace)
        self._thread = threading.Thread(target=self._run, args=(version,), daemon=True,
                                        name=f"status-watch-{self.namespace}/{self.name}")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def seen(self) -> list[Obj]:
        """The statuses seen so far, oldest first."""
        with self._lock:
            return list(self.statuses)

    def timers(self, replica_type: str, index: int) -> list[str | None]:
        """The replica's timer as it changed from write to write (None: no timer then)."""
        changes: list[str | None] = []
        for seen in self.seen():
            timer = timer_of(seen, replica_type, index)
            if not changes or changes[-1] != timer:
                changes.append(timer)
        return changes

    def _run(self, version: str) -> None:
        while not self._stop.is_set():
            try:
                for event in self.client.watch(self.res, self.namespace,
                                               resource_version=version, timeout_seconds=1):
                    obj = event["object"]
                    version = obj["metadata"].get("resourceVersion") or version
                    if event["type"] in ("ADDED", "MODIFIED") and (
                        obj["metadata"]["name"] == self.name
                    ):
                        with self._lock:
                            self.statuses.append(obj.get("status") or {})
            except ApiError as exc:
                self.errors.append(f"job watch failed: {exc}")
                return


@contextlib.contextmanager
def watching_status(client: KubeClient, res: Resource, namespace: str, name: str
                    ) -> Iterator[StatusWatch]:
    """A `StatusWatch` of one job for the length of the block."""
    watch = StatusWatch(client, res, namespace, name).start()
    try:
        yield watch
    finally:
        watch.stop()
    assert not watch.errors, f"the job watch missed events: {watch.errors}"
