"""A schedule rendered for one job (rendering.render_schedule), through the shipped CronJob
machine: the values a CronJob's spec gives, their defaults, and the words of each value of
the wrong kind (the CronJob controller reports them on the job)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from engine.definition import CompiledDefinition, load_definitions
from engine.definition.cel import CelEvaluationError
from engine.definition.rendering import RenderedSchedule, render_schedule
from engine.definition.vocabulary import job_value
from engine.shipped import shipped_dir

CRONJOB: dict[str, Any] = {
    "apiVersion": "batch/v1", "kind": "CronJob",
    "metadata": {"name": "nightly", "namespace": "team"},
    "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}}}},
}


def machine() -> CompiledDefinition:
    [compiled] = load_definitions([shipped_dir("machines") / "batch-cronjob.yaml"])
    return compiled


def rendered(**spec: Any) -> RenderedSchedule:
    job = copy.deepcopy(CRONJOB)
    job["spec"].update(spec)
    schedule = machine().schedule
    assert schedule is not None
    return render_schedule(schedule, {"job": job_value(job)})


def test_a_cronjob_with_only_a_schedule_gets_the_defaults() -> None:
    assert rendered() == RenderedSchedule(
        cron="*/5 * * * *", time_zone=None, starting_deadline_seconds=None,
        concurrency_policy="Allow", successful_history_limit=3, failed_history_limit=1,
        child_api_version="batch/v1", child_kind="Job", child_labels={},
        child_annotations={}, child_spec=CRONJOB["spec"]["jobTemplate"]["spec"])


def test_the_values_a_cronjob_gives_are_kept_zero_included() -> None:
    made = rendered(timeZone="Europe/Paris", startingDeadlineSeconds=0,
                    concurrencyPolicy="Forbid", successfulJobsHistoryLimit=0,
                    failedJobsHistoryLimit=0)
    assert (made.time_zone, made.starting_deadline_seconds, made.concurrency_policy,
            made.successful_history_limit, made.failed_history_limit) == (
        "Europe/Paris", 0, "Forbid", 0, 0)
    assert rendered(concurrencyPolicy="Replace").concurrency_policy == "Replace"


def test_the_childs_metadata_is_text_and_a_null_leaves_a_key_or_field_out() -> None:
    template = {"metadata": {"labels": {"team": "a", "gone": None},
                             "annotations": {"retries": 5, "flag": True, "gone": None}},
                "spec": {"parallelism": None, "template": {"spec": {
                    "containers": [{"name": "main", "args": None}], "volumes": [None]}}}}
    made = rendered(jobTemplate=template)
    assert made.child_labels == {"team": "a"}
    assert made.child_annotations == {"retries": "5", "flag": "true"}
    assert made.child_spec == {"template": {"spec": {
        "containers": [{"name": "main"}], "volumes": [None]}}}


@pytest.mark.parametrize(("spec", "words"), [
    ({"concurrencyPolicy": "Sometimes"},
     "schedule.concurrencyPolicy gave 'Sometimes', not one of Allow, Forbid, Replace"),
    ({"successfulJobsHistoryLimit": -1},
     "schedule.successfulHistoryLimit gave -1, not a count (0 or more)"),
    ({"failedJobsHistoryLimit": True},
     "schedule.failedHistoryLimit gave True, not a count (0 or more)"),
    ({"startingDeadlineSeconds": "10"},
     "schedule.startingDeadlineSeconds gave '10', not a count (0 or more)"),
    ({"startingDeadlineSeconds": -1},
     "schedule.startingDeadlineSeconds gave -1, not a count (0 or more)"),
    ({"timeZone": 5}, "schedule.timeZone gave 5, not a string"),
    ({"schedule": 7}, "schedule.cron gave 7, not a string"),
    ({"schedule": None}, "schedule.cron gave null: a schedule is required"),
    ({"jobTemplate": {"spec": "x"}}, "schedule.child.spec gave 'x', not a map"),
    ({"jobTemplate": {"metadata": {"labels": ["a"]}, "spec": {}}},
     "schedule.child.labels gave ['a'], not a map"),
    ({"jobTemplate": {"metadata": {"annotations": "a=b"}, "spec": {}}},
     "schedule.child.annotations gave 'a=b', not a map"),
])
def test_a_value_of_the_wrong_kind_is_named(spec: dict[str, Any], words: str) -> None:
    with pytest.raises(CelEvaluationError) as raised:
        rendered(**spec)
    assert str(raised.value) == words
