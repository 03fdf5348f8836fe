"""spec.failureRules: the first rule matching a failed pod decides, before the restart policy.

Also the peers' classic bugs as regression tests: the exit code comes from the
main container even with a sidecar, and an ignored failure is recreated after a
back-off without counting a restart.
"""

from __future__ import annotations

from engine.controller.reconcile.children import ReplicaId
from engine.kube.client import KubeClient
from tests.integration.engine.helpers import (
    PYTORCHJOBS,
    Replica,
    condition,
    count_events,
    job_events,
    pytorchjob,
    record,
    replica_path,
    status,
    wait_for_phase,
    wait_until,
    watching_pods,
    with_rules,
)


def test_fail_job_on_an_exit_code_fails_at_once_without_restarting(
    client: KubeClient, ns: str
) -> None:
    """worker-0 exits 42 under OnFailure, a rule says FailJob for 42 -> Failed, 1 pod."""
    job = with_rules(
        pytorchjob("fatal", ns, workers=Replica(codes="42", policy="OnFailure")),
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}},
    )
    with watching_pods(client, ns) as pods:
        client.create(PYTORCHJOBS, job, ns)
        failed = wait_for_phase(client, ns, "fatal", "Failed")
        assert pods.creations() == {"Worker-0": 1}

    reason = condition(failed, "Failed")
    assert reason is not None and reason["reason"] == "FailurePolicy"
    assert status(failed).get("restarts", 0) == 0
    assert replica_path(failed, "Worker-0")[-1] == "FailedByRule"
    wait_until(lambda: count_events(job_events(client, failed), "FailurePolicy") == 2,
               what="two FailurePolicy events (the replica's and the job's)")


def test_an_ignored_failure_is_recreated_without_counting_but_with_back_off(
    client: KubeClient, ns: str
) -> None:
    """Evicted-like failures (exit 143) ignored, backoffLimit 0: the job still succeeds."""
    job = with_rules(
        pytorchjob("preempted", ns, workers=Replica(codes="143,143,0", policy="Never"),
                   backoff_limit=0),
        {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [143]}},
    )
    with watching_pods(client, ns) as pods:
        client.create(PYTORCHJOBS, job, ns)
        done = wait_for_phase(client, ns, "preempted", "Succeeded")
        wait_until(lambda: pods.creations() == {"Worker-0": 3}, what="three pods of Worker-0")

    assert status(done).get("restarts", 0) == 0
    wait_until(lambda: count_events(job_events(client, done), "PodFailureIgnored") == 2,
               what="two PodFailureIgnored events")
    # Two failed attempts in a row were recorded for the back-off, then a success reset it.
    assert ReplicaId("Worker", 0) not in record(done).replica_backoff


def test_restart_replica_counts_and_a_rule_can_be_limited_to_one_type(
    client: KubeClient, ns: str
) -> None:
    """The rule names Worker only: the worker's exit 3 restarts (counted) under Never."""
    job = with_rules(
        pytorchjob("selective", ns, master=Replica(run_s=2.0),
                   workers=Replica(codes="3,0", policy="Never")),
        {"action": "RestartReplica", "replicaTypes": ["Worker"],
         "onExitCodes": {"operator": "In", "values": [3]}},
    )
    client.create(PYTORCHJOBS, job, ns)
    done = wait_for_phase(client, ns, "selective", "Succeeded")

    assert status(done).get("restarts", 0) == 1
    assert "Restarting" in replica_path(done, "Worker-0")


def test_a_rule_on_the_termination_reason_matches(client: KubeClient, ns: str) -> None:
    """The simulated container ends with reason Error: a rule on that reason fails the job."""
    job = with_rules(
        pytorchjob("by-reason", ns, workers=Replica(codes="1", policy="OnFailure")),
        {"action": "FailJob", "onReasons": ["Error"]},
    )
    client.create(PYTORCHJOBS, job, ns)
    failed = wait_for_phase(client, ns, "by-reason", "Failed")
    reason = condition(failed, "Failed")
    assert reason is not None and reason["reason"] == "FailurePolicy"


def test_the_exit_code_is_read_from_the_main_container_not_a_sidecar(
    client: KubeClient, ns: str
) -> None:
    """pytorch exits 1 (permanent under ExitCode), the sidecar 137: the job fails, no restart."""
    job = pytorchjob("sidecar", ns, workers=Replica(codes="1", policy="ExitCode"))
    template = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]
    template["spec"]["containers"].insert(0, {"name": "proxy", "image": "envoy:1"})
    template["metadata"]["annotations"]["sim.jobmachine.dev/exit-codes.proxy"] = "137"
    template["metadata"]["annotations"]["sim.jobmachine.dev/exit-codes.pytorch"] = "1"
    client.create(PYTORCHJOBS, job, ns)
    failed = wait_for_phase(client, ns, "sidecar", "Failed")

    assert status(failed).get("restarts", 0) == 0
    reason = condition(failed, "Failed")
    assert reason is not None and reason["reason"] == "PyTorchJobFailed"
