"""MachineJob's spec.successPolicy: when the job has succeeded, and what happens to the rest.

Unset, every replica must succeed (reason AllReplicasSucceeded); `mode: Any` with a count
or `mode: All` over some types ends the job early (reason SuccessPolicy), and Succeeding
deletes the pods still running (cleanPodPolicy Running, MachineJob's default) before the
job is Succeeded. The API server rejects policies that could never be met.
"""

from __future__ import annotations

import pytest

from engine.kube.client import KubeClient
from engine.kube.errors import Invalid
from engine.kube.resources import PODS
from engine.kube.timestamps import parse_time
from tests.integration.engine.helpers import (
    JOB_NAME,
    RAN_AND_SUCCEEDED,
    Obj,
    Replica,
    condition,
    count_events,
    get_pod,
    job_events,
    job_path,
    pod_names,
    replica_key,
    replica_path,
    sim_pod,
    status,
    stored,
    wait_for,
    wait_until,
    watching_pods,
)
from tests.integration.engine.machinejobs import (
    MACHINEJOBS,
    get_obj,
    history_index,
    machinejob,
    main_state,
    recording,
    wait_for_phase_of,
)


def _rv(obj: Obj) -> int:
    """The object's resourceVersion: the local server counts one sequence for every kind."""
    return int(obj["metadata"]["resourceVersion"])


def _first_succeeded(jobs: list[tuple[str, Obj]]) -> Obj:
    """The first version of the job the server stored with its Succeeded condition True."""
    for _, job in jobs:
        done = condition(job, "Succeeded")
        if done is not None and done["status"] == "True":
            return job
    raise AssertionError("no version of the job was Succeeded")


def _alive_at(pods: list[tuple[str, Obj]], version: int) -> list[Obj]:
    """The pods that existed at resourceVersion `version`, as they were then."""
    alive: dict[str, Obj] = {}
    for kind, pod in pods:
        if _rv(pod) > version:
            break
        uid = pod["metadata"]["uid"]
        if kind == "DELETED":
            alive.pop(uid, None)
        else:
            alive[uid] = pod
    return list(alive.values())


def _never_succeeded(pods: list[tuple[str, Obj]], uid: str) -> bool:
    """Whether no recorded version of that pod shows its main container exited 0."""
    return all((main_state(pod).get("terminated") or {}).get("exitCode") != 0
               for _, pod in pods if pod["metadata"]["uid"] == uid)


def _running_or_deleting(pod: Obj) -> bool:
    """Whether the pod's main container still runs or the pod is being deleted."""
    return "running" in main_state(pod) or bool(pod["metadata"].get("deletionTimestamp"))


def test_without_success_policy_every_replica_must_succeed(client: KubeClient, ns: str) -> None:
    """The Launcher exits 0 after 0.4 s, both Workers after 1.5 s -> Succeeded once all three
    have, with reason AllReplicasSucceeded (SuccessCriteriaMet's, which Succeeded takes over)."""
    job = machinejob("all", ns, {"Launcher": Replica(run_s=0.4),
                                 "Worker": Replica(2, run_s=1.5)})
    with watching_pods(client, ns) as pods:
        client.create(MACHINEJOBS, job, ns)
        done = wait_for_phase_of(client, MACHINEJOBS, ns, "all", "Succeeded")
        assert pods.creations() == {"Launcher-0": 1, "Worker-0": 1, "Worker-1": 1}

    assert job_path(done) == ["Created", "Running", "Succeeding", "Succeeded"]
    succeeding = history_index(done, to="Succeeding")
    for replica in ("Launcher-0", "Worker-0", "Worker-1"):
        assert replica_path(done, replica) in RAN_AND_SUCCEEDED
        assert history_index(done, to="Succeeded", replica=replica) < succeeding
    record = status(done)
    assert stored(done)["replicas"] == {"Launcher": {"Succeeded": "0"},
                                       "Worker": {"Succeeded": "0-1"}}
    assert {t: s.get("succeeded", 0) for t, s in record["replicaStatuses"].items()} == {
        "Launcher": 1, "Worker": 2}
    assert record.get("restarts", 0) == 0
    succeeded = condition(done, "Succeeded")
    assert succeeded is not None
    assert (succeeded["status"], succeeded["reason"]) == ("True", "AllReplicasSucceeded")
    assert succeeded["message"] == (
        "MachineJob all successfully completed: every replica succeeded.")
    assert condition(done, "SuccessCriteriaMet") is None
    assert condition(done, "Failed") is None
    # Events are posted after the status is written: wait for the ending's to land.
    events = wait_for(lambda: job_events(client, done),
                      lambda found: count_events(found, "AllReplicasSucceeded") > 0,
                      what="the AllReplicasSucceeded event")
    assert count_events(events, "AllReplicasSucceeded") == 1  # the ending, said once
    assert count_events(events, "JobSucceeded") == 0
    assert count_events(events, "SuccessPolicy") == 0
    assert pod_names(client, ns, "all") == ["all-launcher-0", "all-worker-0", "all-worker-1"]


