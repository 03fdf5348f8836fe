"""One sync of a schedule (a CronJob's), decided: the cases of the CronJob controller's own
table (cronjob_controllerv2_test.go, TestControllerV2SyncCronJob) that concern what it
decides, with its Events' reasons and words."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from engine.controller.schedules.plan import (
    SCHEDULED_TIMESTAMP_ANNOTATION,
    Child,
    ScheduleInput,
    SchedulePlan,
    child_name,
    plan_schedule,
)
from engine.definition import RenderedSchedule

T0 = datetime(2026, 11, 28, 10, 0, tzinfo=UTC)
"""The CronJob's creation; its schedule `0 * * * *` is due at every full hour."""
OWNER = {"apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly", "uid": "cj-uid",
         "controller": True, "blockOwnerDeletion": True}


def cronjob() -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "nightly", "namespace": "team", "uid": "cj-uid",
                         "creationTimestamp": "2026-11-28T10:00:00Z"}}


def schedule(**changes: Any) -> RenderedSchedule:
    values: dict[str, Any] = {
        "cron": "0 * * * *", "time_zone": None, "starting_deadline_seconds": None,
        "concurrency_policy": "Allow", "successful_history_limit": 3,
        "failed_history_limit": 1, "child_api_version": "batch/v1", "child_kind": "Job",
        "child_labels": {"team": "ml"}, "child_annotations": {"note": "x"},
        "child_spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
    }
    return RenderedSchedule(**{**values, **changes})


def job(name: str, *, outcome: str | None = None, start: str | None = None,
        completed: str | None = None) -> Child:
    status: dict[str, Any] = {}
    if outcome:
        status["conditions"] = [{"type": outcome, "status": "True"}]
    if start:
        status["startTime"] = start
    if completed:
        status["completionTime"] = completed
    return Child({"apiVersion": "batch/v1", "kind": "Job",
                  "metadata": {"name": name, "namespace": "team", "uid": f"uid-{name}",
                               "resourceVersion": "7", "ownerReferences": [OWNER]},
                  "status": status})


def ref(name: str) -> dict[str, Any]:
    return job(name).reference()


def plan(now: datetime, *, stored: dict[str, Any] | None = None,
         children: tuple[Child, ...] = (), missing: frozenset[str] = frozenset(),
         suspended: bool = False, **changes: Any) -> SchedulePlan:
    return plan_schedule(ScheduleInput(
        job=cronjob(), stored=stored or {}, children=children, missing=missing,
        schedule=schedule(**changes), now=now, suspended=suspended, owner_reference=OWNER))


def reasons(found: SchedulePlan) -> list[str]:
    return [notice.reason for notice in found.notices]


def test_nothing_is_due_before_the_first_time() -> None:
    found = plan(T0 + timedelta(minutes=30))
    assert found.creation is None and found.notices == []
    assert found.wake_at == T0 + timedelta(hours=1, milliseconds=100)


def test_the_due_time_makes_a_job_named_for_it() -> None:
    due = T0 + timedelta(hours=1)
    found = plan(due + timedelta(seconds=5))
    assert found.creation is not None
    assert found.creation.scheduled == due
    assert found.creation.name == f"nightly-{int(due.timestamp()) // 60}"
    body = found.creation.body
    assert body["metadata"]["labels"] == {"team": "ml"}
    assert body["metadata"]["annotations"] == {
        "note": "x", SCHEDULED_TIMESTAMP_ANNOTATION: "2026-11-28T11:00:00Z"}
    assert body["metadata"]["ownerReferences"] == [OWNER]
    assert body["spec"] == schedule().child_spec
    assert found.wake_at == due + timedelta(hours=1, milliseconds=100)


