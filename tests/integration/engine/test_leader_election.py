"""Two engines on one cluster with leader election: only the holder of the Lease acts.

Short timings (lease 1.5 s, renew deadline 1 s, retry 0.2 s) keep the test quick. The
standby watches (its caches are warm) but never reconciles nor writes; when the leader
stops, it releases the Lease and the standby takes over and finishes the job.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import pytest

from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from engine.controller.coordination.leader import LeaderElector
from engine.kube.client import KubeClient
from engine.kube.resources import LEASES
from tests.integration.engine.helpers import (
    FAST,
    PYTORCHJOBS,
    EngineRun,
    Replica,
    pytorchjob,
    reconciles_of,
    start_engine,
    status,
    wait_for_phase,
    wait_for_replica,
    wait_until,
    watching_pods,
)


@pytest.fixture(scope="module")
def client(engineless: RunningApiServer) -> Iterator[KubeClient]:
    kube = KubeClient.from_kubeconfig(engineless.kubeconfig)
    yield kube
    kube.close()


@pytest.fixture
def closing() -> Iterator[contextlib.ExitStack]:
    """Closes the electors' clients at the end of the test."""
    with contextlib.ExitStack() as stack:
        yield stack


def candidate(
    server: RunningApiServer, ns: str, identity: str, closing: contextlib.ExitStack
) -> tuple[EngineRun, LeaderElector]:
    """An engine campaigning for the test's Lease; the elector has a client of its own, so
    the engine's client counts the engine's requests alone."""
    lease_client = KubeClient.from_kubeconfig(server.kubeconfig)
    closing.callback(lease_client.close)
    elector = LeaderElector(
        lease_client, namespace=ns, name="jobmachine-leader", identity=identity,
        lease_duration_s=1.5, renew_deadline_s=1, retry_period_s=0.2,
    )
    run = start_engine(KubeClient.from_kubeconfig(server.kubeconfig), FAST, elector=elector)
    closing.callback(run.stop)
    return run, elector


def test_only_the_leader_acts_and_the_standby_takes_over(
    engineless: RunningApiServer, client: KubeClient, ns: str, closing: contextlib.ExitStack
) -> None:
    """engine-a leads, engine-b stands by; a job runs under a; a stops -> b finishes the job."""
    first, first_elector = candidate(engineless, ns, "engine-a", closing)
    wait_until(lambda: first_elector.is_leader, what="engine-a leads")
    second, second_elector = candidate(engineless, ns, "engine-b", closing)
    wait_until(lambda: second.engine.synced, what="engine-b's caches synced")
    time.sleep(0.5)  # a few of engine-b's campaign rounds, all lost
    standby_requests = second.client.request_count

    with watching_pods(client, ns) as pods:
        client.create(PYTORCHJOBS, pytorchjob("train", ns, workers=Replica(2, run_s=2.0)), ns)
        wait_for_replica(client, ns, "train", "Worker-1", "Running")
        assert reconciles_of(first) > 0
        assert reconciles_of(second) == 0
        assert second.client.request_count == standby_requests
        assert not second_elector.is_leader
        assert client.get(LEASES, "jobmachine-leader", ns)["spec"]["holderIdentity"] == "engine-a"

        first.stop()
        wait_until(lambda: second_elector.is_leader, what="engine-b takes over")
        job = wait_for_phase(client, ns, "train", "Succeeded")
    assert reconciles_of(second) > 0
    assert client.get(LEASES, "jobmachine-leader", ns)["spec"]["holderIdentity"] == "engine-b"
    assert pods.creations() == {"Worker-0": 1, "Worker-1": 1}
    assert status(job).get("restarts", 0) == 0
