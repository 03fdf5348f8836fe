"""A batch/v1 CronJob refused on create and update in kube-apiserver's words, without a
server: its schedule (and a TZ= inside it, tolerated only where the stored one had it), its
time zone (judged only when it changes), concurrency policy, history limits, the job
template's rules and generated selector, and the 52-character name left for the Jobs'
suffix, on create only."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from engine.cluster.apiserver.validation.batch_cronjobs import validate_cronjob

POD = {"restartPolicy": "Never", "dnsPolicy": "ClusterFirst",
       "containers": [{"name": "main", "image": "busybox", "imagePullPolicy": "IfNotPresent",
                       "terminationMessagePolicy": "File"}]}
CRONJOB: dict[str, Any] = {
    "metadata": {"name": "nightly"},
    "spec": {"schedule": "0 3 * * *", "concurrencyPolicy": "Allow",
             "jobTemplate": {"spec": {"template": {"spec": POD}}}},
}


def cronjob(name: str = "nightly", **spec: Any) -> dict[str, Any]:
    obj = copy.deepcopy(CRONJOB)
    obj["metadata"]["name"] = name
    obj["spec"].update(spec)
    return obj


def said(obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    return [f"{c.field}: {c.message}" for c in validate_cronjob(obj, old)]


def test_a_cronjob_with_a_zone_and_limits_passes() -> None:
    assert said(cronjob(timeZone="Europe/Berlin", startingDeadlineSeconds=0,
                        successfulJobsHistoryLimit=0, failedJobsHistoryLimit=0)) == []


def test_the_schedule_is_required_and_must_parse() -> None:
    assert said(cronjob(schedule="")) == ["spec.schedule: Required value"]
    assert said(cronjob(schedule="* * *")) == [
        'spec.schedule: Invalid value: "* * *": expected exactly 5 fields, found 3: [* * *]']


def test_a_zone_inside_the_schedule_is_refused_on_create() -> None:
    assert said(cronjob(schedule="CRON_TZ=UTC 0 3 * * *")) == [
        'spec.schedule: Invalid value: "CRON_TZ=UTC 0 3 * * *": cannot use TZ or CRON_TZ in '
        "schedule, use timeZone field instead"]


def test_a_stored_zone_in_the_schedule_is_tolerated_but_not_beside_a_time_zone() -> None:
    stored = cronjob(schedule="TZ=UTC 0 3 * * *")
    assert said(cronjob(schedule="TZ=UTC 0 4 * * *"), stored) == []
    assert said(cronjob(schedule="TZ=UTC 0 4 * * *", timeZone="UTC"), stored) == [
        'spec.schedule: Invalid value: "TZ=UTC 0 4 * * *": cannot use both timeZone field and '
        "TZ or CRON_TZ in schedule"]
    assert said(cronjob(schedule="TZ=UTC 0 4 * * *"), cronjob()) == [
        'spec.schedule: Invalid value: "TZ=UTC 0 4 * * *": cannot use TZ or CRON_TZ in '
        "schedule, use timeZone field instead"]


@pytest.mark.parametrize(("zone", "why"), [
    ("", "timeZone must be nil or non-empty string"),
    ("../etc/passwd", "unknown time zone ../etc/passwd"),
    ("Europe/-Berlin", "unknown time zone Europe/-Berlin"),
    ("Europe/AVeryLongCityName", "unknown time zone Europe/AVeryLongCityName"),
    ("Local", "timeZone must be an explicit time zone as defined in "
              "https://www.iana.org/time-zones"),
    ("Mars/Olympus", "unknown time zone Mars/Olympus"),
])
def test_the_time_zone_must_be_an_explicit_iana_zone(zone: str, why: str) -> None:
    assert said(cronjob(timeZone=zone)) == [f'spec.timeZone: Invalid value: "{zone}": {why}']


def test_an_unchanged_time_zone_is_not_judged_again() -> None:
    stored = cronjob(timeZone="Mars/Olympus")
    assert said(cronjob(timeZone="Mars/Olympus", schedule="0 4 * * *"), stored) == []


def test_negative_deadlines_and_history_limits_are_refused() -> None:
    assert said(cronjob(startingDeadlineSeconds=-1, successfulJobsHistoryLimit=-2,
                        failedJobsHistoryLimit=-3)) == [
        "spec.startingDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
        "spec.successfulJobsHistoryLimit: Invalid value: -2: must be greater than or equal to 0",
        "spec.failedJobsHistoryLimit: Invalid value: -3: must be greater than or equal to 0",
    ]


def test_the_concurrency_policy_is_one_of_three() -> None:
    assert said(cronjob(concurrencyPolicy="Sometimes")) == [
        'spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", '
        '"Forbid", "Replace"']


def test_the_job_template_follows_the_job_rules_with_a_generated_selector() -> None:
    template = {"spec": {"template": {"spec": POD}, "parallelism": -1, "manualSelector": True,
                         "selector": {"matchLabels": {"app": "x"}}}}
    found = said(cronjob(jobTemplate=template))
    assert found[0] == ("spec.jobTemplate.spec.parallelism: Invalid value: -1: must be greater "
                        "than or equal to 0")
    assert found[1].startswith("spec.jobTemplate.spec.selector: Invalid value: ")
    assert found[1].endswith(": `selector` will be auto-generated")
    assert found[2:] == ['spec.jobTemplate.spec.manualSelector: Unsupported value: true: '
                         'supported values: "nil", "false"']


def test_a_generated_selector_is_printed_as_go_prints_it() -> None:
    """Go's field error dereferences the *LabelSelector and prints the value with %#v (its
    String() has a pointer receiver), as real clusters say."""
    template = {"spec": {"template": {"spec": POD}, "selector": {"matchLabels": {"app": "x"}}}}
    assert said(cronjob(jobTemplate=template)) == [
        'spec.jobTemplate.spec.selector: Invalid value: v1.LabelSelector{MatchLabels:'
        'map[string]string{"app":"x"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: '
        "`selector` will be auto-generated"]


def test_a_name_of_52_characters_passes_and_53_only_on_update() -> None:
    assert said(cronjob("n" * 52)) == []
    assert said(cronjob("n" * 53)) == [
        f'metadata.name: Invalid value: "{"n" * 53}": must be no more than 52 characters']
    assert said(cronjob("n" * 53), cronjob("n" * 53)) == []
