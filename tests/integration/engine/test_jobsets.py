"""JobSets (machines/jobset.yaml) on the embedded cluster, their Jobs run by `batch-job`:
each replicated job's Jobs with JobSet's names, labels and annotations, the headless
Service, the success policy, a failure policy that restarts the set up to maxRestarts and
then fails it in upstream's words, suspend and resume, and InOrder start-up.

Pods are simulated: `sim.jobmachine.dev/exit-codes` and `run-seconds` on the pod template
say how each ends.
"""

from __future__ import annotations

import hashlib
import threading
import time
from typing import Any

import orjson

from engine.controller.machines.served import BUILT_IN_JOB_KINDS
from engine.kube.client import KubeClient
from engine.kube.resources import SERVICES
from tests.integration.engine.helpers import (
    EXIT_CODES,
    RUN_SECONDS,
    Obj,
    count_events,
    job_events,
    wait_for,
)
from tests.integration.engine.machinejobs import conditions_of, get_obj, wait_for_condition_of
from tests.kinds import KINDS

JOBSETS = KINDS["JobSet"]
JOBS = BUILT_IN_JOB_KINDS[("batch/v1", "Job")]
KEY = "jobset.sigs.k8s.io/"


def replicated_job(name: str, *, replicas: int = 1, pods: int = 1, codes: str = "0",
                   run_s: float = 0.3, ready_probe: bool = False) -> Obj:
    """A replicated job of `replicas` Jobs, each of `pods` pods that run `run_s` and exit
    with `codes` (backoffLimit 0, as upstream's examples: one failed pod fails the Job)."""
    annotations = {EXIT_CODES: codes, RUN_SECONDS: str(run_s)}
    del ready_probe
    return {"name": name, "replicas": replicas, "template": {
        "metadata": {"labels": {"example.com/team": "ml"}},
        "spec": {"parallelism": pods, "completions": pods, "backoffLimit": 0, "template": {
            "metadata": {"labels": {"example.com/pod": name}, "annotations": annotations},
            "spec": {"restartPolicy": "Never",
                     "containers": [{"name": "main", "image": "busybox"}]},
        }},
    }}


def jobset(name: str, ns: str, *replicated: Obj, **spec: Any) -> Obj:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"replicatedJobs": list(replicated), **spec}}


def get(client: KubeClient, ns: str, name: str) -> Obj | None:
    return get_obj(client, JOBSETS, ns, name)


conditions = conditions_of


def wait_for_condition(client: KubeClient, ns: str, name: str, type_: str,
                       status: str = "True", *, timeout: float = 60.0) -> Obj:
    return wait_for_condition_of(client, JOBSETS, ns, name, type_, status_=status,
                                 timeout=timeout)


def jobs_of(client: KubeClient, ns: str) -> dict[str, Obj]:
    items, _ = client.list(JOBS, ns)
    return {j["metadata"]["name"]: j for j in items}


def engine_status(js: Obj) -> Obj:
    text = js["metadata"]["annotations"]["jobmachine.dev/status"]
    found: Obj = orjson.loads(text)
    return found


def rjob_status(js: Obj) -> list[Obj]:
    return list((js.get("status") or {}).get("replicatedJobsStatus") or ())