def test_the_scheduled_timestamp_is_written_in_the_time_zone() -> None:
    found = plan(T0 + timedelta(hours=1, seconds=1), time_zone="Europe/Berlin")
    assert found.creation is not None
    annotations = found.creation.body["metadata"]["annotations"]
    assert annotations[SCHEDULED_TIMESTAMP_ANNOTATION] == "2026-11-28T12:00:00+01:00"


def test_a_time_already_made_is_not_made_again() -> None:
    due = T0 + timedelta(hours=1)
    found = plan(due + timedelta(minutes=1),
                 stored={"lastScheduleTime": "2026-11-28T11:00:00Z"})
    assert found.creation is None


def test_only_the_latest_missed_time_is_made() -> None:
    found = plan(T0 + timedelta(hours=5, minutes=10))
    assert found.creation is not None
    assert found.creation.scheduled == T0 + timedelta(hours=5)
    assert reasons(found) == []


def test_more_than_a_hundred_missed_times_warn_but_still_run() -> None:
    found = plan(T0 + timedelta(hours=150, minutes=1))
    assert reasons(found) == ["TooManyMissedTimes"]
    assert found.notices[0].message == (
        "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check "
        "clock skew")
    assert found.creation is not None


def test_a_starting_deadline_skips_older_times() -> None:
    found = plan(T0 + timedelta(hours=150, minutes=1), starting_deadline_seconds=600)
    assert reasons(found) == []  # only times within the deadline are looked at
    assert found.creation is not None
    assert found.creation.scheduled == T0 + timedelta(hours=150)
    late = plan(T0 + timedelta(hours=2, minutes=30), starting_deadline_seconds=600)
    assert late.creation is None and late.notices == []


def test_forbid_skips_while_one_runs() -> None:
    running = job("nightly-1")
    found = plan(T0 + timedelta(hours=1, seconds=5), concurrency_policy="Forbid",
                 stored={"active": [ref("nightly-1")]}, children=(running,))
    assert found.creation is None
    assert [(n.type, n.reason, n.message) for n in found.notices] == [
        ("Normal", "JobAlreadyActive",
         "Not starting job because prior execution is running and concurrency policy is Forbid")]


def test_replace_deletes_the_running_ones_first() -> None:
    running = job("nightly-1")
    found = plan(T0 + timedelta(hours=1, seconds=5), concurrency_policy="Replace",
                 stored={"active": [ref("nightly-1")]}, children=(running,))
    assert found.deletions == [running]
    assert found.creation is not None and found.active == []


def test_allow_runs_them_side_by_side() -> None:
    running = job("nightly-1")
    found = plan(T0 + timedelta(hours=1, seconds=5), stored={"active": [ref("nightly-1")]},
                 children=(running,))
    assert found.deletions == [] and found.creation is not None
    assert found.active == [ref("nightly-1")]


def test_a_finished_job_leaves_active_and_a_success_is_remembered() -> None:
    done = job("nightly-1", outcome="Complete", start="2026-11-28T11:00:01Z",
               completed="2026-11-28T11:00:09Z")
    found = plan(T0 + timedelta(hours=1, minutes=1), children=(done,),
                 stored={"active": [ref("nightly-1")], "lastScheduleTime": "2026-11-28T11:00:00Z"})
    assert found.active == []
    assert [(n.reason, n.message) for n in found.notices] == [
        ("SawCompletedJob", "Saw completed job: nightly-1, status: Complete")]
    assert found.last_successful_time == "2026-11-28T11:00:09Z"
    assert found.status() == {"lastScheduleTime": "2026-11-28T11:00:00Z",
                              "lastSuccessfulTime": "2026-11-28T11:00:09Z"}


def test_a_failed_job_is_seen_too() -> None:
    lost = job("nightly-1", outcome="Failed", start="2026-11-28T11:00:01Z")
    found = plan(T0 + timedelta(hours=1, minutes=1), children=(lost,),
                 stored={"active": [ref("nightly-1")], "lastScheduleTime": "2026-11-28T11:00:00Z"})
    assert found.notices[0].message == "Saw completed job: nightly-1, status: Failed"
    assert found.last_successful_time is None


