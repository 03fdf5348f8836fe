"""Three `jobmachine run --shards 6` processes share the jobs out; one is killed with -9.

What a user of sharded engines relies on: every job ends as it should (none lost, restarts
counted once, never two pods for one replica index), a shard changes hands only once its
holder released it or its lease expired (so no job is worked on by two replicas at once),
every job event comes from the replica that held the job's shard at the time, the killed
replica's shards go to the others, and replicas that stop leave no lease held behind.
Leases last 3 s here (renew deadline 2 s, rounds every 0.5 s) to keep the test short.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from engine.controller.coordination.shard_leases import ROLE_LABEL, SHARD_LABEL
from engine.controller.coordination.shards import shard_of
from engine.kube.client import KubeClient
from engine.kube.errors import ApiError
from engine.kube.resources import EVENTS, LEASES
from engine.kube.timestamps import parse_time
from tests.integration.engine.helpers import (
    JOB_NAME,
    Replica,
    get_job,
    new_namespace,
    pytorchjob,
    replica_key,
    status,
    stored,
    wait_for,
    watching_pods,
)
from tests.kinds import PYTORCHJOBS

Obj = dict[str, Any]

SHARDS = 6
LEASE_S = 3.0
ENVIRONMENT = {
    "JOBMACHINE_LEASE_DURATION_S": str(LEASE_S), "JOBMACHINE_RENEW_DEADLINE_S": "2",
    "JOBMACHINE_RETRY_PERIOD_S": "0.5", "JOBMACHINE_REPLICA_BACKOFF_BASE_S": "0.05",
    "JOBMACHINE_REPLICA_BACKOFF_CAP_S": "0.5",
}
SLOW_S = 120.0
"""Three engine processes on two cores: waits are generous, nothing is timed."""


@pytest.fixture(scope="module")
def client(engineless: RunningApiServer) -> Iterator[KubeClient]:
    kube = KubeClient.from_kubeconfig(engineless.kubeconfig)
    yield kube
    kube.close()


def seconds(stamp: str) -> float:
    """A metav1.Time or MicroTime as seconds since the epoch."""
    return parse_time(stamp).timestamp()


@dataclass
class LeaseLog:
    """Every version of every lease in one namespace, in order, watched from the start."""

    client: KubeClient
    namespace: str
    versions: list[Obj] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> LeaseLog:
        _, version = self.client.list(LEASES, self.namespace)
        self._thread = threading.Thread(target=self._run, args=(version,), daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def _run(self, version: str) -> None:
        while not self._stop.is_set():
            try:
                for event in self.client.watch(LEASES, self.namespace, resource_version=version,
                                               timeout_seconds=1):
                    version = event["object"]["metadata"]["resourceVersion"]
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self.versions.append(event["object"])
            except ApiError as exc:
                self.errors.append(str(exc))
                return

    def tenures(self) -> dict[int, list[tuple[str, float, float]]]:
        """Per shard, each holder's (identity, from, until): until its release, else until its
        last renewal plus the lease duration (when the others may take it over). Fails if a
        holder took a shard before the previous tenure ended."""
        found: dict[int, list[tuple[str, float, float]]] = {}
        for lease in self.versions:
            labels = lease["metadata"].get("labels") or {}
            if labels.get(ROLE_LABEL) != "shard":
                continue
            spec, shard = lease["spec"], int(labels[SHARD_LABEL])
            tenures = found.setdefault(shard, [])
            holder = spec.get("holderIdentity") or ""
            current = tenures[-1] if tenures else None
            if current is not None and current[0] == holder:
                tenures[-1] = (holder, current[1],
                               seconds(spec["renewTime"]) + spec["leaseDurationSeconds"])
            elif not holder:
                if current is not None and current[0]:
                    tenures[-1] = (current[0], current[1], seconds(spec["renewTime"]))
                    tenures.append(("", seconds(spec["renewTime"]), seconds(spec["renewTime"])))
            else:
                taken = seconds(spec["acquireTime"])
                if current is not None:
                    assert taken >= current[2] - 0.001, (
                        f"shard {shard} taken by {holder} at {taken} while {current[0]!r} "
                        f"held it until {current[2]}")
                tenures.append((holder, taken,
                                seconds(spec["renewTime"]) + spec["leaseDurationSeconds"]))
        return found


@dataclass
class Replicas:
    """The engine processes of one test: started one after the other, each known by the
    identity its membership lease shows."""

    server: RunningApiServer
    client: KubeClient
    jobs_namespace: str
    lease_namespace: str
    logs: Path
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def start(self) -> str:
        before = set(self.members())
        log = (self.logs / f"engine-{len(self.processes)}.log").open("wb")
        process = subprocess.Popen(
            [sys.executable, "-m", "engine.cli", "run", "--kubeconfig",
             str(self.server.kubeconfig), "--shards", str(SHARDS), "--namespace",
             self.jobs_namespace, "--lease-namespace", self.lease_namespace, "--workers", "2"],
            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **ENVIRONMENT},
        )
        log.close()
        new = wait_for(lambda: set(self.members()) - before, lambda found: len(found) == 1,
                       what="the new replica's membership lease", timeout=SLOW_S)
        identity = new.pop()
        self.processes[identity] = process
        return identity

    def members(self) -> list[str]:
        items, _ = self.client.list(LEASES, self.lease_namespace,
                                    label_selector=f"{ROLE_LABEL}=member")
        return [item["spec"]["holderIdentity"] for item in items]

    def holders(self) -> Counter[str]:
        items, _ = self.client.list(LEASES, self.lease_namespace,
                                    label_selector=f"{ROLE_LABEL}=shard")
        return Counter(item["spec"].get("holderIdentity") or "" for item in items)

    def stop_all(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture
def replicas(engineless: RunningApiServer, client: KubeClient,
             tmp_path: Path) -> Iterator[Replicas]:
    found = Replicas(engineless, client, new_namespace(client), new_namespace(client), tmp_path)
    yield found
    found.stop_all()


def job_and_replica(pod: Obj) -> str:
    return f"{pod['metadata']['labels'][JOB_NAME]}/{replica_key(pod)}"


def submit(client: KubeClient, ns: str, names: range) -> None:
    """Jobs of two workers; every third one's workers are killed (137) once, then succeed."""
    for i in names:
        codes = "137,0" if i % 3 == 0 else "0"
        workers = Replica(2, codes=codes, policy="ExitCode", run_s=1.0)
        client.create(PYTORCHJOBS, pytorchjob(f"job-{i}", ns, workers=workers), ns)


