"""CEL: errors at the character inside the YAML file, type checks, evaluation, templates."""

from __future__ import annotations

import datetime

import pytest
from cel_expr_python import cel as celcpp

from engine.definition.cel import (
    Activation,
    CelCompileError,
    CelEvaluationError,
    CelProblem,
    Scope,
    cel_type,
    compile_expression,
)
from engine.definition.cel_types import TypeContext
from engine.definition.templates import compile_template, render_value
from engine.definition.validate import validate_text
from tests.unit.definition.texts import JOB, document

REPLICA_SCOPE = Scope("replica")
JOB_VARIABLES = (
    "job, runPolicy, replicas, restarts, error, lastFailure, lastFailureCause, gangScheduler, "
    "objects, children, references"
)


def guard(expression: str) -> list[str]:
    """Diagnostics for the job transition's guard, written at line 12 (its `"` at column 41)."""
    text = document(job=JOB.replace('"restarts == 0"', expression))
    return [str(d) for d in validate_text(text, "demo.yaml")]


def test_syntax_error_at_the_character_in_the_file() -> None:
    assert guard('"restarts == "') == [
        "demo.yaml:12:54: error: CEL syntax error: mismatched input '<EOF>' expecting {'[', "
        "'{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, "
        "STRING, BYTES, IDENTIFIER}"
    ]


def test_type_error_at_the_operator() -> None:
    assert guard("\"restarts == 'zero'\"") == [
        "demo.yaml:12:51: error: CEL type error: found no matching overload for '_==_' applied "
        "to '(int, string)'"
    ]


def test_unknown_variable_lists_the_visible_ones() -> None:
    assert guard('"restarts == 0 && exitCode == 0"') == [
        f"demo.yaml:12:59: error: unknown variable 'exitCode'; visible here: {JOB_VARIABLES}"
    ]


def test_unknown_function() -> None:
    assert guard('"error.shout()"') == ["demo.yaml:12:48: error: unknown function 'shout'"]


def test_function_the_evaluator_lacks() -> None:
    assert guard("\"error.format([1]) == ''\"") == [
        "demo.yaml:12:48: error: function 'format' is not supported by the expression evaluator"
    ]


def test_guard_must_be_bool() -> None:
    assert guard('"restarts + 1"') == [
        "demo.yaml:12:41: error: this expression must give bool, but it gives int"
    ]


def test_columns_in_a_single_quoted_scalar_count_escaped_quotes() -> None:
    # Decoded: error == 'it''s' && nope; CEL cannot parse the `'s'` after 'it'.
    assert guard("'error == ''it''''s'' && nope'") == [
        "demo.yaml:12:57: error: CEL syntax error: mismatched input ''s'' expecting <EOF>"
    ]


def test_columns_in_a_double_quoted_scalar_count_escapes() -> None:
    assert guard('"error == \\"\\u00e9\\" && nope"') == [
        f"demo.yaml:12:65: error: unknown variable 'nope'; visible here: {JOB_VARIABLES}"
    ]


def test_columns_in_a_plain_scalar() -> None:
    assert guard("restarts == nope") == [
        f"demo.yaml:12:53: error: unknown variable 'nope'; visible here: {JOB_VARIABLES}"
    ]


def test_multi_line_scalar_reports_the_node_and_the_column_in_the_expression() -> None:
    text = JOB.replace(
        '{from: Running, to: Done, when: "restarts == 0"}',
        "from: Running\n        to: Done\n        when: |\n          restarts == 0 &&\n"
        "            nope",
    )
    assert [str(d) for d in validate_text(document(job=text), "demo.yaml")] == [
        f"demo.yaml:14:15: error: unknown variable 'nope'; visible here: {JOB_VARIABLES} "
        "(line 2, column 3 of the expression)"
    ]


def test_template_error_at_the_character_in_the_file() -> None:
    assert guard('"restarts == 0", message: "restarts: ${restarts + \'x\'}"') == [
        "demo.yaml:12:89: error: CEL type error: found no matching overload for '_+_' applied "
        "to '(int, string)'"
    ]


def test_unclosed_template_part() -> None:
    assert guard('"restarts == 0", message: "restarts: ${restarts"') == [
        "demo.yaml:12:78: error: '${' is never closed by '}'"
    ]


def test_delay_expression_must_give_seconds_or_a_duration() -> None:
    text = document(job=JOB.replace("Running: {}", "Running: {requeueAfter: \"error\"}"))
    assert [str(d) for d in validate_text(text, "demo.yaml")] == [
        "demo.yaml:9:31: error: this expression must give int or duration, but it gives string"
    ]