def test_any_count_does_not_wait_for_the_last_worker(client: KubeClient, ns: str) -> None:
    """mode Any, count 2 over 3 Workers: two exit 0 after 0.3 s, the third would run 60 s ->
    Succeeded (reason SuccessPolicy) without it, its pod deleted before the job is Succeeded.

    Simulation annotations belong to the template, so every Worker the engine creates runs
    alike; the straggler is a pod made beforehand under Worker-2's name, which the engine
    adopts as that replica's pod (as test_claims shows) instead of creating one.
    """
    straggler = client.create(
        PODS, sim_pod("any-worker-2", ns, labels={JOB_NAME: "any"}, run_s=60), ns)
    straggler_uid = straggler["metadata"]["uid"]
    wait_for(lambda: get_pod(client, ns, "any-worker-2"),
             lambda pod: pod is not None and "running" in main_state(pod),
             what="the straggler runs")
    job = machinejob("any", ns, {"Worker": Replica(3, run_s=0.3)},
                     success_policy={"replicaTypes": ["Worker"], "mode": "Any", "count": 2})
    with (watching_pods(client, ns) as pods, recording(client, PODS, ns) as pod_log,
          recording(client, MACHINEJOBS, ns) as job_log):
        client.create(MACHINEJOBS, job, ns)
        done = wait_for_phase_of(client, MACHINEJOBS, ns, "any", "Succeeded", timeout=30)
        job_events_seen = job_log.through(done["metadata"]["resourceVersion"])
        first_succeeded = _first_succeeded(job_events_seen)
        succeeded_at = _rv(first_succeeded)
        pod_events = pod_log.through(str(succeeded_at))
        # Three pods in all (the adoption is seen before the relabelling, under the pod's name).
        assert len(pods.seen) == 3
        assert (pods.creations()["Worker-0"], pods.creations()["Worker-1"]) == (1, 1)
        assert pods.created["Worker-2"] == [straggler_uid]

    # SuccessCriteriaMet while the straggler is deleted (Succeeding); Succeeded takes it over.
    succeeding = [j for _, j in job_events_seen if status(j).get("phase") == "Succeeding"]
    assert succeeding, "no version of the job was Succeeding"
    met, succeeded = condition(succeeding[-1], "SuccessCriteriaMet"), condition(done, "Succeeded")
    assert met is not None and succeeded is not None
    assert (met["status"], met["reason"]) == ("True", "SuccessPolicy")
    assert (succeeded["status"], succeeded["reason"]) == ("True", "SuccessPolicy")
    assert succeeded["message"] == met["message"]
    assert condition(done, "SuccessCriteriaMet") is None
    assert job_path(done) == ["Created", "Running", "Succeeding", "Succeeded"]
    record = status(done)
    assert stored(done)["replicas"] == {"Worker": {"Succeeded": "0-1", "Running": "2"}}
    assert record["replicaStatuses"]["Worker"].get("succeeded") == 2
    assert record.get("restarts", 0) == 0

    # The straggler never finished: the job did not wait for it, the clean-up stopped it.
    assert _never_succeeded(pod_events, straggler_uid)
    [deleted] = [p for k, p in pod_events
                 if k == "DELETED" and p["metadata"]["uid"] == straggler_uid]
    deletion = parse_time(deleted["metadata"]["deletionTimestamp"])
    assert parse_time(record["completionTime"]) >= deletion
    assert parse_time(succeeded["lastTransitionTime"]) >= deletion
    # The first stored version of the job that says Succeeded came after the pod was gone,
    # and then no pod of the job was running or being deleted.
    assert _rv(deleted) < succeeded_at
    left = _alive_at(pod_events, succeeded_at)
    assert sorted(replica_key(p) for p in left) == ["Worker-0", "Worker-1"]
    assert all(not _running_or_deleting(p) for p in left)
    assert get_pod(client, ns, "any-worker-2") is None
    assert pod_names(client, ns, "any") == ["any-worker-0", "any-worker-1"]
    events = wait_for(lambda: job_events(client, done),
                      lambda found: count_events(found, "SuccessPolicy") > 0,
                      what="the SuccessPolicy event")
    assert count_events(events, "SuccessPolicy") == 1  # the ending, said once
    assert count_events(events, "JobSucceeded") == 0
    assert count_events(events, "AllReplicasSucceeded") == 0


