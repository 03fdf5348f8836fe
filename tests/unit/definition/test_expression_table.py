"""The expression table of a definition (expressions.py): where an error in a template with
named expressions put in, in an action's `args:` (after an unknown action too) or in a
state's condition message, is said; a pod's policies and a validation's messageExpression
written as CEL; the types of a machine that governs nothing; the scope kept for each
expression and template, a child status expression's; the names a loop of named expressions
lists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine.definition.expressions import (
    MAX_EXPANDED_CHARS,
    compile_expressions,
    expand_fragments,
    type_context,
)
from engine.definition.loader import load_text
from engine.definition.validate import validate_text
from tests.unit.definition.test_child_section import TEXT as CHILD_TEXT
from tests.unit.definition.test_child_section import problems as child_problems
from tests.unit.definition.texts import JOB, abstract, document

VISIBLE = ("visible here: job, runPolicy, replicas, restarts, error, lastFailure, "
           "lastFailureCause, gangScheduler, objects, children, references")


def problems(transition: str, extra: str = "  expressions:\n    few: \"restarts < 2\"\n"
             ) -> list[str]:
    job = JOB.replace('when: "restarts == 0"', f'when: "restarts == 0", {transition}')
    return [str(d) for d in validate_text(document(job=job, extra=extra), "d.yaml")]


def test_an_error_in_a_template_with_named_expressions_is_said_at_the_template() -> None:
    assert problems('message: "${few() && nope}"') == [
        f"d.yaml:12:67: error: unknown variable 'nope'; {VISIBLE} (in the expression with "
        "its named expressions put in)"
    ]


def test_a_loop_of_named_expressions_in_a_template_is_said_at_the_template() -> None:
    looped = "  expressions:\n    a: \"b()\"\n    b: \"a()\"\n"
    (found,) = problems('message: "${a()}"', looped)
    assert found.startswith("d.yaml:12:67: error: the named expressions call each other")


def test_an_error_in_an_actions_args_is_said_at_the_argument() -> None:
    action = 'actions: [{name: event, args: {reason: Began, message: "${nope}"}}]'
    assert problems(action) == [f"d.yaml:12:116: error: unknown variable 'nope'; {VISIBLE}"]


def test_each_expression_and_template_keeps_the_scope_it_was_checked_in() -> None:
    job = JOB.replace('when: "restarts == 0"', 'when: "restarts == 0", message: "${restarts}"')
    (loaded,) = load_text(document(job=job), "d.yaml")
    scopes = compile_expressions(loaded).scopes
    transition = ("spec", "job", "transitions", 0)
    assert {path[-1]: (scope.level, scope.template) for path, scope in scopes.items()
            if path[:-1] == transition} == {"when": ("job", False), "message": ("job", False)}


def test_a_loop_is_said_as_the_calls_around_it() -> None:
    with pytest.raises(ValueError) as raised:
        expand_fragments("a() + b()", {"a": "b()", "b": "a()", "c": "1"})
    assert str(raised.value) == "the named expressions call each other in a loop: a() -> b() -> a()"


def test_a_loop_further_down_is_said_without_the_calls_that_lead_to_it() -> None:
    fragments = {"x": "y() + z()", "y": "1", "z": "w() > 0", "w": "size(z())"}
    with pytest.raises(ValueError) as raised:
        expand_fragments("x()", fragments)
    assert str(raised.value).endswith(": z() -> w() -> z()")


@pytest.mark.parametrize(("source", "fragments", "loop"), [
    # b calls nothing and is met twice before the loop: walked once, then passed over.
    ("a() + a()", {"a": "c()", "b": "1", "c": "b() + b() + a()"}, "a() -> c() -> a()"),
    # a, walked from b and done with, is met again from b further on.
    ("b() + b()", {"a": "1", "b": "a() + b()"}, "b() -> b()"),
])
def test_a_loop_is_found_past_named_expressions_that_call_no_other(
    source: str, fragments: dict[str, str], loop: str,
) -> None:
    with pytest.raises(ValueError) as raised:
        expand_fragments(source, fragments)
    assert str(raised.value).endswith(f" in a loop: {loop}")


def test_a_call_without_arguments_of_no_named_expression_is_left_as_written() -> None:
    assert expand_fragments("sshKeyPair().publicKey + a()", {"a": "b() + 'x'", "b": "''"}) == (
        "sshKeyPair().publicKey + (('') + 'x')")


def test_named_expressions_that_would_grow_past_the_limit_are_refused_before_they_do() -> None:
    doubling = {f"f{i}": f"f{i + 1}() + f{i + 1}()" for i in range(21)} | {"f21": "1"}
    with pytest.raises(ValueError) as raised:  # 2**21 copies of "(1)", about 16 MB, were it built
        expand_fragments("f0()", doubling)
    assert f"more than the {MAX_EXPANDED_CHARS:,} allowed" in str(raised.value)


def test_an_expansion_up_to_the_limit_is_built() -> None:
    body = "x" * (MAX_EXPANDED_CHARS - 2)
    assert expand_fragments("big()", {"big": body}) == f"({body})"
    with pytest.raises(ValueError):
        expand_fragments("big()", {"big": body + "x"})


def test_the_actions_after_an_unknown_one_are_still_compiled() -> None:
    action = 'actions: [nothing, {name: event, args: {reason: Began, message: "${nope}"}}]'
    assert problems(action) == [
        "d.yaml:12:68: error: unknown action 'nothing'; job actions are: cleanupPods, "
        "restartJob, setCondition, event",
        f"d.yaml:12:125: error: unknown variable 'nope'; {VISIBLE}",
    ]


def test_a_child_status_expression_sees_the_job_and_the_child_only() -> None:
    ready = re.search(r"    status:\n      ready: .*\n", CHILD_TEXT)
    assert ready is not None
    text = CHILD_TEXT.replace(ready[0], '    status:\n      ready: "restarts == 0"\n', 1)
    assert child_problems(text) == [
        "jobs.yaml:18:15: error: unknown variable 'restarts'; visible here: job, child"]


def test_an_error_in_a_states_condition_message_is_said_at_the_message() -> None:
    job = JOB.replace("Running: {}", 'Running: {condition: {type: Running, message: "${nope}"}}')
    assert [str(d) for d in validate_text(document(job=job), "d.yaml")] == [
        f"d.yaml:9:56: error: unknown variable 'nope'; {VISIBLE}"]


def test_a_machine_that_governs_nothing_is_typed_with_no_references() -> None:
    (loaded,) = load_text(abstract(document()), "base.yaml")
    assert type_context(loaded).references == ()
    assert type_context(loaded).phase_words == ("failed", "pending", "running", "succeeded")


def test_a_pods_policies_written_as_cel_must_give_a_string_and_see_the_job_only() -> None:
    def said(pod: str) -> list[str]:
        return [str(d) for d in validate_text(document(extra=f"  pod:\n{pod}"), "d.yaml")]

    must = "error: this expression must give string, but it gives int"
    assert said('    restartPolicy: "1"\n') == [f"d.yaml:26:20: {must}"]
    assert said('    replacementPolicy: "1"\n') == [f"d.yaml:26:24: {must}"]
    assert said("    replacementPolicy: \"restarts == 0 ? 'Failed' : 'TerminatingOrFailed'\"\n"
                ) == ["d.yaml:26:25: error: unknown variable 'restarts'; visible here: job"]


def test_a_validations_message_expression_must_give_a_string_and_see_the_job_only() -> None:
    def said(expression: str) -> list[str]:
        rule = ('  validations:\n    - rule: "true"\n      message: m\n'
                f"      messageExpression: {expression}\n")
        return [str(d) for d in validate_text(document(extra=rule), "d.yaml")]

    assert said('"1"') == ["d.yaml:28:26: error: this expression must give string, but it "
                           "gives int"]
    assert said('"string(restarts)"') == [
        "d.yaml:28:34: error: unknown variable 'restarts'; visible here: job"]


def shipped_said(name: str, written: str, instead: str) -> list[str]:
    """The problems of shipped machine `name` with `written` replaced by `instead`."""
    text = (Path(__file__).parents[3] / "machines" / name).read_text()
    assert written in text
    return [str(d) for d in validate_text(text.replace(written, instead, 1), name)]


def test_a_schedules_values_must_give_their_types_and_are_said_at_their_place() -> None:
    assert shipped_said("batch-cronjob.yaml", "cron: job.spec.schedule", 'cron: "1"') == [
        "batch-cronjob.yaml:35:11: error: this expression must give string, but it gives int"]
    (said,) = shipped_said("batch-cronjob.yaml", "? job.spec.jobTemplate.metadata.labels : {}",
                           "? nope : {}")
    assert said.startswith("batch-cronjob.yaml:48:15: error: unknown variable 'nope'")


def test_a_rollouts_values_must_give_their_types() -> None:
    assert shipped_said("deployment.yaml",
                        'replicas: "has(job.spec.replicas) ? job.spec.replicas : 1"',
                        "replicas: \"'x'\"") == [
        "deployment.yaml:27:15: error: this expression must give int, but it gives string"]


def test_a_references_expressions_see_the_job_only() -> None:
    assert shipped_said("trainjob.yaml", 'name: "job.spec.runtimeRef.name"',
                        'name: "string(restarts)"') == [
        "trainjob.yaml:53:23: error: unknown variable 'restarts'; visible here: job"]


def test_a_machine_that_governs_nothing_compiles_without_references() -> None:
    (loaded,) = load_text(abstract(document()), "base.yaml")
    assert compile_expressions(loaded).diagnostics == []


def test_a_childs_values_see_what_a_pods_values_see() -> None:
    label = "\"replica.type + '-' + string(replica.index)\""
    assert label in CHILD_TEXT
    assert child_problems(CHILD_TEXT.replace(label, '"string(size(hosts))"', 1)) == []