def test_pod_values_see_the_template_variables() -> None:
    extra = "  pod:\n    env:\n      HOSTS: \"clusterSpec.worker.join(',')\"\n"
    assert validate_text(document(extra=extra), "demo.yaml") == []
    extra = "  pod:\n    env:\n      HOSTS: \"hosts.Worker.join(',')\"\n"
    assert validate_text(document(extra=extra), "demo.yaml") == []
    extra = "  pod:\n    env:\n      HOSTS: \"nodes\"\n"
    assert [str(d) for d in validate_text(document(extra=extra), "demo.yaml")] == [
        "demo.yaml:27:15: error: unknown variable 'nodes'; visible here: job, runPolicy, "
        "replicas, restarts, error, lastFailure, lastFailureCause, gangScheduler, objects, "
        "children, references, replica, policy, pod, child, exitCode, reason, "
        "terminationMessage, termination, newRestarts, failureAction, failureCause, "
        "clusterSpec, hosts"
    ]


def test_compile_reports_positions_inside_the_expression() -> None:
    with pytest.raises(CelCompileError) as caught:
        compile_expression("exitCode >\n  ", REPLICA_SCOPE)
    assert caught.value.problems[0].line == 2
    with pytest.raises(CelCompileError) as caught:
        compile_expression("", REPLICA_SCOPE)
    assert caught.value.problems == [CelProblem(1, 1, "empty CEL expression")]


def test_evaluation_reads_only_the_variables_used() -> None:
    expression = compile_expression(
        "policy == 'OnFailure' || (policy == 'ExitCode' && exitCode >= 128)", REPLICA_SCOPE
    )
    assert expression.result_type == "bool"
    assert expression.names == ("exitCode", "policy")
    assert expression.evaluate({"policy": "ExitCode", "exitCode": 137}) is True
    assert expression.evaluate({"policy": "ExitCode", "exitCode": 1}) is False


def test_activations_sharing_a_context_see_their_own_values() -> None:
    """Replica steps share the job step's context: a value bound by one is reused by the next
    only while it is the same object; another value for the name replaces it."""
    expression = compile_expression("job.metadata.name + '/' + string(exitCode)", REPLICA_SCOPE)
    job = {"metadata": {"name": "a"}}
    shared = Activation({})
    first = Activation({"job": job, "exitCode": 1}, sharing=shared)
    second = Activation({"job": job, "exitCode": 2}, sharing=shared)
    other_job = Activation({"job": {"metadata": {"name": "b"}}, "exitCode": 2}, sharing=shared)
    assert expression.evaluate(first) == "a/1"
    assert expression.evaluate(second) == "a/2"
    assert expression.evaluate(other_job) == "b/2"
    assert expression.evaluate(first) == "a/1"


def test_a_shared_context_never_lends_a_variable_an_activation_lacks() -> None:
    expression = compile_expression("exitCode > 0", REPLICA_SCOPE)
    shared = Activation({})
    assert expression.evaluate(Activation({"exitCode": 1}, sharing=shared)) is True
    with pytest.raises(CelEvaluationError, match="no variable 'exitCode' here"):
        expression.evaluate(Activation({}, sharing=shared))


def test_typed_summaries_allow_field_selection_and_macros() -> None:
    expression = compile_expression(
        "replicas.all(t, replicas[t].running == replicas[t].desired) && "
        "job.metadata.name.startsWith('a')",
        Scope("job", types=TypeContext(phase_words=("running",))),
    )
    variables = {
        "replicas": {
            "Master": {"running": 1, "desired": 1},
            "Worker": {"running": 2, "desired": 2},
        },
        "job": {"metadata": {"name": "abc"}},
    }
    assert expression.evaluate(variables) is True


def test_string_extension_functions_evaluate() -> None:
    expression = compile_expression(
        "reason.lowerAscii() + '/' + reason.upperAscii() + '/' + string(math.greatest(1, 2))",
        REPLICA_SCOPE,
    )
    assert expression.evaluate({"reason": "OOMKilled"}) == "oomkilled/OOMKILLED/2"


def test_evaluation_errors_are_raised_as_such() -> None:
    expression = compile_expression("pod.exitCode > 0", REPLICA_SCOPE)
    with pytest.raises(CelEvaluationError, match="exitCode"):
        expression.evaluate({"pod": {}})


