"""OnFailure, Always and Never, each on a single worker, as the machine's comment says."""

from __future__ import annotations

from engine.kube.client import KubeClient
from tests.integration.engine.helpers import (
    PYTORCHJOBS,
    Replica,
    condition,
    count_events,
    job_events,
    pods_of,
    pytorchjob,
    status,
    wait_for_phase,
    watching_pods,
)


def test_on_failure_restarts_on_exit_1_in_place(client: KubeClient, ns: str) -> None:
    """worker-0 exits 1, then 0 -> the kubelet restarts it in the same pod: one restart
    counted from its restartCount, one pod, Succeeded."""
    job = pytorchjob("train", ns, workers=Replica(codes="1,0", policy="OnFailure"))
    with watching_pods(client, ns) as pods:
        client.create(PYTORCHJOBS, job, ns)
        job = wait_for_phase(client, ns, "train", "Succeeded")
    assert pods.creations() == {"Worker-0": 1}

    assert status(job).get("restarts", 0) == 1
    [pod] = pods_of(client, ns, "train")
    assert pod["spec"]["restartPolicy"] == "OnFailure"
    [main] = pod["status"]["containerStatuses"]
    assert (main["restartCount"], main["lastState"]["terminated"]["exitCode"]) == (1, 1)
    # Said as Kubeflow's training operator says it: the exit, then the job restarting.
    said = [(e["type"], e["reason"], e["message"]) for e in job_events(client, job)
            if e["reason"] in ("ExitedWithCode", "PyTorchJobRestarting")]
    assert said == [
        ("Normal", "ExitedWithCode", f"Pod: {ns}.{pod['metadata']['name']} exited with code 1"),
        ("Warning", "PyTorchJobRestarting",
         "job train is restarting because Worker replica(s) failed."),
        ("Normal", "ExitedWithCode", f"Pod: {ns}.{pod['metadata']['name']} exited with code 0"),
    ]


def test_on_failure_is_the_default(client: KubeClient, ns: str) -> None:
    """No restartPolicy on the replica: the machine's default (OnFailure) restarts exit 2."""
    job = pytorchjob("train", ns, workers=Replica(codes="2,0"))
    client.create(PYTORCHJOBS, job, ns)

    job = wait_for_phase(client, ns, "train", "Succeeded")
    assert status(job).get("restarts", 0) == 1


def test_always_restarts_in_place_even_after_exit_0_until_the_backoff_limit(
    client: KubeClient, ns: str
) -> None:
    """worker-0 always exits 0, policy Always, backoffLimit 2 -> 3 restarts in one pod, Failed."""
    job = pytorchjob("train", ns, workers=Replica(codes="0", policy="Always"), backoff_limit=2)
    with watching_pods(client, ns) as pods:
        client.create(PYTORCHJOBS, job, ns)
        job = wait_for_phase(client, ns, "train", "Failed")
    assert pods.creations() == {"Worker-0": 1}

    assert status(job).get("restarts", 0) == 3
    failed = condition(job, "Failed")
    assert failed is not None and failed["reason"] == "BackoffLimitExceeded"
    assert "Last failure: Worker-0 (exit code 0, Completed" in failed["message"]
    events = job_events(client, job)
    assert count_events(events, "ExitedWithCode") == 3
    assert count_events(events, "PyTorchJobRestarting") == 3
    assert {e["message"] for e in events if e["reason"] == "ExitedWithCode"} == {
        f"Pod: {ns}.train-worker-0 exited with code 0"}


def test_never_fails_on_the_first_non_zero_exit(client: KubeClient, ns: str) -> None:
    """worker-0 exits 137 (retryable under ExitCode), policy Never -> Failed, one pod."""
    job = pytorchjob("train", ns, workers=Replica(codes="137,0", policy="Never"))
    with watching_pods(client, ns) as pods:
        client.create(PYTORCHJOBS, job, ns)
        job = wait_for_phase(client, ns, "train", "Failed")
    assert pods.creations() == {"Worker-0": 1}

    assert status(job).get("restarts", 0) == 0
    failed = condition(job, "Failed")
    assert failed is not None and failed["reason"] == "PyTorchJobFailed"
    events = job_events(client, job)
    [event] = [e for e in events if e["reason"] == "ExitedWithCode"]
    assert event["type"] == "Normal"
    assert event["message"] == (
        f"Pod: {ns}.train-worker-0 exited with code 137; restart policy Never does not "
        "retry it (exit code 137, Error).")
    assert count_events(events, "PyTorchJobRestarting") == 0


def test_never_with_exit_0_succeeds(client: KubeClient, ns: str) -> None:
    client.create(PYTORCHJOBS, pytorchjob("train", ns, workers=Replica(policy="Never")), ns)

    job = wait_for_phase(client, ns, "train", "Succeeded")
    assert status(job).get("restarts", 0) == 0
