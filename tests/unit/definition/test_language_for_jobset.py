"""What the language gained for JobSet's machine: named expressions, validation messages in the
job's words, `merge` and `sha1`, templated condition reasons, `restartJob` that does not
count, and the `children` a job-level guard reads."""

from __future__ import annotations

import hashlib
from typing import Any

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.decide import decide
from engine.controller.reconcile.jobspec import read_job_spec
from engine.controller.reconcile.observe import observe_child
from engine.controller.reconcile.record import MachineRecord
from engine.definition import compile_definition, load_text
from engine.definition.cel import Scope, compile_expression
from engine.definition.expressions import expand_fragments
from engine.definition.rendering import broken_rules
from engine.definition.validate import validate_text
from tests.kinds import shipped_definitions
from tests.unit.definition.texts import JOB, document

FRAGMENTS = "  expressions:\n    few: \"restarts < 2\"\n    none: \"few() && restarts == 0\"\n"


def problems(text: str) -> list[str]:
    return [str(d) for d in validate_text(text, "demo.yaml") if d.is_error]


def test_a_named_expression_stands_for_its_fragment_wherever_it_is_called() -> None:
    assert expand_fragments("none() || x.few()", {"few": "a", "none": "few() && b"}) == (
        "((a) && b) || x.few()")  # a method of the same name is not a call of the fragment
    text = document(job=JOB.replace('"restarts == 0"', '"none()"'), extra=FRAGMENTS)
    assert problems(text) == []
    (loaded,) = load_text(text, "demo.yaml")
    guard = compile_definition(loaded).job.transitions[0].guard
    assert guard is not None and guard.source == "((restarts < 2) && restarts == 0)"


def test_named_expressions_that_call_each_other_in_a_loop_are_an_error() -> None:
    looped = "  expressions:\n    a: \"b()\"\n    b: \"a()\"\n"
    text = document(job=JOB.replace('"restarts == 0"', '"a()"'), extra=looped)
    (found,) = problems(text)
    assert "error: the named expressions call each other in a loop: " in found, found


def test_an_error_in_an_expanded_expression_is_said_at_the_expression() -> None:
    text = document(job=JOB.replace('"restarts == 0"', '"few() && nope"'), extra=FRAGMENTS)
    (found,) = problems(text)
    assert found.startswith("demo.yaml:12:")
    assert "unknown variable 'nope'" in found and "named expressions put in" in found


def test_a_validation_says_what_is_wrong_in_the_jobs_own_words() -> None:
    rule = ("  validations:\n    - rule: \"job.spec.names.all(n, n != 'x')\"\n"
            "      message: a name is x\n"
            "      messageExpression: >-\n"
            "        'name ' + job.spec.names.filter(n, n == 'x')[0] + ' is x'\n")
    (loaded,) = load_text(document(extra=rule), "demo.yaml")
    compiled = compile_definition(loaded)
    assert broken_rules(compiled, {"spec": {"names": ["a", "x"]}}) == ["name x is x"]
    assert broken_rules(compiled, {"spec": {"names": ["a"]}}) == []


def test_merge_and_sha1() -> None:
    scope = Scope("job")
    merged = compile_expression("merge({'a': '1', 'b': '2'}, {'b': '3'})", scope)
    assert merged.evaluate({}) == {"a": "1", "b": "3"}
    digest = compile_expression("sha1('ns/js-workers-0')", scope)
    assert digest.evaluate({}) == hashlib.sha1(b"ns/js-workers-0").hexdigest()


def test_a_templated_condition_reason_must_render_to_a_condition_reason() -> None:
    job = JOB.replace('when: "restarts == 0"}', (
        'when: "restarts == 0", actions: [{setCondition: {type: Why, '
        'reason: "Rule_${string(restarts)}"}}, {setCondition: {type: Bad, '
        'reason: "${\'no good\'}"}}]}'))
    text = document(job=job)
    assert problems(text) == []
    (loaded,) = load_text(text, "demo.yaml")
    compiled = compile_definition(loaded)
    job_object = {"apiVersion": "example.dev/v1", "kind": "Demo",
                  "metadata": {"name": "d", "namespace": "n", "uid": "u"}, "spec": {}}
    spec = read_job_spec(job_object, compiled)
    decision = decide(compiled, job_object, spec, MachineRecord(state="Running"), {},
                      job_observations=frozenset(), now="2027-01-01T00:00:00Z")
    assert [(c.type, c.reason) for c in decision.conditions] == [("Why", "Rule_0")]
    assert any("reason 'no good' is not a condition reason" in e for e in decision.errors)


