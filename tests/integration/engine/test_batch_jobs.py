"""batch/v1 Jobs run by machines/batch-job.yaml on the embedded API server, through the
official Python client as Kueue, Argo and Airflow would make them.

The simulated node runs each pod for `run-seconds` and exits with its `exit-codes`. The
Job's status is the Job API's (the API server validates every status write as it does for
a Job controller), and the engine's own record is in the jobmachine.dev/status annotation.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from kubernetes import client as k8s

from engine.controller.machines.revisions import machine_in_name
from engine.controller.reconcile.native_status import ENGINE_STATUS_ANNOTATION
from engine.controller.reconcile.record import state_of
from engine.kube.client import KubeClient
from engine.kube.resources import PODS, Resource
from engine.settings import EngineSettings
from tests.integration.engine.helpers import (
    EXIT_CODES,
    FAST,
    RUN_SECONDS,
    Obj,
    new_namespace,
    official_client,
    running_engineless,
    start_engine,
    wait_for,
)
from tests.integration.engine.machinejobs import most_live_at_once, recording

JOBS_WAIT_S = 60.0
EVENTS = Resource("", "v1", "events", "Event", namespaced=True)


def job(name: str, *, codes: str = "0", run_s: float = 0.3, **spec: Any) -> Obj:
    """A Job whose pods run `run_s` seconds and exit with `codes` (one per attempt)."""
    return {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
        "spec": {**spec, "template": {
            "metadata": {"annotations": {EXIT_CODES: codes, RUN_SECONDS: str(run_s)}},
            "spec": {"restartPolicy": "Never",
                     "containers": [{"name": "work", "image": "busybox"}]},
        }},
    }


def finished(batch: k8s.BatchV1Api, ns: str, name: str) -> Obj:
    """The Job once it has a Complete or Failed condition, as the API server has it."""
    def read() -> Obj:
        return batch.api_client.sanitize_for_serialization(batch.read_namespaced_job(name, ns))

    def ended(found: Obj) -> bool:
        return any(c["type"] in ("Complete", "Failed") and c["status"] == "True"
                   for c in (found.get("status") or {}).get("conditions") or ())

    done = wait_for(read, ended, what=f"job {ns}/{name} to finish", timeout=JOBS_WAIT_S)
    assert done is not None
    return done


def conditions(found: Obj) -> list[tuple[str, str, str]]:
    return [(c["type"], c["status"], c["reason"]) for c in found["status"]["conditions"]]


def test_a_job_of_completions_runs_parallelism_at_a_time_and_completes(
    client: KubeClient, batch: k8s.BatchV1Api, ns: str
) -> None:
    with recording(client, PODS, ns) as pod_log:
        batch.create_namespaced_job(ns, job("pool", completions=6, parallelism=2))
        done = finished(batch, ns, "pool")
        events = pod_log.through(done["metadata"]["resourceVersion"])

    assert most_live_at_once(events) == 2
    status = done["status"]
    assert conditions(done) == [("SuccessCriteriaMet", "True", "CompletionsReached"),
                                ("Complete", "True", "CompletionsReached")]
    assert status["succeeded"] == 6
    assert (status["ready"], status["terminating"], status["uncountedTerminatedPods"]) == (
        0, 0, {})
    assert "active" not in status and "failed" not in status
    assert status["completionTime"] >= status["startTime"]
    record = json.loads(done["metadata"]["annotations"][ENGINE_STATUS_ANNOTATION])
    assert (state_of(record), machine_in_name(record["machine"])) == ("Complete", "batch-job")


def test_an_indexed_job_lists_its_completed_indexes(
    client: KubeClient, batch: k8s.BatchV1Api, ns: str
) -> None:
    sidecar = {"name": "side", "image": "busybox"}
    indexed = job("shards", completions=3, parallelism=3, completionMode="Indexed")
    indexed["spec"]["template"]["spec"]["containers"].append(sidecar)
    indexed["spec"]["template"]["spec"]["initContainers"] = [{**sidecar, "name": "setup"}]
    batch.create_namespaced_job(ns, indexed)
    done = finished(batch, ns, "shards")
    assert done["status"]["completedIndexes"] == "0-2"
    pods, _ = client.list(PODS, ns)
    for pod in pods:
        index = pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"]
        assert pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] == index
        assert pod["spec"]["hostname"] == f"shards-{index}"
        for container in (*pod["spec"]["containers"], *pod["spec"]["initContainers"]):
            env = {e["name"]: e for e in container["env"]}
            assert env["JOB_COMPLETION_INDEX"]["valueFrom"]["fieldRef"]["fieldPath"] == (
                "metadata.labels['batch.kubernetes.io/job-completion-index']")


def test_more_failures_than_the_backoff_limit_fail_the_job(
    batch: k8s.BatchV1Api, ns: str
) -> None:
    batch.create_namespaced_job(ns, job("flaky", codes="3", backoffLimit=1))
    done = finished(batch, ns, "flaky")
    assert conditions(done) == [("FailureTarget", "True", "BackoffLimitExceeded"),
                                ("Failed", "True", "BackoffLimitExceeded")]
    assert done["status"]["conditions"][-1]["message"] == (
        "Job has reached the specified backoff limit")
    assert done["status"]["failed"] == 2
    assert "completionTime" not in done["status"]


def test_a_fail_job_rule_of_the_pod_failure_policy_fails_the_job_at_once(
    batch: k8s.BatchV1Api, ns: str
) -> None:
    rules = [{"action": "FailJob",
              "onExitCodes": {"containerName": "work", "operator": "In", "values": [42]}}]
    batch.create_namespaced_job(ns, job("buggy", codes="42", backoffLimit=6,
                                        podFailurePolicy={"rules": rules}))
    done = finished(batch, ns, "buggy")
    assert conditions(done) == [("FailureTarget", "True", "PodFailurePolicy"),
                                ("Failed", "True", "PodFailurePolicy")]
    assert done["status"]["conditions"][-1]["message"] == (
        f"Container work for pod {ns}/buggy-job-0 failed with exit code 42 matching FailJob "
        "rule at index 0")
    assert done["status"]["failed"] == 1  # that pod; failed at once, no retry


def test_an_ignore_rule_replaces_the_pod_without_counting_it(
    batch: k8s.BatchV1Api, ns: str
) -> None:
    rules = [{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [7]}}]
    batch.create_namespaced_job(ns, job("tolerant", codes="7,0", backoffLimit=0,
                                        podFailurePolicy={"rules": rules}))
    done = finished(batch, ns, "tolerant")
    assert conditions(done)[-1] == ("Complete", "True", "CompletionsReached")
    assert done["status"]["succeeded"] == 1 and "failed" not in done["status"]


def test_a_suspended_job_creates_no_pod_until_resumed(
    client: KubeClient, batch: k8s.BatchV1Api, ns: str
) -> None:
    batch.create_namespaced_job(ns, job("held", suspend=True))
    wait_for(lambda: batch.read_namespaced_job("held", ns),
             lambda found: any(c.type == "Suspended" and c.status == "True"
                               for c in found.status.conditions or ()),
             what="Suspended condition", timeout=JOBS_WAIT_S)
    assert client.list(PODS, ns)[0] == []
    assert batch.read_namespaced_job("held", ns).status.start_time is None
    batch.patch_namespaced_job("held", ns, {"spec": {"suspend": False}})
    done = finished(batch, ns, "held")
    suspended = next(c for c in done["status"]["conditions"] if c["type"] == "Suspended")
    assert (suspended["status"], suspended["reason"], suspended["message"]) == (
        "False", "JobResumed", "Job resumed")


def test_a_job_managed_by_another_controller_is_left_alone(
    client: KubeClient, batch: k8s.BatchV1Api, ns: str
) -> None:
    batch.create_namespaced_job(ns, job("theirs", managedBy="kueue.x-k8s.io/multikueue"))
    batch.create_namespaced_job(ns, job("ours"))
    finished(batch, ns, "ours")
    theirs = batch.read_namespaced_job("theirs", ns)
    assert theirs.status.conditions is None and theirs.status.start_time is None
    assert not (theirs.metadata.finalizers or [])
    owners = {ref["name"] for pod in client.list(PODS, ns)[0]
              for ref in pod["metadata"].get("ownerReferences") or ()}
    assert owners == {"ours"}


def test_in_a_cluster_only_jobs_managed_by_jobmachine_are_run() -> None:
    """Without standing in for the built-in job controller (a real cluster, where it runs
    every other Job), the engine runs only Jobs whose spec.managedBy names it."""
    settings = EngineSettings(**{**FAST.model_dump(), "stand_in_for_built_ins": False})
    with running_engineless() as server:
        admin = KubeClient.from_kubeconfig(server.kubeconfig)
        engine = start_engine(KubeClient.from_kubeconfig(server.kubeconfig), settings)
        try:
            ns = new_namespace(admin)
            with official_client(server.kubeconfig) as api:
                batch = k8s.BatchV1Api(api)
                batch.create_namespaced_job(ns, job("builtin"))
                batch.create_namespaced_job(
                    ns, job("ours", managedBy="jobmachine.dev/job-controller"))
                finished(batch, ns, "ours")
                builtin = batch.read_namespaced_job("builtin", ns)
            assert builtin.status.conditions is None
            assert _pod_owners(admin, ns) == {"ours"}
        finally:
            engine.stop()
            admin.close()


def _pod_owners(client: KubeClient, ns: str) -> set[str]:
    pods: Sequence[Mapping[str, Any]] = client.list(PODS, ns)[0]
    return {ref["name"] for pod in pods for ref in pod["metadata"].get("ownerReferences") or ()}


def test_a_success_policy_completes_the_job_with_its_reason(
    batch: k8s.BatchV1Api, ns: str
) -> None:
    batch.create_namespaced_job(ns, job(
        "led", completions=3, parallelism=3, completionMode="Indexed",
        successPolicy={"rules": [{"succeededCount": 1}]}))
    done = finished(batch, ns, "led")
    assert conditions(done) == [("SuccessCriteriaMet", "True", "SuccessPolicy"),
                                ("Complete", "True", "SuccessPolicy")]
    assert done["status"]["conditions"][0]["message"] == "Matched rules at index 0"


def test_indexes_fail_on_their_own_and_too_many_fail_the_job(
    client: KubeClient, batch: k8s.BatchV1Api, ns: str
) -> None:
    batch.create_namespaced_job(ns, job(
        "shaky", codes="1", completions=3, parallelism=3, completionMode="Indexed",
        backoffLimitPerIndex=0, maxFailedIndexes=1))
    done = finished(batch, ns, "shaky")
    assert conditions(done) == [("FailureTarget", "True", "MaxFailedIndexesExceeded"),
                                ("Failed", "True", "MaxFailedIndexesExceeded")]
    assert done["status"]["conditions"][-1]["message"] == (
        "Job has exceeded the specified maximal number of failed indexes")
    assert len(done["status"]["failedIndexes"].replace("-", ",").split(",")) >= 2
    assert done["spec"]["backoffLimit"] == 2**31 - 1  # the API's default with per-index limits
    pods, _ = client.list(PODS, ns)
    assert {p["metadata"]["annotations"]["batch.kubernetes.io/job-index-failure-count"]
            for p in pods} == {"0"}


def test_a_fail_index_rule_fails_only_that_index(batch: k8s.BatchV1Api, ns: str) -> None:
    batch.create_namespaced_job(ns, job(
        "picky", codes="3", completions=2, parallelism=2, completionMode="Indexed",
        backoffLimitPerIndex=4,
        podFailurePolicy={"rules": [{"action": "FailIndex",
                                     "onExitCodes": {"operator": "In", "values": [3]}}]}))
    done = finished(batch, ns, "picky")
    assert conditions(done) == [("FailureTarget", "True", "FailedIndexes"),
                                ("Failed", "True", "FailedIndexes")]
    assert (done["status"]["failedIndexes"], done["status"]["failed"]) == ("0,1", 2)


def test_a_job_posts_the_job_controllers_events_only(client: KubeClient, batch: k8s.BatchV1Api,
                                                      ns: str) -> None:
    """No `Created in Active` on creation (the job controller posts nothing then)."""
    batch.create_namespaced_job(ns, job("quiet"))
    finished(batch, ns, "quiet")
    events = wait_for(
        lambda: [e["reason"] for e in client.list(EVENTS, ns)[0]
                 if e["involvedObject"]["name"] == "quiet"],
        lambda found: "Completed" in found, what="the Completed event", timeout=JOBS_WAIT_S)
    assert sorted(set(events)) == ["Completed", "SuccessfulCreate"]


SIGTERM_IGNORED = {"rules": [{"action": "Ignore",
                              "onExitCodes": {"operator": "In", "values": [143]}}]}


@pytest.mark.parametrize(
    ("spec", "ends"),
    [
        # Failed: the deleted pod ends with SIGTERM's 143, which the rule ignores.
        ({"podFailurePolicy": SIGTERM_IGNORED}, ("Complete", "True", "CompletionsReached")),
        # Failed, no rule matches 143: counted once the pod has ended.
        ({"podReplacementPolicy": "Failed"}, ("Failed", "True", "BackoffLimitExceeded")),
        # TerminatingOrFailed, the default without a pod failure policy (the API server
        # refuses it with one): counted when the deletion starts.
        ({}, ("Failed", "True", "BackoffLimitExceeded")),
    ],
    ids=["failed-ignored", "failed-counted", "terminating-or-failed"],
)
def test_a_deleted_pod_is_judged_as_the_pod_replacement_policy_says(
    client: KubeClient, batch: k8s.BatchV1Api, ns: str, spec: dict[str, Any],
    ends: tuple[str, str, str],
) -> None:
    batch.create_namespaced_job(ns, job("judged", run_s=4.0, backoffLimit=0, **spec))
    running = wait_for(
        lambda: [p for p in client.list(PODS, ns)[0]
                 if (p.get("status") or {}).get("phase") == "Running"],
        bool, what="the Job's pod to run", timeout=JOBS_WAIT_S)
    client.delete(PODS, running[0]["metadata"]["name"], ns)
    done = finished(batch, ns, "judged")
    assert conditions(done)[-1] == ends


def _said(client: KubeClient, ns: str, name: str, reason: str) -> list[str]:
    """The messages of the Job's Events of `reason`, sorted, each as many times as it was
    said (the recorder counts repeats in one Event, as client-go's does)."""
    return sorted(e["message"] for e in client.list(EVENTS, ns)[0]
                  if e["involvedObject"]["name"] == name and e["reason"] == reason
                  for _ in range(e.get("count") or 1))


def test_a_suspension_says_each_running_pod_it_deletes(
    client: KubeClient, batch: k8s.BatchV1Api, ns: str
) -> None:
    """As the job controller's pod control: SuccessfulDelete `Deleted pod: <name>` for
    each active pod a sync deletes (here the suspension's)."""
    batch.create_namespaced_job(ns, job("paused", run_s=600, completions=2, parallelism=2))
    wait_for(lambda: batch.read_namespaced_job("paused", ns).status.active,
             lambda active: active == 2, what="two active pods", timeout=JOBS_WAIT_S)
    batch.patch_namespaced_job("paused", ns, {"spec": {"suspend": True}})
    said = wait_for(lambda: _said(client, ns, "paused", "SuccessfulDelete"),
                    lambda found: len(found) == 2, what="a SuccessfulDelete per pod",
                    timeout=JOBS_WAIT_S)
    assert said == ["Deleted pod: paused-job-0", "Deleted pod: paused-job-1"]


def test_a_failed_pod_the_engine_replaces_is_not_said_deleted(
    client: KubeClient, batch: k8s.BatchV1Api, ns: str
) -> None:
    """The engine deletes a failed pod before it makes its replacement (a difference from
    the job controller, which keeps it and never deletes an ended pod): no
    SuccessfulDelete, as the job controller posts none for it."""
    batch.create_namespaced_job(ns, job("again", codes="1,0"))
    done = finished(batch, ns, "again")
    assert done["status"]["succeeded"] == 1 and done["status"]["failed"] == 1
    assert _said(client, ns, "again", "SuccessfulCreate") == ["Created pod: again-job-0"] * 2
    assert _said(client, ns, "again", "SuccessfulDelete") == []
