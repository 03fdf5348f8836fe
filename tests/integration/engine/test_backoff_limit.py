"""runPolicy.backoffLimit: restarts beyond it fail the job with reason BackoffLimitExceeded."""

from __future__ import annotations

from engine.kube.client import KubeClient
from tests.integration.engine.helpers import (
    PYTORCHJOBS,
    Replica,
    condition,
    count_events,
    job_events,
    job_path,
    pytorchjob,
    status,
    stored,
    wait_for_phase,
    wait_until,
    watching_pods,
)


def test_always_killed_worker_exceeds_the_limit(client: KubeClient, ns: str) -> None:
    """worker-0 always exits 137, backoffLimit 2 -> restarts 3 (limit + 1), 3 pods, Failed."""
    job = pytorchjob("train", ns, workers=Replica(codes="137", policy="ExitCode"),
                     backoff_limit=2)
    with watching_pods(client, ns) as pods:
        client.create(PYTORCHJOBS, job, ns)
        job = wait_for_phase(client, ns, "train", "Failed")
        wait_until(lambda: pods.creations() == {"Worker-0": 3}, what="three pods of Worker-0")

    assert status(job).get("restarts", 0) == 3
    # Restarting while each of the first two restarts recreates the pod; the third
    # goes over the limit.
    assert job_path(job) == ["Created", "Running", "Restarting", "Running", "Restarting",
                             "Running", "Failing", "Failed"]
    failed = condition(job, "Failed")
    assert failed is not None
    assert (failed["status"], failed["reason"]) == ("True", "BackoffLimitExceeded")
    assert "backoff limit (2)" in failed["message"]
    events = job_events(client, job)
    assert count_events(events, "ExitedWithCode") == 3
    assert count_events(events, "PyTorchJobRestarting") == 3
    assert count_events(events, "Restarted") == 2
    assert events[-1]["reason"] == "BackoffLimitExceeded"
    assert count_events(events, "PyTorchJobFailed") == 0  # the ending is said once


def test_limit_0_fails_at_the_first_restart(client: KubeClient, ns: str) -> None:
    job = pytorchjob("train", ns, workers=Replica(codes="137,0", policy="ExitCode"),
                     backoff_limit=0)
    with watching_pods(client, ns) as pods:
        client.create(PYTORCHJOBS, job, ns)
        job = wait_for_phase(client, ns, "train", "Failed")
    assert pods.creations() == {"Worker-0": 1}
    assert status(job).get("restarts", 0) == 1
    failed = condition(job, "Failed")
    assert failed is not None and failed["reason"] == "BackoffLimitExceeded"


def test_restarts_within_the_limit_do_not_fail(client: KubeClient, ns: str) -> None:
    """Two workers each killed once, backoffLimit 2 -> 2 restarts and Succeeded."""
    job = pytorchjob("train", ns, workers=Replica(2, codes="137,0", policy="ExitCode"),
                     backoff_limit=2)
    client.create(PYTORCHJOBS, job, ns)

    job = wait_for_phase(client, ns, "train", "Succeeded")
    assert status(job).get("restarts", 0) == 2
    assert {i: r[0] for i, r in stored(job)["restarts"]["Worker"].items()} == {"0": 1, "1": 1}
