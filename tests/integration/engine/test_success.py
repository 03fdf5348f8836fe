"""A job whose replicas all exit 0: Created -> Running -> Succeeded, one event per state change."""

from __future__ import annotations

from engine.kube.client import KubeClient
from tests.integration.engine.helpers import (
    PYTORCHJOBS,
    RAN_AND_SUCCEEDED,
    TRACKING,
    Replica,
    condition,
    history,
    job_events,
    job_path,
    pods_of,
    pytorchjob,
    replica_path,
    status,
    stored,
    wait_for,
    wait_for_phase,
    wait_until,
)


def test_master_and_two_workers_succeed(client: KubeClient, ns: str) -> None:
    """Workers exit 0 after 0.4 s, the master after 1.5 s -> Created, Running, Succeeded."""
    job = pytorchjob("train", ns, master=Replica(run_s=1.5), workers=Replica(2))
    client.create(PYTORCHJOBS, job, ns)

    job = wait_for_phase(client, ns, "train", "Succeeded")
    done = status(job)
    assert job_path(job) == ["Created", "Running", "Succeeding", "Succeeded"]
    assert replica_path(job, "Master-0") == ["Pending", "Running", "Succeeded"]
    for worker in ("Worker-0", "Worker-1"):
        assert replica_path(job, worker) in RAN_AND_SUCCEEDED
    assert stored(job)["replicas"] == {"Master": {"Succeeded": "0"}, "Worker": {"Succeeded": "0-1"}}
    assert done.get("restarts", 0) == 0
    assert done["startTime"] <= done["completionTime"]
    assert {t: s.get("succeeded", 0) for t, s in done["replicaStatuses"].items()} == {
        "Master": 1, "Worker": 2}
    pods = pods_of(client, ns, "train")
    assert sorted(p["metadata"]["name"] for p in pods) == [
        "train-master-0", "train-worker-0", "train-worker-1"]


def test_conditions_say_running_then_succeeded(client: KubeClient, ns: str) -> None:
    client.create(PYTORCHJOBS, pytorchjob("train", ns, master=Replica(), workers=Replica()), ns)

    job = wait_for_phase(client, ns, "train", "Succeeded")
    succeeded, running = condition(job, "Succeeded"), condition(job, "Running")
    assert succeeded is not None and running is not None
    assert (succeeded["status"], succeeded["reason"]) == ("True", "PyTorchJobSucceeded")
    assert succeeded["message"] == f"PyTorchJob {ns}/train successfully completed."
    assert running["status"] == "False"
    assert condition(job, "Failed") is None
    assert status(job)["conditions"][-1]["type"] == "Succeeded"  # Kubeflow's tools read the last


def test_created_condition_stays_true_as_in_kubeflow(client: KubeClient, ns: str) -> None:
    """Kubeflow keeps `Created` True (reason PyTorchJobCreated) for the job's whole life."""
    client.create(PYTORCHJOBS, pytorchjob("train", ns, master=Replica()), ns)

    job = wait_for_phase(client, ns, "train", "Succeeded")
    created = condition(job, "Created")
    assert created is not None
    assert (created["status"], created["reason"]) == ("True", "PyTorchJobCreated")


def test_one_event_per_state_change_in_order(client: KubeClient, ns: str) -> None:
    job = pytorchjob("train", ns, master=Replica(run_s=1.5), workers=Replica(2))
    client.create(PYTORCHJOBS, job, ns)

    job = wait_for_phase(client, ns, "train", "Succeeded")
    # The engine tells its listeners once its status write returned, which may be after
    # this test read the job.
    wait_until(lambda: any(h["level"] == "job" and h["to"] == "Succeeded"
                           for h in history(job)), what="the end told to the listeners")
    # Every state change but the silent ones: the ending's second phase (Succeeding ->
    # Succeeded), and, as Kubeflow posts no Event then, the job's creation and start.
    silent_job_changes = {(None, "Created"), ("Created", "Running"), ("Succeeding", "Succeeded")}
    changes = [h for h in history(job) if (h["from"], h["to"]) not in silent_job_changes
               if h["level"] == "job" or h["from"] is not None]
    events = wait_for(lambda: job_events(client, job), lambda e: len(e) == len(changes),
                      what="one event per recorded state change")
    assert all(e["type"] == "Normal" and e["count"] == 1 for e in events)
    assert all(e["source"]["component"] == "jobmachine" for e in events)
    job_reasons = [e["reason"] for e in events if e["reason"].startswith("PyTorchJob")]
    # The ending (Succeeding, then Succeeded once settled) is said once; the job's creation
    # and start are said by its conditions only, as Kubeflow's operator does.
    assert job_reasons == ["PyTorchJobSucceeded"]
    assert events[-1]["reason"] == "PyTorchJobSucceeded"
    for replica in ("Master-0", "Worker-0", "Worker-1"):
        pod = f"train-{replica.lower()}"
        story = [(e["reason"], e["message"]) for e in events
                 if e["message"].startswith(replica) or f".{pod} " in e["message"]]
        assert story == [
            ("Started", f"{replica} runs in pod {pod}."),
            ("ExitedWithCode", f"Pod: {ns}.{pod} exited with code 0"),
        ]


def test_finished_pods_lose_their_tracking_finalizer(client: KubeClient, ns: str) -> None:
    """The status holds every outcome, so no pod is kept by the engine (cleanPodPolicy None)."""
    client.create(PYTORCHJOBS, pytorchjob("train", ns, master=Replica(), workers=Replica()), ns)

    wait_for_phase(client, ns, "train", "Succeeded")
    pods = wait_for(
        lambda: pods_of(client, ns, "train"),
        lambda pods: all(TRACKING not in (p["metadata"].get("finalizers") or []) for p in pods),
        what="tracking finalizers removed",
    )
    assert len(pods) == 2
