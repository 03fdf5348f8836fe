"""What `kubectl get jobs` and `kubectl get cronjobs` show, cell by cell, as kube-apiserver's
printJob and printCronJob fill them: a Job's STATUS by the order of its conditions'
precedence, COMPLETIONS for fixed counts and work queues, DURATION while running and once
done; a CronJob's zone, suspension, active Jobs and last schedule; the `-o wide` columns."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from engine.cluster.apiserver.printing.batch_printers import CRONJOB_PRINTER, JOB_PRINTER

NOW = datetime.datetime(2026, 11, 30, 12, 0, 0, tzinfo=datetime.UTC)
CREATED = "2026-11-30T11:00:00Z"  # an hour before NOW
TEMPLATE = {"spec": {"containers": [{"name": "main", "image": "busybox:1.36"},
                                    {"name": "side", "image": "nginx"}]}}


def job(*conditions: tuple[str, str], deleting: bool = False, **spec: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "pi", "creationTimestamp": CREATED}
    if deleting:
        metadata["deletionTimestamp"] = "2026-11-30T11:59:00Z"
    status = spec.pop("status", {})
    return {
        "metadata": metadata,
        "spec": {"template": TEMPLATE, **spec},
        "status": {**status, "conditions": [{"type": t, "status": s} for t, s in conditions]},
    }


def cells(obj: dict[str, Any]) -> list[Any]:
    return JOB_PRINTER.cells(obj, NOW)


def status_cell(obj: dict[str, Any]) -> str:
    return str(cells(obj)[1])


def test_the_job_columns_are_kubectls_with_the_wide_three_at_priority_one() -> None:
    assert [(c.name, c.type, c.priority) for c in JOB_PRINTER.columns] == [
        ("Name", "string", 0), ("Status", "string", 0), ("Completions", "string", 0),
        ("Duration", "string", 0), ("Age", "string", 0), ("Containers", "string", 1),
        ("Images", "string", 1), ("Selector", "string", 1)]


def test_a_finished_job_reads_as_kubectl_shows_it() -> None:
    done = job(("Complete", "True"), completions=3,
               selector={"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}},
               status={"succeeded": 3, "startTime": "2026-11-30T11:00:00Z",
                       "completionTime": "2026-11-30T11:03:02Z"})
    assert cells(done) == ["pi", "Complete", "3/3", "3m2s", "60m", "main,side",
                           "busybox:1.36,nginx", "batch.kubernetes.io/controller-uid=u1"]


@pytest.mark.parametrize(("conditions", "deleting", "status"), [
    ((), False, "Running"),
    ((("Complete", "False"), ("Failed", "False")), False, "Running"),
    ((("FailureTarget", "True"),), False, "FailureTarget"),
    ((("FailureTarget", "True"), ("Suspended", "True")), False, "Suspended"),
    ((("Suspended", "True"),), True, "Terminating"),
    ((("Failed", "True"),), True, "Failed"),
    ((("Failed", "True"), ("Complete", "True")), False, "Complete"),
    ((("SuccessCriteriaMet", "True"),), False, "Running"),
])
def test_the_status_is_the_first_that_holds_in_kubectls_order(
    conditions: tuple[tuple[str, str], ...], deleting: bool, status: str
) -> None:
    assert status_cell(job(*conditions, deleting=deleting)) == status


def test_only_the_first_condition_of_a_type_counts() -> None:
    assert status_cell(job(("Complete", "False"), ("Complete", "True"))) == "Running"
    assert status_cell(job(("Failed", "True"), ("Failed", "False"))) == "Failed"


@pytest.mark.parametrize(("spec", "succeeded", "shown"), [
    ({"completions": 3}, 2, "2/3"),
    ({"completions": 0, "parallelism": 4}, 0, "0/0"),
    ({"parallelism": 3}, 1, "1/1 of 3"),
    ({"parallelism": 1}, 0, "0/1"),
    ({}, 0, "0/1"),
])
def test_completions_count_successes_against_what_is_wanted(
    spec: dict[str, Any], succeeded: int, shown: str
) -> None:
    assert cells(job(**spec, status={"succeeded": succeeded}))[2] == shown


def test_the_duration_runs_to_now_until_the_job_completes() -> None:
    assert cells(job())[3] == ""
    running = job(status={"startTime": "2026-11-30T11:58:05Z"})
    assert cells(running)[3] == "115s"
    done = job(status={"startTime": "2026-11-30T09:00:00Z",
                       "completionTime": "2026-11-30T10:30:00Z"})
    assert cells(done)[3] == "90m"


def test_a_job_without_selector_or_containers_shows_none_and_empty_cells() -> None:
    bare = {"metadata": {"name": "bare", "creationTimestamp": CREATED}, "spec": {},
            "status": {}}
    assert cells(bare) == ["bare", "Running", "0/1", "", "60m", "", "", "<none>"]


def cronjob(**spec: Any) -> dict[str, Any]:
    status = spec.pop("status", {})
    return {
        "metadata": {"name": "nightly", "creationTimestamp": "2026-11-28T12:00:00Z"},
        "spec": {"schedule": "0 3 * * *",
                 "jobTemplate": {"spec": {"template": TEMPLATE}}, **spec},
        "status": status,
    }


def cron_cells(obj: dict[str, Any]) -> list[Any]:
    return CRONJOB_PRINTER.cells(obj, NOW)


def test_the_cronjob_columns_are_kubectls() -> None:
    assert [(c.name, c.type, c.priority) for c in CRONJOB_PRINTER.columns] == [
        ("Name", "string", 0), ("Schedule", "string", 0), ("Timezone", "string", 0),
        ("Suspend", "boolean", 0), ("Active", "integer", 0), ("Last Schedule", "string", 0),
        ("Age", "string", 0), ("Containers", "string", 1), ("Images", "string", 1),
        ("Selector", "string", 1)]


def test_a_new_cronjob_has_no_zone_no_active_jobs_and_no_last_schedule() -> None:
    assert cron_cells(cronjob(suspend=False)) == [
        "nightly", "0 3 * * *", "<none>", "False", 0, "<none>", "2d", "main,side",
        "busybox:1.36,nginx", "<none>"]


def test_a_scheduled_cronjob_shows_its_zone_active_jobs_and_last_schedule() -> None:
    busy = cronjob(timeZone="Europe/Berlin", suspend=True,
                   status={"active": [{"name": "nightly-1"}, {"name": "nightly-2"}],
                           "lastScheduleTime": "2026-11-30T03:00:00Z"})
    assert cron_cells(busy)[2:6] == ["Europe/Berlin", "True", 2, "9h"]


def test_an_unset_suspend_reads_unset() -> None:
    assert cron_cells(cronjob())[3] == "<unset>"


def test_the_wide_selector_is_the_job_templates() -> None:
    templated = cronjob()
    templated["spec"]["jobTemplate"]["spec"]["selector"] = {
        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["batch"]}]}
    assert cron_cells(templated)[-1] == "tier in (batch)"
