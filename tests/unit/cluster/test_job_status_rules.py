"""What a write to a Job's /status may do, in kube-apiserver's words and without a server:
counters never negative nor decreasing, terminal conditions final, Failed only after
FailureTarget and Complete only after SuccessCriteriaMet, completionTime exactly with
Complete, finished Jobs with nothing active, index lists in the interval format; and the
gating that lets a status already wrong take an unrelated update. A controller other than
the built-in one (ours) meets these on every status write."""

from __future__ import annotations

from typing import Any

import pytest

from engine.cluster.apiserver.validation.job_status import validate_job_status

START = "2026-11-30T11:00:00Z"
END = "2026-11-30T11:05:00Z"
INDEXED = {"completionMode": "Indexed", "completions": 4, "parallelism": 2}
PER_INDEX = {**INDEXED, "backoffLimitPerIndex": 1}


def job(*conditions: str, spec: dict[str, Any] | None = None, **status: Any) -> dict[str, Any]:
    """A Job whose status has these True conditions (`Type=False` for a False one)."""
    listed = []
    for condition in conditions:
        kind, _, value = condition.partition("=")
        listed.append({"type": kind, "status": value or "True"})
    return {"spec": {"completions": 1, "parallelism": 1, **(spec or {})},
            "status": {**status, **({"conditions": listed} if listed else {})}}


RUNNING = job(startTime=START, active=1)
SUCCEEDED = job("SuccessCriteriaMet", "Complete", startTime=START, completionTime=END,
                succeeded=1)
FAILED = job("FailureTarget", "Failed", startTime=START, failed=1)


def said(new: dict[str, Any], old: dict[str, Any] = RUNNING) -> list[str]:
    return [f"{c.field}: {c.message}" for c in validate_job_status(new, old)]


def test_the_built_in_controllers_own_transitions_pass() -> None:
    assert said(RUNNING, job()) == []
    assert said(SUCCEEDED) == []
    assert said(FAILED) == []
    assert said(job("Suspended", startTime=START, spec={"suspend": True}), RUNNING) == []


@pytest.mark.parametrize("name", ["active", "succeeded", "failed", "ready", "terminating"])
def test_no_counter_is_negative(name: str) -> None:
    assert f"status.{name}: Invalid value: -1: must be greater than or equal to 0" in said(
        job(startTime=START, **{name: -1}))


def test_uncounted_pods_are_named_by_non_empty_unique_uids_across_both_lists() -> None:
    uncounted = {"succeeded": ["a", ""], "failed": ["b", "a"]}
    assert said(job(startTime=START, uncountedTerminatedPods=uncounted)) == [
        'status.uncountedTerminatedPods.succeeded[1]: Invalid value: "": must not be empty',
        'status.uncountedTerminatedPods.failed[1]: Duplicate value: "a"',
    ]


def test_complete_needs_success_criteria_met_and_failed_needs_failure_target() -> None:
    assert said(job("Complete", startTime=START, completionTime=END)) == [
        "status.conditions: Invalid value: cannot set Complete=True condition without the "
        "SuccessCriteriaMet=true condition"]
    assert said(job("Failed", startTime=START)) == [
        "status.conditions: Invalid value: cannot set Failed=True condition without the "
        "FailureTarget=true condition"]


def test_a_job_cannot_both_succeed_and_fail() -> None:
    both = job("SuccessCriteriaMet", "Complete", "FailureTarget", "Failed", startTime=START,
               completionTime=END)
    assert said(both) == [
        "status.conditions: Invalid value: cannot set Complete=True and Failed=true conditions",
        "status.conditions: Invalid value: cannot set Complete=True and FailureTarget=true "
        "conditions",
        "status.conditions: Invalid value: cannot set SuccessCriteriaMet=True and Failed=true "
        "conditions",
        "status.conditions: Invalid value: cannot set SuccessCriteriaMet=True and "
        "FailureTarget=true conditions",
    ]


def test_completion_time_comes_exactly_with_complete_and_not_before_the_start() -> None:
    assert said(job(startTime=START, completionTime=END)) == [
        "status.completionTime: Invalid value: 2026-11-30 11:05:00 +0000 UTC: cannot set "
        "completionTime when there is no Complete=True condition"]
    assert said(job("SuccessCriteriaMet", "Complete", startTime=START)) == [
        "status.completionTime: Required value: completionTime is required for Complete jobs"]
    early = job("SuccessCriteriaMet", "Complete", startTime=END, completionTime=START)
    assert said(early, job(startTime=END)) == [
        "status.completionTime: Invalid value: 2026-11-30 11:00:00 +0000 UTC: completionTime "
        "cannot be set before startTime"]


def test_a_finished_job_has_a_start_nothing_active_terminating_or_uncounted() -> None:
    finished = job("FailureTarget", "Failed", active=1, terminating=2,
                   uncountedTerminatedPods={"failed": ["p1"]})
    assert said(finished, job()) == [
        "status.active: Invalid value: 1: active>0 is invalid for finished job",
        "status.startTime: Required value: startTime is required for finished job",
        "status.uncountedTerminatedPods: Invalid value: batch.UncountedTerminatedPods"
        '{Succeeded:[]types.UID(nil), Failed:[]types.UID{"p1"}}: uncountedTerminatedPods '
        "needs to be empty for finished job",
        "status.terminating: Invalid value: 2: terminating>0 is invalid for finished job",
    ]


def test_ready_pods_are_at_most_the_active_ones() -> None:
    assert said(job(startTime=START, active=2, ready=2)) == []
    assert said(job(startTime=START, active=2, ready=3)) == [
        "status.ready: Invalid value: 3: cannot set more ready pods than active"]


