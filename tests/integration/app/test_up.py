"""`jobmachine up` with a data dir: stopped mid-run and started again, every job resumes.

Status is the write-ahead log, so a second start reads each job's state back
and goes on: restarts are counted exactly once, and at no moment does a
replica index have two pods (pods are watched through both runs).
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from engine.app.up import LocalCluster, UpOptions, running_local_cluster
from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.record import read_record
from engine.controller.runtime.projections import project_pod
from engine.kube.cache import Cache
from engine.kube.client import KubeClient
from engine.kube.informer import Informer
from engine.kube.resources import EVENTS, PODS
from engine.settings import EngineSettings
from tests.integration.app.support import PYTORCHJOBS, job_status, wait_until, workers_job

pytestmark = pytest.mark.slow

JOB = "resumes"
WORKERS = 2
Replica = tuple[str, str]


class PodLedger:
    """Every pod of the job seen through watches: which uids each replica index had, and
    whether two of them were ever alive at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: dict[Replica, set[str]] = defaultdict(set)
        self.uids: dict[Replica, list[str]] = defaultdict(list)
        self.names: dict[Replica, set[str]] = defaultdict(set)
        self.overlaps: list[str] = []

    def new_run(self) -> None:
        """A fresh watch lists what exists now: forget what the previous one thought alive."""
        with self._lock:
            self._live.clear()

    def handle(self, event: str, old: Mapping[str, Any] | None,
               new: Mapping[str, Any] | None) -> None:
        with self._lock:
            if old is not None and (new is None or _uid(old) != _uid(new)):
                self._live[_replica(old)].discard(_uid(old))
            if new is None or event == "DELETED":
                return
            replica, uid = _replica(new), _uid(new)
            if uid not in self.uids[replica]:
                self.uids[replica].append(uid)
            self.names[replica].add(new["metadata"]["name"])
            self._live[replica].add(uid)
            if len(self._live[replica]) > 1:
                self.overlaps.append(f"{replica}: {sorted(self._live[replica])}")


def _uid(pod: Mapping[str, Any]) -> str:
    return str(pod["metadata"]["uid"])


def _replica(pod: Mapping[str, Any]) -> Replica:
    labels = pod["metadata"].get("labels") or {}
    return labels["jobmachine.dev/replica-type"], labels["jobmachine.dev/replica-index"]


@contextmanager
def watched_cluster(data_dir: Path, ledger: PodLedger) -> Iterator[LocalCluster]:
    options = UpOptions(data_dir=data_dir, port=0, node_mode="simulate",
                        settings=EngineSettings(replica_backoff_base_s=0.5))
    with running_local_cluster(options) as cluster:
        ledger.new_run()
        informer = Informer(cluster.client, PODS, namespace="default", cache=Cache(project_pod),
                            handler=ledger.handle, label_selector=f"jobmachine.dev/job-name={JOB}")
        informer.start()
        try:
            assert informer.wait_synced(30)
            yield cluster
        finally:
            informer.stop()


def _workers_running(client: KubeClient) -> int:
    pods, _ = client.list(PODS, "default", label_selector=f"jobmachine.dev/job-name={JOB}")
    return sum(1 for pod in pods if (pod.get("status") or {}).get("phase") == "Running")


@pytest.mark.parametrize(
    "stop_when",
    ["workers running", "a restart recorded"],
)
def test_a_job_resumes_where_it_was_after_up_restarts(tmp_path: Path, stop_when: str) -> None:
    ledger = PodLedger()
    # Each worker runs 2 s, is killed (137) once, then succeeds: 2 restarts in all.
    job = workers_job(JOB, workers=WORKERS, annotations={
        "sim.jobmachine.dev/exit-codes": "137,0", "sim.jobmachine.dev/run-seconds": "2",
    })

    with watched_cluster(tmp_path, ledger) as cluster:
        cluster.client.create(PYTORCHJOBS, job, "default")
        if stop_when == "workers running":
            wait_until(lambda: _workers_running(cluster.client), lambda n: n == WORKERS,
                       what="both workers running")
        else:
            wait_until(lambda: job_status(cluster.client, JOB),
                       lambda s: s.get("restarts", 0) >= 1, what="a restart in the status")
        stopped_at = job_status(cluster.client, JOB)
    assert stopped_at.get("phase") not in ("Succeeded", "Failed"), stopped_at

    with watched_cluster(tmp_path, ledger) as cluster:
        status = wait_until(lambda: job_status(cluster.client, JOB),
                            lambda s: s.get("phase") in ("Succeeded", "Failed"),
                            what="the job to finish")
        assert cluster.engine.recorder.flush(10)
        events, _ = cluster.client.list(EVENTS, "default",
                                        field_selector=f"involvedObject.name={JOB}")

    assert status["phase"] == "Succeeded", status
    assert status.get("restarts", 0) == WORKERS, status
    record = read_record(status)
    assert record.replica_states == {ReplicaId("Worker", i): "Succeeded" for i in range(WORKERS)}
    restarts = [(source, reason, count)
                for (level, source, target, reason), count in record.transition_counts.items()
                if level == "replica" and target == "Restarting"]
    assert restarts == [("Running", "PyTorchJobRestarting", WORKERS)], status
    assert sum(e.get("count", 1) for e in events
               if e["reason"] == "PyTorchJobRestarting") == WORKERS
    assert sum(e.get("count", 1) for e in events if e["reason"] == "ExitedWithCode"
               and e["message"].endswith("exited with code 137")) == WORKERS
    assert not ledger.overlaps
    assert ledger.names == {("Worker", str(i)): {f"{JOB}-worker-{i}"} for i in range(WORKERS)}
    assert {replica: len(uids) for replica, uids in ledger.uids.items()} == \
        {("Worker", str(i)): 2 for i in range(WORKERS)}
