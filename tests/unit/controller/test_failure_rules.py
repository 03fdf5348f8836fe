"""The first failure rule that matches a failed pod gives its action; no match gives ''."""

from __future__ import annotations

from typing import Any

import pytest

from engine.controller.reconcile.failure_rules import FailureMatch, failure_action, failure_match


def pod(*containers: tuple[str, int, str], init: tuple[tuple[str, int], ...] = (),
        reason: str = "", conditions: tuple[tuple[str, str], ...] = ()) -> dict[str, Any]:
    def status(name: str, code: int, why: str = "Error") -> dict[str, Any]:
        return {"name": name, "state": {"terminated": {"exitCode": code, "reason": why}}}

    return {"status": {
        "reason": reason,
        "conditions": [{"type": t, "status": s} for t, s in conditions],
        "containerStatuses": [status(*c) for c in containers],
        "initContainerStatuses": [status(n, c) for n, c in init],
    }}


def exit_rule(action: str, operator: str, values: list[int], **extra: Any) -> dict[str, Any]:
    on: dict[str, Any] = {"operator": operator, "values": values}
    if "container" in extra:
        on["containerName"] = extra.pop("container")
    return {"action": action, "onExitCodes": on, **extra}


@pytest.mark.parametrize(("operator", "values", "code", "matches"), [
    ("In", [137, 143], 137, True),
    ("In", [137, 143], 1, False),
    ("NotIn", [137, 143], 1, True),
    ("NotIn", [137, 143], 143, False),
    ("NotIn", [1], 0, False),  # exit code 0 never matches
])
def test_exit_code_operators(operator: str, values: list[int], code: int, matches: bool) -> None:
    rules = [exit_rule("FailJob", operator, values)]
    assert failure_action(rules, "Worker", pod(("main", code, "Error"))) == (
        "FailJob" if matches else ""
    )


def test_a_named_container_is_the_only_one_looked_at() -> None:
    rules = [exit_rule("Ignore", "In", [137], container="proxy")]
    assert failure_action(rules, "Worker", pod(("main", 137, "Error"), ("proxy", 1, "E"))) == ""
    assert failure_action(rules, "Worker", pod(("main", 1, "Error"), ("proxy", 137, "E"))) == (
        "Ignore"
    )


def test_init_containers_count() -> None:
    rules = [exit_rule("FailJob", "In", [2])]
    assert failure_action(rules, "Worker", pod(("main", 0, "Completed"), init=(("setup", 2),))) \
        == "FailJob"


def test_the_first_matching_rule_wins_and_types_limit_rules() -> None:
    rules = [
        exit_rule("FailJob", "In", [1], replicaTypes=["Master"]),
        exit_rule("RestartReplica", "In", [1]),
        exit_rule("Ignore", "In", [1]),
    ]
    failed = pod(("main", 1, "Error"))
    assert failure_action(rules, "Master", failed) == "FailJob"
    assert failure_action(rules, "Worker", failed) == "RestartReplica"


def test_pod_conditions_and_reasons() -> None:
    disrupted = pod(("main", 143, "Error"), conditions=(("DisruptionTarget", "True"),))
    conditions_rule = {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}
    assert failure_action([conditions_rule], "Worker", disrupted) == "Ignore"
    assert failure_action([conditions_rule], "Worker", pod(("main", 143, "Error"))) == ""

    oom = pod(("main", 137, "OOMKilled"))
    evicted = pod(reason="Evicted")
    reasons_rule = {"action": "FailJob", "onReasons": ["OOMKilled", "Evicted"]}
    assert failure_action([reasons_rule], "Worker", oom) == "FailJob"
    assert failure_action([reasons_rule], "Worker", evicted) == "FailJob"
    assert failure_action([reasons_rule], "Worker", pod(("main", 1, "Error"))) == ""


def test_a_container_restarted_in_place_is_judged_by_its_last_end() -> None:
    """Waiting in CrashLoopBackOff or running again, the end is in lastState."""
    rules = [exit_rule("FailJob", "In", [42]), {"action": "Ignore", "onReasons": ["OOMKilled"]}]
    for state in ({"waiting": {"reason": "CrashLoopBackOff"}}, {"running": {}}):
        restarted = {"status": {"containerStatuses": [{
            "name": "main", "state": state, "restartCount": 1,
            "lastState": {"terminated": {"exitCode": 42, "reason": "Error"}},
        }]}}
        assert failure_action(rules, "Worker", restarted) == "FailJob"
        oom = {"status": {"containerStatuses": [{
            "name": "main", "state": state, "restartCount": 1,
            "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}},
        }]}}
        assert failure_action(rules, "Worker", oom) == "Ignore"


def named(found: dict[str, Any]) -> dict[str, Any]:
    """The pod with a name and namespace, as the API server has it."""
    return {**found, "metadata": {"name": "p-job-0", "namespace": "team"}}


def test_the_cause_of_an_exit_code_match_is_said_as_the_job_api_says_it() -> None:
    rules = [exit_rule("Count", "In", [1]), exit_rule("FailJob", "In", [42], container="main")]
    found = failure_match(rules, "Job", named(pod(("sidecar", 0, "Completed"),
                                                  ("main", 42, "Error"))))
    assert found == FailureMatch(
        "FailJob", 1,
        "Container main for pod team/p-job-0 failed with exit code 42 matching FailJob rule "
        "at index 1")


def test_the_cause_of_a_condition_match_names_the_condition() -> None:
    rules = [{"action": "Ignore", "onPodConditions": [{"type": "ConfigIssue"},
                                                      {"type": "DisruptionTarget"}]}]
    found = failure_match(rules, "Job", named(pod(("main", 137, "Error"),
                                                  conditions=(("DisruptionTarget", "True"),))))
    assert found is not None
    assert found.cause == ("Pod team/p-job-0 has condition DisruptionTarget matching Ignore rule "
                           "at index 0")


def test_the_cause_of_a_reason_match_names_the_reason() -> None:
    rules = [{"action": "RestartReplica", "onReasons": ["OOMKilled"]}]
    found = failure_match(rules, "Worker", named(pod(("main", 137, "OOMKilled"))))
    assert found is not None
    assert found.cause == ("Pod team/p-job-0 has reason OOMKilled matching RestartReplica rule "
                           "at index 0")


def test_no_match_has_no_cause() -> None:
    assert failure_match([exit_rule("FailJob", "In", [42])], "Job",
                         named(pod(("main", 3, "Error")))) is None
