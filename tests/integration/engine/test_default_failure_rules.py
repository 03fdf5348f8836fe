"""The machine's default failure rules: MachineJob ignores a disrupted pod's failure.

machines/job.yaml declares `defaults.failureRules: [{action: Ignore, onPodConditions:
[{type: DisruptionTarget}]}]`: a pod that failed because it was preempted or evicted is
recreated without counting a restart. The job's own spec.failureRules come first, so a job
rule can still count it. The disruption is written into the running pod's status as the
kubelet and the eviction API write it (condition DisruptionTarget, phase Failed, the
container terminated); the simulated node leaves a status it did not change alone.
"""

from __future__ import annotations

from typing import Any

from engine.controller.reconcile.children import ReplicaId
from engine.kube.client import KubeClient
from engine.kube.resources import PODS
from tests.integration.engine.helpers import (
    Replica,
    condition,
    count_events,
    get_pod,
    history,
    job_events,
    job_path,
    record,
    replica_path,
    replica_state,
    status,
    wait_for,
    watching_pods,
)
from tests.integration.engine.machinejobs import (
    MACHINEJOBS,
    get_obj,
    machinejob,
    wait_for_phase_of,
)

Obj = dict[str, Any]

COUNT_DISRUPTIONS = {"action": "Count", "onPodConditions": [{"type": "DisruptionTarget"}]}


def running_pod(client: KubeClient, ns: str, name: str, *, not_uid: str | None = None) -> Obj:
    """The pod `name` once its main container runs (a pod other than `not_uid`)."""
    pod = wait_for(lambda: get_pod(client, ns, name),
                   lambda pod: pod is not None and pod["metadata"]["uid"] != not_uid
                   and pod["metadata"].get("deletionTimestamp") is None
                   and "running" in (pod.get("status", {}).get("containerStatuses")
                                     or [{}])[0].get("state", {}),
                   what=f"a running pod {name} (not {not_uid})")
    assert pod is not None
    return pod


def wait_for_worker(client: KubeClient, ns: str, name: str, state: str) -> Obj:
    """Wait until the MachineJob's Worker-0 is in `state`; the job then."""
    job = wait_for(lambda: get_obj(client, MACHINEJOBS, ns, name),
                   lambda job: replica_state(job, "Worker", 0) == state,
                   what=f"{ns}/{name} Worker-0 {state}")
    assert job is not None
    return job


def end_pod(client: KubeClient, pod: Obj, *, exit_code: int, disrupted: bool) -> None:
    """Write into the pod's status that its container ended with `exit_code` (phase Failed,
    or Succeeded for 0), with condition DisruptionTarget True when it was `disrupted`."""
    [container] = pod["status"]["containerStatuses"]
    started = container["state"]["running"]["startedAt"]
    terminated = {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error",
                  "startedAt": started, "finishedAt": started}
    conditions = list(pod["status"].get("conditions") or [])
    if disrupted:
        conditions.append({"type": "DisruptionTarget", "status": "True",
                           "reason": "PreemptionByScheduler",
                           "message": "Preempted in order to admit critical pod",
                           "lastTransitionTime": started})
    body = {"status": {
        "phase": "Succeeded" if exit_code == 0 else "Failed",
        "conditions": conditions,
        "containerStatuses": [{**container, "ready": False, "state": {"terminated": terminated}}],
    }}
    client.patch(PODS, pod["metadata"]["name"], body, namespace=pod["metadata"]["namespace"],
                 subresource="status")


def backoff_count(job: Obj) -> int:
    """Worker-0's failed attempts in a row (the re-creation back-off), 0 when none."""
    entry = record(job).replica_backoff.get(ReplicaId("Worker", 0))
    return entry.count if entry else 0


def wait_for_backoff(client: KubeClient, ns: str, name: str, count: int) -> None:
    """Wait until status records `count` failed attempts of Worker-0 in a row."""
    wait_for(lambda: get_obj(client, MACHINEJOBS, ns, name) or {},
             lambda job: backoff_count(job) == count,
             what=f"{count} failed attempt(s) of Worker-0 in a row recorded")


