"""batch/v1 CronJobs run by machines/batch-cronjob.yaml on `jobmachine up`, through the
official Python client: Jobs made on schedule (`@every 2s` keeps the tests short), run by
the batch-job machine, counted back into the CronJob's status, trimmed to the history
limits; concurrency policies, suspend and a broken time zone.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from kubernetes import client as k8s

from engine.controller.schedules.plan import SCHEDULED_TIMESTAMP_ANNOTATION
from engine.kube.client import KubeClient
from engine.kube.resources import Resource
from tests.integration.engine.helpers import EXIT_CODES, RUN_SECONDS, Obj, wait_for

EVENTS = Resource("", "v1", "events", "Event", namespaced=True)
WAIT_S = 60.0


def cronjob(name: str, *, schedule: str = "@every 2s", run_s: float = 0.2, codes: str = "0",
            **spec: Any) -> Obj:
    return {
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
        "spec": {"schedule": schedule, **spec, "jobTemplate": {
            "metadata": {"labels": {"made-by": name}},
            "spec": {"backoffLimit": 0, "template": {
                "metadata": {"annotations": {EXIT_CODES: codes, RUN_SECONDS: str(run_s)}},
                "spec": {"restartPolicy": "Never",
                         "containers": [{"name": "work", "image": "busybox"}]}}}}},
    }


def read(batch: k8s.BatchV1Api, ns: str, name: str) -> Obj:
    found = batch.read_namespaced_cron_job(name, ns)
    return dict(batch.api_client.sanitize_for_serialization(found))


def jobs_of(batch: k8s.BatchV1Api, ns: str, name: str) -> list[Obj]:
    listed = batch.list_namespaced_job(ns, label_selector=f"made-by={name}")
    return [dict(batch.api_client.sanitize_for_serialization(j)) for j in listed.items]


def reasons(client: KubeClient, ns: str, name: str) -> list[str]:
    events, _ = client.list(EVENTS, ns)
    return [e["reason"] for e in events if e["involvedObject"]["name"] == name]


def finished_jobs(jobs: list[Obj], outcome: str) -> list[Obj]:
    return [j for j in jobs if any(c["type"] == outcome and c["status"] == "True"
                                   for c in (j.get("status") or {}).get("conditions") or ())]


def owned_job(batch: k8s.BatchV1Api, ns: str, cron: Obj, name: str, *, run_s: float) -> Obj:
    """A Job the CronJob owns (as one it made would be), running `run_s` seconds."""
    made = job_of(cron["metadata"]["name"], run_s=run_s)
    made["metadata"] = {"name": name, "labels": {"made-by": cron["metadata"]["name"]},
                        "ownerReferences": [{
                            "apiVersion": "batch/v1", "kind": "CronJob",
                            "name": cron["metadata"]["name"], "uid": cron["metadata"]["uid"],
                            "controller": True, "blockOwnerDeletion": True}]}
    created = batch.create_namespaced_job(ns, made)
    return dict(batch.api_client.sanitize_for_serialization(created))


def job_of(name: str, *, run_s: float) -> Obj:
    template = cronjob(name, run_s=run_s)["spec"]["jobTemplate"]
    return {"apiVersion": "batch/v1", "kind": "Job", "spec": template["spec"]}


def reference(made: Obj) -> Obj:
    metadata = made["metadata"]
    return {"apiVersion": "batch/v1", "kind": "Job", "name": metadata["name"],
            "namespace": metadata["namespace"], "uid": metadata["uid"]}


def running_since_minutes_ago(batch: k8s.BatchV1Api, ns: str, name: str, policy: str) -> None:
    """A CronJob due every minute whose Job `<name>-earlier` was made two minutes ago and
    still runs (its status says so, as the controller before would have written it);
    then resumed, so the current minute is due at once."""
    cron = read_created(batch, ns, cronjob(name, schedule="* * * * *", suspend=True,
                                           concurrencyPolicy=policy))
    running = owned_job(batch, ns, cron, f"{name}-earlier", run_s=60)
    earlier = (datetime.now(UTC) - timedelta(minutes=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    batch.patch_namespaced_cron_job_status(name, ns, {"status": {
        "active": [reference(running)], "lastScheduleTime": earlier}})
    batch.patch_namespaced_cron_job(name, ns, {"spec": {"suspend": False}})


def test_a_cronjob_makes_a_job_that_its_status_follows(
    client: KubeClient, batch: k8s.BatchV1Api, ns: str
) -> None:
    batch.create_namespaced_cron_job(ns, cronjob("ticker"))
    status = wait_for(lambda: read(batch, ns, "ticker")["status"],
                      lambda found: found.get("lastSuccessfulTime") is not None,
                      what="a scheduled Job succeeded", timeout=WAIT_S)
    # The Job that succeeded: a minute begun since may already have made the next one.
    made = next(job for job in jobs_of(batch, ns, "ticker")
                if (job.get("status") or {}).get("succeeded"))
    owner = made["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("CronJob", "ticker", True)
    minutes = int(made["metadata"]["name"].removeprefix("ticker-"))
    stamp = made["metadata"]["annotations"][SCHEDULED_TIMESTAMP_ANNOTATION]
    assert int(datetime.fromisoformat(stamp).timestamp()) // 60 == minutes
    assert made["metadata"]["labels"]["made-by"] == "ticker"
    # `@every 2s` is due again within the minute, under the same name: that due time is
    # taken as made by the Job of the minute, so lastScheduleTime may be a later one of it.
    last = datetime.fromisoformat(status["lastScheduleTime"])
    assert last >= datetime.fromisoformat(stamp)
    assert int(last.timestamp()) // 60 >= minutes
    # The Job that succeeded left `active` (a minute that began since may have made the
    # next one, under the next minute's name).
    assert made["metadata"]["name"] not in [a["name"] for a in status.get("active") or ()]
    # Events are posted by a background thread, after the status write may have returned.
    wait_for(lambda: set(reasons(client, ns, "ticker")),
             lambda found: {"SuccessfulCreate", "SawCompletedJob"} <= found,
             what="the CronJob's events", timeout=WAIT_S)


def test_the_oldest_finished_jobs_beyond_the_history_limit_are_deleted(
    client: KubeClient, batch: k8s.BatchV1Api, ns: str
) -> None:
    cron = read_created(batch, ns, cronjob("kept", suspend=True, successfulJobsHistoryLimit=1))
    for name in ("kept-a", "kept-b", "kept-c"):
        owned_job(batch, ns, cron, name, run_s=0.1)
    wait_for(lambda: [j["metadata"]["name"] for j in jobs_of(batch, ns, "kept")],
             lambda names: names == ["kept-c"], what="only the newest Job kept", timeout=WAIT_S)
    wait_for(lambda: reasons(client, ns, "kept"),
             lambda found: found.count("SuccessfulDelete") == 2,
             what="an Event for each deleted Job", timeout=WAIT_S)


def test_forbid_skips_a_due_time_while_a_job_runs(
    client: KubeClient, batch: k8s.BatchV1Api, ns: str
) -> None:
    running_since_minutes_ago(batch, ns, "single", "Forbid")
    wait_for(lambda: reasons(client, ns, "single"), lambda found: "JobAlreadyActive" in found,
             what="the due time skipped", timeout=WAIT_S)
    assert [j["metadata"]["name"] for j in jobs_of(batch, ns, "single")] == ["single-earlier"]


def test_replace_deletes_the_running_job_and_makes_the_due_one(
    client: KubeClient, batch: k8s.BatchV1Api, ns: str
) -> None:
    running_since_minutes_ago(batch, ns, "fresh", "Replace")
    status = wait_for(lambda: read(batch, ns, "fresh")["status"],
                      lambda found: [a["name"] for a in found.get("active") or ()
                                     if a["name"] != "fresh-earlier"] != [],
                      what="the due Job made", timeout=WAIT_S)
    assert [a["name"] for a in status["active"]] != ["fresh-earlier"]
    assert len(status["active"]) == 1
    assert "SuccessfulDelete" in reasons(client, ns, "fresh")


def test_a_suspended_cronjob_makes_no_job_until_resumed(
    client: KubeClient, batch: k8s.BatchV1Api, ns: str
) -> None:
    batch.create_namespaced_cron_job(ns, cronjob("paused", suspend=True))
    batch.create_namespaced_cron_job(ns, cronjob("witness"))
    wait_for(lambda: reasons(client, ns, "witness"), lambda found: "SuccessfulCreate" in found,
             what="the witness made a Job", timeout=WAIT_S)
    assert jobs_of(batch, ns, "paused") == []
    batch.patch_namespaced_cron_job("paused", ns, {"spec": {"suspend": False}})
    wait_for(lambda: jobs_of(batch, ns, "paused"), lambda found: len(found) == 1,
             what="a Job after resuming", timeout=WAIT_S)


def read_created(batch: k8s.BatchV1Api, ns: str, cron: Obj) -> Obj:
    created = batch.create_namespaced_cron_job(ns, cron)
    return dict(batch.api_client.sanitize_for_serialization(created))