def test_all_mode_over_workers_does_not_wait_for_the_launcher(
    client: KubeClient, ns: str
) -> None:
    """mode All over [Worker]: both Workers exit 0 after 0.3 s while the Launcher would run
    60 s -> Succeeded (reason SuccessPolicy); the Launcher's pod is deleted by the clean-up."""
    job = machinejob("pol", ns, {"Launcher": Replica(run_s=60), "Worker": Replica(2, run_s=0.3)},
                     success_policy={"replicaTypes": ["Worker"], "mode": "All"})
    with watching_pods(client, ns) as pods, recording(client, PODS, ns) as pod_log:
        client.create(MACHINEJOBS, job, ns)
        done = wait_for_phase_of(client, MACHINEJOBS, ns, "pol", "Succeeded", timeout=30)
        pod_events = pod_log.through(done["metadata"]["resourceVersion"])
        assert pods.creations() == {"Launcher-0": 1, "Worker-0": 1, "Worker-1": 1}

    succeeded = condition(done, "Succeeded")
    assert succeeded is not None and succeeded["reason"] == "SuccessPolicy"
    assert succeeded["message"] == (
        "MachineJob pol successfully completed: its success policy is met.")
    assert condition(done, "SuccessCriteriaMet") is None  # Succeeded took it over
    assert job_path(done) == ["Created", "Running", "Succeeding", "Succeeded"]
    succeeding = history_index(done, to="Succeeding")
    for replica in ("Worker-0", "Worker-1"):
        assert history_index(done, to="Succeeded", replica=replica) < succeeding
    record = status(done)
    assert {t: s.get("succeeded", 0) for t, s in record["replicaStatuses"].items()} == {
        "Launcher": 0, "Worker": 2}
    [deleted] = [p for k, p in pod_events
                 if k == "DELETED" and replica_key(p) == "Launcher-0"]
    assert any("running" in main_state(p) for _, p in pod_events
               if replica_key(p) == "Launcher-0")
    assert _never_succeeded(pod_events, deleted["metadata"]["uid"])
    assert parse_time(record["completionTime"]) >= parse_time(
        deleted["metadata"]["deletionTimestamp"])
    assert pod_names(client, ns, "pol") == ["pol-worker-0", "pol-worker-1"]
    wait_until(lambda: count_events(job_events(client, done), "SuccessPolicy") == 1,
               what="one SuccessPolicy event")


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"replicaTypes": ["Worker"], "mode": "All", "count": 2},
         "count applies only to mode Any"),
        ({"replicaTypes": ["Chief"], "mode": "Any"},
         "successPolicy.replicaTypes must name replica types of spec.replicaSpecs"),
    ],
    ids=["count-with-mode-all", "unknown-replica-type"],
)
def test_api_server_rejects_a_policy_that_cannot_apply(
    client: KubeClient, ns: str, policy: Obj, message: str
) -> None:
    job = machinejob("bad", ns, {"Worker": Replica(2)}, success_policy=policy)
    with pytest.raises(Invalid) as rejected:
        client.create(MACHINEJOBS, job, ns)

    assert (rejected.value.status, rejected.value.reason) == (422, "Invalid")
    assert message in rejected.value.message
    assert get_obj(client, MACHINEJOBS, ns, "bad") is None