def test_type_signatures_of_the_vocabulary() -> None:
    expected = celcpp.Type.Map(celcpp.Type.STRING, celcpp.Type.List(celcpp.Type.STRING))
    assert cel_type("map(string, list(string))") == expected
    with pytest.raises(ValueError, match="unsupported"):
        cel_type("set(int)")


def test_template_renders_each_part() -> None:
    template = compile_template(
        "${replica.type}-${replica.index} exited ${exitCode} ok=${exitCode == 0} "
        "${pod} $${literal}",
        REPLICA_SCOPE,
    )
    text, errors = template.render({
        "replica": {"type": "Worker", "index": 2},
        "exitCode": 137,
        "pod": {"phase": "Failed", "exitCode": 137},
    })
    assert text == 'Worker-2 exited 137 ok=false {"exitCode":137,"phase":"Failed"} ${literal}'
    assert errors == []


def test_template_part_that_fails_is_left_as_written_and_reported() -> None:
    template = compile_template("policy ${policy}, exit ${pod.exitCode}", REPLICA_SCOPE)
    text, errors = template.render({"policy": "Never", "pod": {}})
    assert text == "policy Never, exit ${pod.exitCode}"
    assert len(errors) == 1 and "exitCode" in errors[0]


def test_template_braces_inside_expressions() -> None:
    template = compile_template("${ {'a': '}'}['a'] }!", REPLICA_SCOPE)
    assert template.render({}) == ("}!", [])


def test_render_value() -> None:
    assert render_value("x") == "x"
    assert render_value(True) == "true"
    assert render_value(3) == "3"
    assert render_value(2.5) == "2.5"
    assert render_value(None) == "null"
    assert render_value({"b": [1, 2], "a": "x"}) == '{"a":"x","b":[1,2]}'
    assert render_value(datetime.timedelta(seconds=90)) == "90s"



def test_a_misspelt_field_of_an_engine_variable_is_an_error_at_the_field() -> None:
    # The guard's text starts at column 42; `succeded` is its 15th character. The summary
    # has one count per phase word of the machine's replica states (pending, running).
    assert guard('"replicas.Head.succeded > 0"') == [
        "demo.yaml:12:56: error: unknown field 'succeded' of a replica type's summary (did "
        "you mean 'succeeded'?); its fields: position, desired, parallelism, active, ready, "
        "available, fullyLabeled, live, terminating, waiting, succeeded, failed, restarts, "
        "states, completedIndexes, "
        "failedIndexes, pending, running"
    ]
    assert guard('"runPolicy.backofLimit > 2"') == [
        "demo.yaml:12:52: error: unknown field 'backofLimit' of runPolicy (did you mean "
        "'backoffLimit'?); its fields: cleanPodPolicy, ttlSecondsAfterFinished, "
        "activeDeadlineSeconds, backoffLimit, pendingTimeoutSeconds, recreationBackoff, "
        "schedulingPolicy, suspend, managedBy"
    ]


def test_a_misspelt_field_in_a_pod_value_is_an_error_at_the_field() -> None:
    text = document(extra='  pod:\n    env: {SHARD_INDEX: "string(replica.indx)"}\n')
    [problem] = [str(d) for d in validate_text(text, "demo.yaml")]
    assert problem.startswith(
        "demo.yaml:26:40: error: unknown field 'indx' of replica (did you mean 'index'?); "
        "its fields: type, index, restarts, desired"), problem


def test_a_misspelt_field_of_the_engine_status_is_an_error_at_the_field() -> None:
    """A Native-layout machine's `status` fields read the engine's status: a field it does
    not have is named, with the nearest one, where the expression is written."""
    native = document(extra='  status:\n    startTime: "status.startTme"\n').replace(
        "kind: Demo}", "kind: Demo, statusLayout: Native}")
    [problem] = [str(d) for d in validate_text(native, "demo.yaml")]
    assert problem.startswith(
        "demo.yaml:26:24: error: unknown field 'startTme' of status (did you mean "
        "'startTime'?); its fields: phase, state, restarts,"), problem
    fixed = native.replace("status.startTme", "has(status.startTime) ? status.startTime : ''")
    assert [str(d) for d in validate_text(fixed, "demo.yaml")] == []


def test_engine_fields_are_typed() -> None:
    [problem] = guard('"replicas.Head.desired + \'x\' == 1"')
    assert "found no matching overload for '_+_' applied to '(int, string)'" in problem
    assert guard('"has(runPolicy.schedulingPolicy) && '
                 'runPolicy.schedulingPolicy.minAvailable > 1"') == []
    assert guard('"replicas.Head.states.Running > 0 && replicas.Head.running > 0"') == []