def jobset(**spec: Any) -> dict[str, Any]:
    template = {"spec": {"parallelism": 1, "completions": 1, "template": {"spec": {
        "containers": [{"name": "c", "image": "i"}]}}}}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "js", "namespace": "n", "uid": "u"},
            "spec": {"replicatedJobs": [
                {"name": "leader", "replicas": 1, "groupName": "default", "template": template},
                {"name": "workers", "replicas": 2, "groupName": "default", "template": template},
            ], **spec}}


def failed_job(name: str, kind: str, at: str, reason: str = "BackoffLimitExceeded"
               ) -> dict[str, Any]:
    labels = {"jobmachine.dev/replica-type": kind}
    return {"metadata": {"name": name, "uid": name, "labels": labels},
            "status": {"conditions": [{"type": "Failed", "status": "True", "reason": reason,
                                       "message": "Job has reached the specified backoff limit",
                                       "lastTransitionTime": at}]}}


def decide_jobset(job: dict[str, Any], children: dict[ReplicaId, dict[str, Any]], *,
                  restarts: int = 0) -> Any:
    definition = shipped_definitions()["JobSet"]
    spec = read_job_spec(job, definition)
    facts = {replica: observe_child(child, job=job, definition=definition)
             for replica, child in children.items()}
    record = MachineRecord(state="Running", restarts=restarts, restart_attempt=restarts)
    return decide(definition, job, spec, record, facts,
                  job_observations=frozenset({"resumed", "noReplicaRestarting"}),
                  now="2027-01-01T00:01:00Z")


def test_the_first_failed_job_is_the_earliest_to_fail_and_names_the_failure() -> None:
    later = failed_job("js-leader-0", "leader", "2027-01-01T00:00:30Z")
    earlier = failed_job("js-workers-1", "workers", "2027-01-01T00:00:10Z")
    decision = decide_jobset(jobset(), {ReplicaId("leader", 0): later,
                                        ReplicaId("workers", 1): earlier})
    assert decision.record.state == "Failed"
    (fired,) = [f for f in decision.fired if f.replica is None]
    assert (fired.transition.reason, fired.transition.message) == (
        "FailedJobs", "jobset failed due to one or more job failures (first failed job: "
        "js-workers-1)")
    assert decision.variables["children"][0]["reason"] == "BackoffLimitExceeded"


def test_the_first_matching_rule_decides_and_a_restart_that_ignores_the_limit_counts_none(
) -> None:
    policy = {"maxRestarts": 0, "rules": [
        {"name": "deadline", "action": "FailJobSet", "onJobFailureReasons": ["DeadlineExceeded"]},
        {"action": "RestartJobSetAndIgnoreMaxRestarts", "targetReplicatedJobs": ["leader"]},
    ]}
    child = failed_job("js-leader-0", "leader", "2027-01-01T00:00:30Z")
    decision = decide_jobset(jobset(failurePolicy=policy), {ReplicaId("leader", 0): child},
                             restarts=0)
    # Recreate: the new attempt runs at once (each Job is made again once its old one is gone).
    assert [f.transition.reason for f in decision.fired if f.replica is None] == [
        "RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction", "Restarted"]
    assert decision.record.restart_attempt == 1 and decision.record.restarts == 0
    assert [(c.type, c.reason) for c in decision.conditions] == [
        ("RestartingJobSet", "FailurePolicy_failurePolicyRule1")]
    # The pass that restarted steps no replica of the new attempt on the old one's Jobs.
    assert decision.record.replica_states == {}