def test_an_unknown_running_child_is_reported() -> None:
    found = plan(T0 + timedelta(minutes=1), children=(job("by-hand"),))
    assert [(n.type, n.reason, n.message) for n in found.notices] == [
        ("Warning", "UnexpectedJob",
         "Saw a job that the controller did not create or forgot: by-hand")]


def test_a_vanished_active_job_is_dropped() -> None:
    found = plan(T0 + timedelta(minutes=1), stored={"active": [ref("nightly-1")]},
                 missing=frozenset({"uid-nightly-1"}))
    assert found.active == []
    assert [(n.reason, n.message) for n in found.notices] == [
        ("MissingJob", "Active job went missing: nightly-1")]


def test_history_keeps_the_newest_finished_jobs() -> None:
    succeeded = [job(f"ok-{i}", outcome="Complete", start=f"2026-11-28T1{i}:00:00Z")
                 for i in range(5)]
    failed = [job(f"bad-{i}", outcome="Failed", start=f"2026-11-28T1{i}:30:00Z")
              for i in range(3)]
    found = plan(T0 + timedelta(minutes=1), children=(*succeeded, *failed),
                 successful_history_limit=2, failed_history_limit=1)
    assert [c.name for c in found.deletions] == ["ok-0", "ok-1", "ok-2", "bad-0", "bad-1"]


def test_history_deletes_those_without_a_start_time_last() -> None:
    unstarted = job("never", outcome="Failed")
    started = job("early", outcome="Failed", start="2026-11-28T09:00:00Z")
    found = plan(T0 + timedelta(minutes=1), children=(unstarted, started),
                 failed_history_limit=1)
    assert [c.name for c in found.deletions] == ["early"]


def test_a_suspended_schedule_makes_nothing_but_keeps_its_books() -> None:
    done = job("nightly-1", outcome="Complete", completed="2026-11-28T11:00:09Z")
    found = plan(T0 + timedelta(hours=3), suspended=True, children=(done,),
                 stored={"active": [ref("nightly-1")]})
    assert found.creation is None and found.wake_at is None
    assert reasons(found) == ["SawCompletedJob"]


@pytest.mark.parametrize(("changes", "reason", "message"), [
    ({"cron": "61 * * * *"}, "UnparseableSchedule",
     'unparseable schedule: "61 * * * *" : end of range (61) above maximum (59): 61'),
    ({"time_zone": "Mars/Olympus"}, "UnknownTimeZone",
     'invalid timeZone: "Mars/Olympus": unknown time zone Mars/Olympus'),
])
def test_a_schedule_that_cannot_run_says_why(changes: dict[str, Any], reason: str,
                                             message: str) -> None:
    found = plan(T0 + timedelta(hours=2), **changes)
    assert found.creation is None
    assert [(n.type, n.reason, n.message) for n in found.notices] == [
        ("Warning", reason, message)]


def test_a_tz_prefix_runs_with_a_warning() -> None:
    found = plan(T0 + timedelta(hours=1, seconds=1), cron="TZ=UTC 0 * * * *")
    assert reasons(found) == ["UnsupportedSchedule"]
    assert found.creation is not None


def test_the_child_name_is_minutes_since_the_epoch() -> None:
    assert child_name(cronjob(), datetime(2026, 1, 1, tzinfo=UTC)) == "nightly-29453760"


def test_a_tz_prefix_warns_even_beside_a_time_zone_and_only_once_parsed() -> None:
    beside = plan(T0 + timedelta(hours=1, seconds=1), cron="CRON_TZ=UTC 0 * * * *",
                  time_zone="UTC")
    assert reasons(beside) == ["UnsupportedSchedule"]
    broken = plan(T0 + timedelta(hours=1), cron="TZ=UTC 61 * * * *")
    assert reasons(broken) == ["UnparseableSchedule"]
