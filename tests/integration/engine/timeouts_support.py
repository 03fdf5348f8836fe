"""Builders and watches for the integration tests of state timeouts and Kubeflow labels: a TFJob
beside helpers' PyTorchJob, a replica kept Pending on the simulated node, and a view of a watch
log that keeps every status one job had.

A replica stays Pending while an init container runs: the simulated node runs it for the
pod's `run-seconds` before the main container starts, exactly as a kubelet would.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.record import read_record
from engine.kube.client import KubeClient
from engine.kube.resources import Resource
from tests.integration.engine.helpers import Obj, Replica, replica_spec
from tests.integration.engine.machinejobs import WatchLog, recording
from tests.kinds import TFJOBS


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
    return read_record(job_status).replica_timers.get(ReplicaId(replica_type, index))


@dataclass
class StatusWatch:
    """Every status one job had, in order, from a log of its resource watched from before the
    job exists: 'at any time' checks on what the engine wrote (a status that lived for one
    write is seen too)."""

    log: WatchLog
    name: str

    def seen(self) -> list[Obj]:
        """The statuses seen so far, oldest first."""
        return [obj.get("status") or {} for kind, obj in self.log.snapshot()
                if kind != "DELETED" and obj["metadata"]["name"] == self.name]

    def through(self, job: Obj) -> list[Obj]:
        """The statuses seen once the log holds everything up to `job` as read (its
        resourceVersion), oldest first; call it inside the `watching_status` block."""
        self.log.through(job["metadata"]["resourceVersion"])
        return self.seen()

    def timers(self, replica_type: str, index: int) -> list[str | None]:
        """The replica's timer as it changed from write to write (None: no timer then)."""
        changes: list[str | None] = []
        for seen in self.seen():
            timer = timer_of(seen, replica_type, index)
            if not changes or changes[-1] != timer:
                changes.append(timer)
        return changes


@contextlib.contextmanager
def watching_status(client: KubeClient, res: Resource, namespace: str, name: str
                    ) -> Iterator[StatusWatch]:
    """A `StatusWatch` of one job for the length of the block."""
    with recording(client, res, namespace) as log:
        yield StatusWatch(log, name)