def test_a_jobset_makes_its_jobs_and_service_and_completes(
    client: KubeClient, ns: str
) -> None:
    made = client.create(JOBSETS, jobset("pair", ns, replicated_job("workers", replicas=2),
                                         replicated_job("driver")), ns)

    done = wait_for_condition(client, ns, "pair", "Completed")

    completed = conditions(done)["Completed"]
    assert (completed["reason"], completed["message"]) == (
        "AllJobsCompleted", "jobset completed successfully")
    assert "lastProbeTime" not in completed  # metav1.Condition: the CRD keeps its own fields
    assert done["status"]["terminalState"] == "Completed"
    assert done["status"]["restarts"] == 0
    assert "restartsCountTowardsMax" not in done["status"]
    assert rjob_status(done) == [  # every replicated job, names descending
        {"name": "workers", "ready": 0, "succeeded": 2, "failed": 0, "active": 0, "suspended": 0},
        {"name": "driver", "ready": 0, "succeeded": 1, "failed": 0, "active": 0, "suspended": 0},
    ]
    jobs = jobs_of(client, ns)
    assert sorted(jobs) == ["pair-driver-0", "pair-workers-0", "pair-workers-1"]
    worker = jobs["pair-workers-1"]
    uid = made["metadata"]["uid"]
    expected = {
        "jobset-name": "pair", "jobset-uid": uid, "replicatedjob-name": "workers",
        "restart-attempt": "0", "replicatedjob-replicas": "2", "global-replicas": "3",
        "job-index": "1", "job-global-index": "1", "group-name": "default",
        "group-replicas": "3", "job-group-index": "1",
        "job-key": hashlib.sha1(f"{ns}/pair-workers-1".encode()).hexdigest(),
    }
    wanted = {KEY + k: v for k, v in expected.items()}
    labels, annotations = worker["metadata"]["labels"], worker["metadata"]["annotations"]
    assert {k: labels.get(k) for k in wanted} == wanted
    assert {k: annotations.get(k) for k in wanted} == wanted
    assert labels["example.com/team"] == "ml"  # the template's own
    pod_template = worker["spec"]["template"]
    assert {k: pod_template["metadata"]["labels"].get(k) for k in wanted} == wanted
    assert pod_template["metadata"]["labels"]["example.com/pod"] == "workers"
    assert {k: pod_template["metadata"]["annotations"].get(k) for k in wanted} == wanted
    assert pod_template["spec"]["subdomain"] == "pair"
    assert worker["spec"]["suspend"] is False
    assert worker["spec"]["completionMode"] == "Indexed"  # upstream's webhook default
    owner = worker["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("JobSet", uid, True)
    driver = jobs["pair-driver-0"]["metadata"]["labels"]
    assert (driver[KEY + "job-global-index"], driver[KEY + "job-group-index"]) == ("2", "2")

    service = client.get(SERVICES, "pair", ns)
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == {KEY + "jobset-name": "pair"}
    assert service["spec"]["publishNotReadyAddresses"] is True
    events = job_events(client, done)
    assert count_events(events, "AllJobsCompleted") == 1


def test_the_success_policy_any_over_targets_ends_the_set_and_deletes_the_rest(
    client: KubeClient, ns: str
) -> None:
    client.create(JOBSETS, jobset(
        "anyone", ns, replicated_job("leader", run_s=600), replicated_job("workers", pods=2),
        successPolicy={"operator": "All", "targetReplicatedJobs": ["workers"]}), ns)

    done = wait_for_condition(client, ns, "anyone", "Completed")

    assert done["status"]["terminalState"] == "Completed"
    # The leader's Job, still running, is deleted (in the foreground).
    wait_for(lambda: jobs_of(client, ns), lambda jobs: "anyone-leader-0" not in jobs,
             what="the leader's Job deleted", timeout=30)


def test_a_failed_job_restarts_the_set_up_to_max_restarts_then_fails_it(
    client: KubeClient, ns: str
) -> None:
    attempts: set[tuple[str, str]] = set()
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            for name, job in jobs_of(client, ns).items():
                attempts.add((name, job["metadata"]["labels"].get(KEY + "restart-attempt", "?")))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        client.create(JOBSETS, jobset(
            "flaky", ns, replicated_job("leader", codes="1"), replicated_job("workers", run_s=600),
            failurePolicy={"maxRestarts": 2, "restartStrategy": "BlockingRecreate"}), ns)
        done = wait_for_condition(client, ns, "flaky", "Failed", timeout=90)
    finally:
        stop.set()
        watcher.join(5)

    failed = conditions(done)["Failed"]
    assert failed["reason"] == "ReachedMaxRestarts"
    assert failed["message"] == ("jobset failed due to reaching max number of restarts "
                                 "(first failed job: flaky-leader-0)")
    assert done["status"]["restarts"] == 2
    assert done["status"]["restartsCountTowardsMax"] == 2
    assert done["status"]["terminalState"] == "Failed"
    restarting = conditions(done)["RestartingJobSet"]
    assert (restarting["status"], restarting["reason"]) == ("False", "JobSetFailed")
    assert {a for name, a in attempts if name == "flaky-leader-0"} == {"0", "1", "2"}
    events = job_events(client, done)
    assert count_events(events, "RestartJobSetFailurePolicyAction") == 2
    assert count_events(events, "DefaultFailurePolicy") >= 1
    assert count_events(events, "ReachedMaxRestarts") == 1
    # The workers' Job of the last attempt was running: deleted once the set failed.
    wait_for(lambda: jobs_of(client, ns), lambda jobs: "flaky-workers-0" not in jobs,
             what="the workers' Job deleted", timeout=30)


def test_a_failjobset_rule_fails_at_once_and_names_the_job(client: KubeClient, ns: str) -> None:
    client.create(JOBSETS, jobset(
        "strict", ns, replicated_job("leader", codes="1"), replicated_job("workers", run_s=600),
        failurePolicy={"maxRestarts": 3, "rules": [
            {"action": "FailJobSet", "targetReplicatedJobs": ["leader"]}]}), ns)

    done = wait_for_condition(client, ns, "strict", "Failed")

    failed = conditions(done)["Failed"]
    assert (failed["reason"], failed["message"]) == (
        "FailJobSetFailurePolicyAction",
        "applying FailJobSet failure policy action (first failed job: strict-leader-0)")
    assert done["status"]["restarts"] == 0


def test_a_restart_rule_names_its_reason_after_the_rule(client: KubeClient, ns: str) -> None:
    client.create(JOBSETS, jobset(
        "ruled", ns, replicated_job("leader", codes="1"),
        failurePolicy={"maxRestarts": 1, "rules": [
            {"action": "RestartJobSet", "onJobFailureReasons": ["BackoffLimitExceeded"]}]}), ns)

    done = wait_for_condition(client, ns, "ruled", "Failed", timeout=60)

    events = job_events(client, done)
    assert count_events(events, "FailurePolicy_failurePolicyRule0") >= 1
    assert conditions(done)["Failed"]["reason"] == "ReachedMaxRestarts"
    assert done["status"]["restarts"] == 1


def test_without_a_failure_policy_the_first_failed_job_fails_the_set(
    client: KubeClient, ns: str
) -> None:
    client.create(JOBSETS, jobset("plain", ns, replicated_job("leader", codes="1")), ns)

    done = wait_for_condition(client, ns, "plain", "Failed")

    failed = conditions(done)["Failed"]
    assert (failed["reason"], failed["message"]) == (
        "FailedJobs", "jobset failed due to one or more job failures (first failed job: "
        "plain-leader-0)")


def test_suspend_keeps_every_job_suspended_and_resume_runs_them(
    client: KubeClient, ns: str
) -> None:
    client.create(JOBSETS, jobset("paused", ns, replicated_job("workers", replicas=2),
                                  suspend=True), ns)
    suspended = wait_for_condition(client, ns, "paused", "Suspended")
    assert (conditions(suspended)["Suspended"]["reason"],
            conditions(suspended)["Suspended"]["message"]) == ("SuspendedJobs",
                                                              "jobset is suspended")
    jobs = wait_for(lambda: jobs_of(client, ns), lambda found: len(found) == 2,
                    what="two Jobs made suspended")
    assert all(j["spec"]["suspend"] is True for j in jobs.values())
    wait_for(lambda: get(client, ns, "paused"),
             lambda js: bool(js) and rjob_status(js)[:1] == [{
                 "name": "workers", "ready": 0, "succeeded": 0, "failed": 0, "active": 0,
                 "suspended": 2}],
             what="replicatedJobsStatus counting two suspended Jobs")

    client.patch(JOBSETS, "paused", {"spec": {"suspend": False}}, namespace=ns)

    done = wait_for_condition(client, ns, "paused", "Completed")
    resumed = conditions(done)["Suspended"]
    assert (resumed["status"], resumed["reason"], resumed["message"]) == (
        "False", "ResumeJobs", "jobset is resumed")


def test_in_order_start_up_makes_the_next_replicated_job_once_the_first_is_ready(
    client: KubeClient, ns: str
) -> None:
    client.create(JOBSETS, jobset(
        "ordered", ns, replicated_job("driver", run_s=3), replicated_job("workers", replicas=2),
        startupPolicy={"startupPolicyOrder": "InOrder"}), ns)

    in_progress = wait_for_condition(client, ns, "ordered", "StartupPolicyInProgress")
    assert conditions(in_progress)["StartupPolicyInProgress"]["reason"] == (
        "InOrderStartupPolicyInProgress")
    first = jobs_of(client, ns)
    assert "ordered-workers-0" not in first or "ordered-driver-0" in first

    done = wait_for_condition(client, ns, "ordered", "StartupPolicyCompleted")
    completed = conditions(done)["StartupPolicyCompleted"]
    assert completed["message"] == "in order startup policy has completed"
    assert conditions(done)["StartupPolicyInProgress"]["status"] == "False"
    jobs = jobs_of(client, ns)
    created = {n: j["metadata"]["creationTimestamp"] for n, j in jobs.items()}
    assert created["ordered-driver-0"] <= created["ordered-workers-0"]
    wait_for_condition(client, ns, "ordered", "Completed")


def test_an_invalid_jobset_fails_saying_what_upstreams_webhook_says(
    client: KubeClient, ns: str
) -> None:
    client.create(JOBSETS, jobset(
        "wrong", ns, replicated_job("leader"),
        successPolicy={"operator": "All", "targetReplicatedJobs": ["nobody"]}), ns)

    done = wait_for_condition(client, ns, "wrong", "Failed")

    failed = conditions(done)["Failed"]
    assert failed["reason"] == "FailedValidation"
    assert ("invalid replicatedJob name 'nobody' does not appear in .spec.ReplicatedJobs"
            in failed["message"]), failed
    assert jobs_of(client, ns) == {}