def test_a_success_policy_job_completes_only_through_success_criteria_met() -> None:
    policy = {**INDEXED, "successPolicy": {"rules": [{"succeededCount": 1}]}}
    assert said(job("Complete", spec=policy, startTime=START, completionTime=END),
                job(spec=policy, startTime=START)) == [
        "status.conditions: Invalid value: cannot set Complete=True condition without the "
        "SuccessCriteriaMet=true condition",
        "status.conditions: Invalid value: cannot set Complete=True for Job with SuccessPolicy "
        "unless SuccessCriteriaMet=True",
    ]


class TestIndexes:
    def test_completed_indexes_are_intervals_below_the_completions(self) -> None:
        old = job(spec=INDEXED, startTime=START)
        assert said(job(spec=INDEXED, startTime=START, completedIndexes="0,2-3"), old) == []
        assert said(job(spec=INDEXED, startTime=START, completedIndexes="1,4"), old) == [
            'status.completedIndexes: Invalid value: "1,4": error parsing completedIndexes: '
            'too large index: "4"']

    def test_only_an_indexed_job_has_completed_indexes(self) -> None:
        assert said(job(startTime=START, completedIndexes="0")) == [
            'status.completedIndexes: Invalid value: "0": cannot set non-empty '
            "completedIndexes when non-indexed completion mode"]

    def test_failed_indexes_need_a_per_index_limit_even_when_empty(self) -> None:
        old = job(spec=INDEXED, startTime=START)
        assert said(job(spec=INDEXED, startTime=START, failedIndexes=""), old) == [
            'status.failedIndexes: Invalid value: "": cannot set non-null failedIndexes when '
            "backoffLimitPerIndex is null"]

    def test_failed_indexes_parse_and_never_overlap_the_completed(self) -> None:
        old = job(spec=PER_INDEX, startTime=START)
        assert said(job(spec=PER_INDEX, startTime=START, failedIndexes="0-x"), old) == [
            'status.failedIndexes: Invalid value: "0-x": error parsing failedIndexes: cannot '
            'convert string to integer for index: "x"']
        overlapping = job(spec=PER_INDEX, startTime=START, completedIndexes="0,2-3",
                          failedIndexes="1,3")
        assert said(overlapping, old) == [
            'status.failedIndexes: Invalid value: "1,3": failedIndexes and completedIndexes '
            "overlap at index: 3"]


class TestTransitions:
    @pytest.mark.parametrize("kind", ["Failed", "Complete", "FailureTarget"])
    def test_a_terminal_condition_stays(self, kind: str) -> None:
        old = job(kind, startTime=START)
        assert ("status.conditions: Invalid value: cannot disable the terminal "
                f"{kind}=True condition") in said(job(startTime=START), old)

    def test_success_criteria_met_stays_and_cannot_come_after_complete(self) -> None:
        met = job("SuccessCriteriaMet", startTime=START)
        assert said(job(startTime=START), met) == [
            "status.conditions: Invalid value: cannot disable the SuccessCriteriaMet=True "
            "condition"]
        legacy = job("Complete", startTime=START, completionTime=END)
        assert ("status.conditions: Invalid value: cannot set SuccessCriteriaMet=True for Job "
                "already has Complete=true conditions") in said(
            job("SuccessCriteriaMet", "Complete", startTime=START, completionTime=END), legacy)

    def test_counters_never_decrease(self) -> None:
        old = job(startTime=START, succeeded=3, failed=2)
        assert said(job(startTime=START, succeeded=2, failed=1), old) == [
            "status.failed: Invalid value: 1: cannot decrease the failed counter",
            "status.succeeded: Invalid value: 2: cannot decrease the succeeded counter",
        ]

    def test_an_elastic_indexed_job_may_lose_successes_when_scaled_down(self) -> None:
        elastic = {**INDEXED, "completions": 2, "parallelism": 2}
        assert said(job(spec=elastic, startTime=START, succeeded=1),
                    job(spec=elastic, startTime=START, succeeded=3)) == []
        assert said(job(spec=INDEXED, startTime=START, succeeded=1),
                    job(spec=INDEXED, startTime=START, succeeded=3)) == [
            "status.succeeded: Invalid value: 1: cannot decrease the succeeded counter"]

    def test_the_completion_time_is_never_changed_once_set(self) -> None:
        later = job("SuccessCriteriaMet", "Complete", startTime=START,
                    completionTime="2026-11-30T11:06:00Z", succeeded=1)
        assert said(later, SUCCEEDED) == [
            "status.completionTime: Invalid value: 2026-11-30 11:06:00 +0000 UTC: completionTime "
            "cannot be mutated"]

    def test_the_start_time_goes_only_while_suspended_or_resuming(self) -> None:
        assert said(job(active=1), RUNNING) == [
            "status.startTime: Required value: startTime cannot be removed for unsuspended job"]
        assert said(job(spec={"suspend": True}), RUNNING) == []
        suspended = job("Suspended", startTime=START)
        assert said(job("Suspended=False", startTime=END), suspended) == []


def test_a_status_already_wrong_takes_an_unrelated_update() -> None:
    stored = job("FailureTarget", "Failed", startTime=START, active=1, failed=1)
    assert said(job("FailureTarget", "Failed", startTime=START, active=1, failed=2),
                stored) == []
    assert said(job("FailureTarget", "Failed", startTime=START, active=2, failed=2),
                stored) == ["status.active: Invalid value: 2: active>0 is invalid for finished job"]
