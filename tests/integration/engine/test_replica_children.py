"""A kind whose replicas are batch/v1 Jobs, not pods (spec.child), on the embedded cluster:
one Job per replica index, made from the replica spec's template, run by the `batch-job`
machine under `up`, and read back by the parent's replica machine through spec.child's
status expressions (the way JobSet reads its Jobs).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from engine.controller.machines.served import BUILT_IN_JOB_KINDS
from engine.kube.client import KubeClient
from engine.kube.errors import NotFound
from engine.kube.resources import PODS
from tests.integration.engine.custom_kinds import Lab, LabKind, new_kind, wait_for_verdict
from tests.integration.engine.helpers import (
    EXIT_CODES,
    JOB_NAME,
    REPLICA_INDEX,
    REPLICA_TYPE,
    RUN_SECONDS,
    Obj,
    condition,
    controller_uid,
    record,
    status,
    wait_for,
    wait_for_phase,
    wait_until,
)

JOBS = BUILT_IN_JOB_KINDS[("batch/v1", "Job")]
RESTART_ATTEMPT = "jobmachine.dev/restart-attempt"

IN_FAILED = "child.status.conditions.filter(c, c.type == 'Failed' && c.status == 'True')[0]"
CHILD = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "labels": {"example.com/replica": "replica.type + '-' + string(replica.index)"},
    "status": {
        "ready": "has(child.status) && has(child.status.ready) && child.status.ready > 0",
        "succeeded": "has(child.status) && has(child.status.conditions) && child.status"
                     ".conditions.exists(c, c.type == 'Complete' && c.status == 'True')",
        "failed": "has(child.status) && has(child.status.conditions) && child.status"
                  ".conditions.exists(c, c.type == 'Failed' && c.status == 'True')",
        "failureReason": f"{IN_FAILED}.reason",
        "failureMessage": f"{IN_FAILED}.message",
    },
}
"""Each replica is a batch/v1 Job, read as JobSet reads its Jobs: Complete or Failed."""


@pytest.fixture
def lab(client: KubeClient) -> Iterator[Lab]:
    with Lab(client) as made:
        yield made


RESTARTING_JOB = {
    "initial": "Running",
    "states": {
        "Running": {"condition": {"type": "Running", "reason": "JobsRunning"}},
        "Restarting": {"holdReplicas": True,
                       "condition": {"type": "Restarting", "reason": "JobsRestarting"}},
        "Succeeded": {"terminal": "success", "condition": {
            "type": "Succeeded", "reason": "AllJobsCompleted"}},
        "Failed": {"terminal": "failure", "condition": {"type": "Failed", "reason": "FailedJobs"}},
    },
    "transitions": [
        {"from": "Running", "to": "Failed", "on": "invalid", "reason": "FailedValidation"},
        {"from": "Running", "to": "Restarting", "actions": ["restartJob"],
         "when": "replicas.Worker.failed > 0 && restarts < 1", "reason": "RestartJobs"},
        {"from": "Running", "to": "Failed", "when": "replicas.Worker.failed > 0",
         "reason": "FailedJobs", "message": "a Job failed: ${lastFailure}"},
        {"from": "Running", "to": "Succeeded",
         "when": "replicas.Worker.succeeded == replicas.Worker.desired",
         "reason": "AllJobsCompleted"},
        {"from": "Restarting", "to": "Running", "on": "settled", "reason": "JobsRestarted"},
    ],
}
"""A job machine that, at the first failed Job, starts a new attempt (JobSet's RestartJobSet
with maxRestarts 1): `restartJob` has the engine delete every Job of the old attempt, and
`settled` waits until they are gone. It fails at the second failed Job."""


def jobs_machine(kind: LabKind, job: Obj | None = None, child: Obj | None = None) -> Obj:
    """A machine whose Worker replicas are Jobs: the job succeeds once every Job completed
    and fails at the first Job that failed, saying why (or, with `job`, as that says)."""
    return {
        "apiVersion": "jobmachine.dev/v1alpha1", "kind": "StateMachine",
        "metadata": {"name": kind.kind.lower()},
        "spec": {
            "governs": {"apiVersion": kind.resource.api_version, "kind": kind.kind,
                        "replicaSpecs": "spec.workers", "replicaTypes": ["Worker"]},
            "child": child or CHILD,
            "job": job or {
                "initial": "Running",
                "states": {
                    "Running": {"condition": {"type": "Running", "reason": "JobsRunning"}},
                    "Succeeded": {"terminal": "success", "condition": {
                        "type": "Succeeded", "reason": "AllJobsCompleted"}},
                    "Failed": {"terminal": "failure", "condition": {
                        "type": "Failed", "reason": "FailedJobs"}},
                },
                "transitions": [
                    {"from": "Running", "to": "Failed", "on": "invalid",
                     "reason": "FailedValidation"},
                    {"from": "Running", "to": "Failed", "when": "replicas.Worker.failed > 0",
                     "reason": "FailedJobs", "message": "a Job failed: ${lastFailure}"},
                    {"from": "Running", "to": "Succeeded",
                     "when": "replicas.Worker.succeeded == replicas.Worker.desired",
                     "reason": "AllJobsCompleted"},
                ],
            },
            "replica": {
                "initial": "Pending",
                "states": {"Pending": {"onEnter": ["createChild"]}, "Ready": {},
                           "Succeeded": {"terminal": "success"},
                           "Failed": {"terminal": "failure"}},
                "transitions": [
                    {"from": ["Pending", "Ready"], "to": "Succeeded", "on": "childSucceeded",
                     "reason": "JobCompleted"},
                    {"from": ["Pending", "Ready"], "to": "Failed", "on": "childFailed",
                     "reason": "JobFailed"},
                    {"from": "Pending", "to": "Ready", "on": "childReady", "reason": "JobReady"},
                    {"from": "Ready", "to": "Pending", "on": "childMissing",
                     "reason": "JobMissing"},
                ],
            },
        },
    }


def job_of(kind: LabKind, name: str, ns: str, *, replicas: int, codes: str = "0",
           run_s: float = 0.3, backoff_limit: int = 0) -> Obj:
    """A job whose Workers are Jobs of one pod each, running `run_s` and exiting `codes`."""
    template = {
        "metadata": {"labels": {"example.com/team": "ml"}},
        "spec": {"backoffLimit": backoff_limit, "template": {
            "metadata": {"annotations": {EXIT_CODES: codes, RUN_SECONDS: str(run_s)}},
            "spec": {"restartPolicy": "Never",
                     "containers": [{"name": "work", "image": "busybox"}]},
        }},
    }
    return {"apiVersion": kind.resource.api_version, "kind": kind.kind,
            "metadata": {"name": name, "namespace": ns},
            "spec": {"workers": {"Worker": {"replicas": replicas, "template": template}}}}


def governed(client: KubeClient, lab: Lab, job: Obj | None = None,
             child: Obj | None = None) -> LabKind:
    kind = new_kind()
    lab.install(kind)
    lab.apply(jobs_machine(kind, job, child))
    wait_for_verdict(client, kind.kind.lower(), accepted="Valid", governing="Governing")
    return kind


def test_each_replica_is_a_job_made_from_its_template_and_the_job_ends_with_them(
    client: KubeClient, lab: Lab, ns: str
) -> None:
    kind = governed(client, lab)
    parent = client.create(kind.resource, job_of(kind, "trio", ns, replicas=3), ns)

    done = wait_for_phase(client, ns, "trio", "Succeeded", kind=kind.resource)

    children, _ = client.list(JOBS, ns)
    by_name = {c["metadata"]["name"]: c for c in children}
    assert sorted(by_name) == ["trio-worker-0", "trio-worker-1", "trio-worker-2"]
    first = by_name["trio-worker-0"]
    labels = first["metadata"]["labels"]
    assert (labels[JOB_NAME], labels[REPLICA_TYPE], labels[REPLICA_INDEX]) == (
        "trio", "Worker", "0")
    assert labels["example.com/team"] == "ml"  # the template's own labels
    assert labels["example.com/replica"] == "Worker-0"  # the machine's
    assert controller_uid(first) == parent["metadata"]["uid"]
    assert first["spec"]["backoffLimit"] == 0  # the template's spec, as written
    assert all(any(c["type"] == "Complete" and c["status"] == "True"
                   for c in c_job["status"].get("conditions") or ())
               for c_job in children)
    assert record(done).replica_states == {
        r: "Succeeded" for r in record(done).replica_states}
    assert len(record(done).replica_states) == 3
    assert (condition(done, "Succeeded") or {}).get("reason") == "AllJobsCompleted"
    assert status(done)["replicaStatuses"]["Worker"]["succeeded"] == 3


def test_a_failed_job_fails_the_parent_with_its_reason(
    client: KubeClient, lab: Lab, ns: str
) -> None:
    kind = governed(client, lab)
    client.create(kind.resource, job_of(kind, "broken", ns, replicas=1, codes="3"), ns)

    done = wait_for_phase(client, ns, "broken", "Failed", kind=kind.resource)

    failed = condition(done, "Failed") or {}
    assert failed.get("reason") == "FailedJobs"
    # The Job's own Failed condition, read through failureReason and failureMessage.
    assert "BackoffLimitExceeded" in failed.get("message", ""), failed
    assert "Job has reached the specified backoff limit" in failed.get("message", ""), failed


def test_a_job_deleted_while_it_runs_is_made_again(
    client: KubeClient, lab: Lab, ns: str
) -> None:
    kind = governed(client, lab)
    # The Job's pod, deleted with it, may be counted failed first (as the Job controller
    # counts a pod the garbage collector deletes): room for it, so the Job does not fail.
    client.create(kind.resource, job_of(kind, "again", ns, replicas=1, run_s=3.0,
                                        backoff_limit=6), ns)
    first = wait_for(lambda: _get(client, ns, "again-worker-0"), lambda found: found is not None,
                     what="the Worker's Job")
    assert first is not None
    client.delete(JOBS, "again-worker-0", ns, propagation_policy="Foreground")

    try:
        wait_for(lambda: _get(client, ns, "again-worker-0"),
                 lambda found: found is not None
                 and found["metadata"]["uid"] != first["metadata"]["uid"],
                 what="a new Job for the Worker")
    except AssertionError as exc:
        parent = client.get(kind.resource, "again", ns)
        raise AssertionError(f"{exc}; the parent's status: {status(parent)}") from None
    wait_for_phase(client, ns, "again", "Succeeded", kind=kind.resource)


def test_a_restart_deletes_every_job_and_makes_the_next_attempts_once_they_are_gone(
    client: KubeClient, lab: Lab, ns: str
) -> None:
    kind = governed(client, lab, RESTARTING_JOB)
    seen: list[tuple[str, str, str]] = []
    stop = threading.Event()
    watcher = threading.Thread(target=job_history, args=(client, ns, stop, seen), daemon=True)
    watcher.start()
    try:
        # Every Job fails in every attempt: the first failure restarts, the second fails.
        client.create(kind.resource, job_of(kind, "twice", ns, replicas=2, codes="3"), ns)
        done = wait_for_phase(client, ns, "twice", "Failed", kind=kind.resource)
    finally:
        stop.set()
        watcher.join(10)

    assert status(done).get("restarts", 0) == 1
    assert status(done)["restartAttempt"] == 1
    attempts = {(name, attempt) for _, name, attempt in seen}
    assert attempts == {(f"twice-worker-{i}", a) for i in (0, 1) for a in ("0", "1")}, seen
    # The new attempt's Jobs are made only once the old attempt's are gone (settled).
    last_gone = max(i for i, (event, _, attempt) in enumerate(seen)
                    if event == "DELETED" and attempt == "0")
    first_new = min(i for i, (event, _, attempt) in enumerate(seen)
                    if event == "ADDED" and attempt == "1")
    assert last_gone < first_new, seen


def test_the_jobs_are_suspended_and_resumed_with_their_parent(
    client: KubeClient, lab: Lab, ns: str
) -> None:
    kind = governed(client, lab, child={**CHILD, "fields": {"spec.suspend": "runPolicy.suspend"}})
    suspended = job_of(kind, "paused", ns, replicas=2)
    suspended["spec"]["runPolicy"] = {"suspend": True}
    client.create(kind.resource, suspended, ns)

    def both(value: bool) -> bool:
        found, _ = client.list(JOBS, ns)
        return len(found) == 2 and all(j["spec"].get("suspend") is value for j in found)

    wait_until(lambda: both(True), what="two suspended Jobs")
    time.sleep(1.0)
    assert client.list(PODS, ns)[0] == []  # a suspended Job makes no pod
    client.patch(kind.resource, "paused", {"spec": {"runPolicy": {"suspend": False}}},
                 namespace=ns)

    wait_until(lambda: both(False), what="two resumed Jobs")
    wait_for_phase(client, ns, "paused", "Succeeded", kind=kind.resource)


def job_history(client: KubeClient, ns: str, stop: threading.Event,
                seen: list[tuple[str, str, str]]) -> None:
    """Append (event, Job name, restart attempt) for every ADDED and DELETED Job in `ns`."""
    _, version = client.list(JOBS, ns)
    while not stop.is_set():
        for event in client.watch(JOBS, ns, resource_version=version, timeout_seconds=1):
            job = event["object"]
            version = job["metadata"].get("resourceVersion") or version
            if event["type"] in ("ADDED", "DELETED"):
                attempt = (job["metadata"].get("labels") or {}).get(RESTART_ATTEMPT, "")
                seen.append((event["type"], job["metadata"]["name"], attempt))


def _get(client: KubeClient, ns: str, name: str) -> Obj | None:
    try:
        return client.get(JOBS, name, ns)
    except NotFound:
        return None