def test_disrupted_pods_are_recreated_without_counting_a_restart(
    client: KubeClient, ns: str
) -> None:
    """backoffLimit 0, Worker-0 preempted twice: recreated each time (restarts 0, the back-off
    grows to 2), and the third pod's success completes the job."""
    with watching_pods(client, ns) as pods:
        client.create(MACHINEJOBS, machinejob("preempted", ns, {"Worker": Replica(run_s=60)},
                                              run_policy={"backoffLimit": 0}), ns)
        pod = running_pod(client, ns, "preempted-worker-0")
        for attempt in (1, 2):
            end_pod(client, pod, exit_code=137, disrupted=True)
            pod = running_pod(client, ns, "preempted-worker-0", not_uid=pod["metadata"]["uid"])
            wait_for_backoff(client, ns, "preempted", attempt)
            job = wait_for_worker(client, ns, "preempted", "Running")
            assert status(job).get("restarts", 0) == 0
            assert status(job)["phase"] in ("Created", "Running"), status(job)["phase"]
            assert condition(job, "FailureTarget") is None
        end_pod(client, pod, exit_code=0, disrupted=False)
        done = wait_for_phase_of(client, MACHINEJOBS, ns, "preempted", "Succeeded")
        assert pods.creations() == {"Worker-0": 3}
        assert pods.most_at_once["Worker-0"] == 1

    assert status(done).get("restarts", 0) == 0
    assert backoff_count(done) == 0  # the success reset it
    assert replica_path(done, "Worker-0") == [
        "Pending", "Running", "Restarting", "Pending", "Running", "Restarting", "Pending",
        "Running", "Succeeded"]
    ignored = [h for h in history(done) if h.get("to") == "Restarting"]
    assert [h["reason"] for h in ignored] == ["PodFailureIgnored", "PodFailureIgnored"]
    succeeded = condition(done, "Succeeded")
    assert succeeded is not None and succeeded["reason"] == "AllReplicasSucceeded"
    events = job_events(client, done)
    assert count_events(events, "PodFailureIgnored") == 2
    assert count_events(events, "PodFailed") == 0


def fails_counted(client: KubeClient, ns: str, job: Obj, *, disrupted: bool) -> Obj:
    """Run the MachineJob, end Worker-0's pod with 137; wait until the job failed."""
    name = job["metadata"]["name"]
    with watching_pods(client, ns) as pods:
        client.create(MACHINEJOBS, job, ns)
        pod = running_pod(client, ns, f"{name}-worker-0")
        # A running replica fails: wait until the engine has seen it run, too.
        wait_for(lambda: client.get(MACHINEJOBS, name, ns),
                 lambda seen: replica_state(seen, "Worker", 0) == "Running",
                 what="the engine to record Worker-0 Running")
        end_pod(client, pod, exit_code=137, disrupted=disrupted)
        failed = wait_for_phase_of(client, MACHINEJOBS, ns, name, "Failed")
        assert pods.creations() == {"Worker-0": 1}
    return failed


def assert_backoff_limit_exceeded(client: KubeClient, failed: Obj) -> None:
    """One restart counted against backoffLimit 0: Failed says so, having taken FailureTarget's
    reason and place."""
    reason = condition(failed, "Failed")
    assert reason is not None and (reason["status"], reason["reason"]) == (
        "True", "BackoffLimitExceeded")
    assert condition(failed, "FailureTarget") is None
    assert status(failed).get("restarts", 0) == 1
    assert job_path(failed)[-2:] == ["Failing", "Failed"]
    assert replica_path(failed, "Worker-0")[:3] == ["Pending", "Running", "Restarting"]
    events = job_events(client, failed)
    assert count_events(events, "PodFailureIgnored") == 0
    assert count_events(events, "PodFailed") == 1


def test_a_job_rule_counting_disruptions_comes_before_the_machines_default(
    client: KubeClient, ns: str
) -> None:
    """The job's own rule {Count, DisruptionTarget} matches first: the preemption counts and,
    with backoffLimit 0, fails the job (BackoffLimitExceeded)."""
    job = machinejob("counted", ns, {"Worker": Replica(run_s=60)}, run_policy={"backoffLimit": 0},
                     failure_rules=[COUNT_DISRUPTIONS])
    assert_backoff_limit_exceeded(client, fails_counted(client, ns, job, disrupted=True))


def test_a_failure_without_disruption_target_is_counted(client: KubeClient, ns: str) -> None:
    """The same failure without the DisruptionTarget condition is no disruption: it counts."""
    job = machinejob("crashed", ns, {"Worker": Replica(run_s=60)}, run_policy={"backoffLimit": 0})
    assert_backoff_limit_exceeded(client, fails_counted(client, ns, job, disrupted=False))
