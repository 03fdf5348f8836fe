"""A RestartJob failure rule: every replica starts again in a new attempt, bounded by backoffLimit.

The pods of the old attempt are deleted before any pod of the new one is created (never
two pods for one index), the new pods carry `jobmachine.dev/restart-attempt`, and the
whole-job restart counts once against runPolicy.backoffLimit.
"""

from __future__ import annotations

from engine.kube.client import KubeClient
from engine.kube.resources import PODS
from tests.integration.engine.helpers import (
    JOB_NAME,
    PYTORCHJOBS,
    REPLICA_INDEX,
    REPLICA_TYPE,
    Replica,
    condition,
    count_events,
    job_events,
    job_path,
    pods_of,
    pytorchjob,
    sim_pod,
    status,
    wait_for_phase,
    watching_pods,
    with_rules,
)

ATTEMPT = "jobmachine.dev/restart-attempt"
RESTART_ON_3 = {"action": "RestartJob", "replicaTypes": ["Worker"],
                "onExitCodes": {"operator": "In", "values": [3]}}


def test_restart_job_recreates_every_replica_in_a_new_attempt(
    client: KubeClient, ns: str
) -> None:
    """Worker-0's first run exits 3 while the Master runs -> both pods deleted, both created
    again as attempt 1, which succeeds; one restart counted."""
    job = with_rules(
        pytorchjob("whole", ns, master=Replica(run_s=2.5),
                   workers=Replica(codes="3,0", policy="Never"), backoff_limit=3),
        RESTART_ON_3,
    )
    with watching_pods(client, ns) as pods:
        client.create(PYTORCHJOBS, job, ns)
        done = wait_for_phase(client, ns, "whole", "Succeeded", timeout=30)
        assert pods.creations() == {"Master-0": 2, "Worker-0": 2}
        assert max(pods.most_at_once.values()) == 1
        assert pods.errors == []

    assert (status(done)["restartAttempt"], status(done)["restarts"]) == (1, 1)
    path = job_path(done)
    # RestartingAll: every replica in a new attempt (Restarting is one replica's restart).
    assert path[:3] == ["Created", "Running", "RestartingAll"]
    assert path[3:] == ["Created", "Running", "Succeeding", "Succeeded"]
    # Running came back and replaced Restarting, as Kubeflow's conditions do.
    assert condition(done, "Restarting") is None
    running = condition(done, "Running")
    assert running is not None and running["status"] == "False"
    assert {p["metadata"]["labels"][ATTEMPT] for p in pods_of(client, ns, "whole")} == {"1"}
    events = job_events(client, done)
    assert count_events(events, "RestartJob") == 1  # the replica's
    assert count_events(events, "PyTorchJobRestarting") == 1  # the job's, named by its state
    assert count_events(events, "PyTorchJobRestarted") == 1


def test_restart_job_is_bounded_by_the_backoff_limit(client: KubeClient, ns: str) -> None:
    """Worker-0 always exits 3, backoffLimit 1: one whole-job restart is allowed, the second
    fails the job with BackoffLimitExceeded before it starts (restarts stay 1): no third attempt."""
    job = with_rules(
        pytorchjob("again", ns, workers=Replica(codes="3", policy="Never"), backoff_limit=1),
        RESTART_ON_3,
    )
    with watching_pods(client, ns) as pods:
        client.create(PYTORCHJOBS, job, ns)
        failed = wait_for_phase(client, ns, "again", "Failed", timeout=30)
        assert pods.creations() == {"Worker-0": 2}

    reason = condition(failed, "Failed")
    assert reason is not None and (reason["status"], reason["reason"]) == (
        "True", "BackoffLimitExceeded")
    assert condition(failed, "FailureTarget") is None  # Failed took it over
    assert (status(failed)["restarts"], status(failed)["restartAttempt"]) == (1, 1)
    assert job_path(failed)[-2:] == ["Failing", "Failed"]


def test_a_pod_of_another_attempt_is_deleted_not_observed(client: KubeClient, ns: str) -> None:
    """An orphan train-worker-0 of restart attempt 3 (about to fail with exit 1) is adopted by
    the job at attempt 0: it is deleted without its outcome counting, and the job's own pod
    of attempt 0 succeeds."""
    labels = {JOB_NAME: "train", REPLICA_TYPE: "Worker", REPLICA_INDEX: "0", ATTEMPT: "3"}
    orphan = client.create(PODS, sim_pod("train-worker-0", ns, labels=labels, codes="1",
                                         run_s=1.0), ns)
    with watching_pods(client, ns) as pods:
        client.create(PYTORCHJOBS, pytorchjob("train", ns,
                                              workers=Replica(policy="Never")), ns)
        done = wait_for_phase(client, ns, "train", "Succeeded")
        assert pods.creations() == {"Worker-0": 2}  # the orphan, then the job's own
        assert max(pods.most_at_once.values()) == 1

    assert (status(done).get("restarts", 0), status(done).get("restartAttempt", 0)) == (0, 0)
    [pod] = pods_of(client, ns, "train")
    assert pod["metadata"]["uid"] != orphan["metadata"]["uid"]
    assert pod["metadata"]["labels"][ATTEMPT] == "0"