def test_sharded_engines_share_jobs_and_survive_a_kill(
    replicas: Replicas, client: KubeClient
) -> None:
    ns = replicas.jobs_namespace
    with LeaseLog(client, replicas.lease_namespace) as leases, \
            watching_pods(client, ns, key=job_and_replica) as pods:
        first = replicas.start()
        wait_for(replicas.holders, lambda held: held[first] == SHARDS,
                 what="the only replica to take every shard", timeout=SLOW_S)
        second, third = replicas.start(), replicas.start()
        wait_for(replicas.holders,
                 lambda held: [held[r] for r in (first, second, third)] == [2, 2, 2],
                 what="two shards each", timeout=SLOW_S)

        submit(client, ns, range(0, 30))
        wait_for(lambda: sum(bool(status(get_job(client, ns, f"job-{i}")).get("phase"))
                             for i in range(30)),
                 lambda begun: begun >= 10, what="jobs to begin", timeout=SLOW_S)
        replicas.processes[first].kill()
        killed_at = time.time()
        submit(client, ns, range(30, 60))

        wait_for(replicas.holders,
                 lambda held: held[first] == 0 and held[second] + held[third] == SHARDS,
                 what="the killed replica's shards to move", timeout=SLOW_S)
        phases = wait_for(
            lambda: Counter(status(get_job(client, ns, f"job-{i}")).get("phase")
                            for i in range(60)),
            lambda counts: counts["Succeeded"] == 60, what="every job to succeed",
            timeout=SLOW_S)
        jobs = [get_job(client, ns, f"job-{i}") for i in range(60)]
        wait_for(replicas.members, lambda members: sorted(members) == sorted([second, third]),
                 what="the killed replica's membership lease to be collected", timeout=SLOW_S)
        replicas.stop_all()

    assert phases == {"Succeeded": 60}
    for i, job in enumerate(jobs):
        assert status(job).get("restarts", 0) == (2 if i % 3 == 0 else 0), f"job-{i}"
        assert stored(job)["replicas"] == {"Worker": {"Succeeded": "0-1"}}
    assert set(pods.most_at_once.values()) == {1}, "two pods for one replica index at once"
    assert len(pods.most_at_once) == 120

    tenures = leases.tenures()
    assert sorted(tenures) == list(range(SHARDS))
    after_first = [later[0] for shard in tenures.values()
                   for earlier, later in itertools.pairwise(shard)
                   if earlier[0] == first and earlier[2] > killed_at]
    assert len(after_first) == 2, "the killed replica's two shards did not move once each"
    assert set(after_first) <= {second, third}

    events, _ = client.list(EVENTS, ns)
    job_events = [e for e in events if e["involvedObject"]["kind"] == "PyTorchJob"]
    assert len(job_events) >= 60 * 3
    for event in job_events:
        shard = shard_of(ns, event["involvedObject"]["name"], SHARDS)
        instance = event["reportingInstance"]
        for stamp in (event["firstTimestamp"], event["lastTimestamp"]):
            at = seconds(stamp)
            assert any(holder == instance and since - 1 <= at <= until + 1
                       for holder, since, until in tenures[shard]), (
                f"{event['reason']} for {event['involvedObject']['name']} (shard {shard}) "
                f"from {instance} at {stamp}, outside its tenures {tenures[shard]}")

    assert not leases.errors
    assert set(replicas.holders()) == {""}, "a replica that stopped kept a shard"
    assert replicas.members() == [], "a membership lease was left behind"
