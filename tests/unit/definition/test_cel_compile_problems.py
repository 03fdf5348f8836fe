"""Where and in what words an expression that does not compile is refused: each problem at
the line and column inside the expression where the author wrote the name, call or
token at fault (validation adds the expression's place in the file)."""

from __future__ import annotations

import pytest

from engine.definition.cel import CelCompileError, CelProblem, Scope, compile_expression
from engine.definition.cel_types import JobSchema, TypeContext

JOB = Scope("job")
VISIBLE = ("job, runPolicy, replicas, restarts, error, lastFailure, lastFailureCause, "
           "gangScheduler, objects, children, references")


def problems(source: str) -> list[tuple[int, int, str]]:
    with pytest.raises(CelCompileError) as caught:
        compile_expression(source, JOB)
    return [(p.line, p.column, p.message) for p in caught.value.problems]


def unknown(name: str) -> str:
    return f"unknown variable '{name}'; visible here: {VISIBLE}"


@pytest.mark.parametrize(("source", "found"), [
    # A name written inside a longer one, or as a field, before the unknown name.
    ("nopes == 1 || nope == 1", [(1, 1, unknown("nopes")), (1, 15, unknown("nope"))]),
    ("job.nope + nope", [(1, 12, unknown("nope"))]),
    # A dotted path is refused at its first name, wherever the same name comes again.
    ("ab.ab.x == 1", [(1, 1, unknown("ab"))]),
    ("restarts + nope.nope.nope", [(1, 12, unknown("nope"))]),
    ("nope.x + nope", [(1, 1, unknown("nope")), (1, 10, unknown("nope"))]),
    ("restarts + nope . x", [(1, 12, unknown("nope"))]),
    ("restarts == 0 &&\n  nope.a.b > 0", [(2, 3, unknown("nope"))]),
])
def test_an_unknown_variable_is_said_where_its_name_is_written(
    source: str, found: list[tuple[int, int, str]],
) -> None:
    assert problems(source) == found


@pytest.mark.parametrize(("source", "found"), [
    ("sum([1]) + sum(1, 2) > 0", (1, 12, "function 'sum' is called as sum(list(int)) -> int")),
    ("sum(1, 2) > 0 && sum([1]) > 0",
     (1, 1, "function 'sum' is called as sum(list(int)) -> int")),
    ("restarts == 0 &&\n  restarts > 1 && sum(1, 2) > 0",
     (2, 19, "function 'sum' is called as sum(list(int)) -> int")),
    ("restarts + nope(1) + nope(2)", (1, 12, "unknown function 'nope'")),
])
def test_a_call_is_said_at_the_name_of_its_function(
    source: str, found: tuple[int, int, str],
) -> None:
    assert problems(source)[0] == found


def test_a_namespaced_function_is_said_at_its_own_name() -> None:
    assert problems("restarts + math.nope(1)") == [
        (1, 12, unknown("math")), (1, 17, "unknown function 'nope'")]


def test_a_function_the_evaluator_lacks_is_said_at_its_line_and_column() -> None:
    source = "restarts == 0 &&\n restarts == 1 ||\n  error.format([1]) == ''"
    assert problems(source) == [
        (3, 9, "function 'format' is not supported by the expression evaluator")]


def test_at_most_three_problems_are_said() -> None:
    assert problems("a1 + a2 + a3 + a4 == 1") == [
        (1, 1, unknown("a1")), (1, 6, unknown("a2")), (1, 11, unknown("a3"))]
    assert problems("nope + 1 == 2") == [(1, 1, unknown("nope"))]


def test_several_problems_are_one_error_joined_in_order() -> None:
    with pytest.raises(CelCompileError) as caught:
        compile_expression("a1 + a2 == 1", JOB)
    assert str(caught.value) == f"1:1: {unknown('a1')}; 1:6: {unknown('a2')}"


@pytest.mark.parametrize(("source", "found"), [
    # Syntax the checker reads but the evaluator does not.
    ("job.?x", [(1, 1, "CEL syntax error: unsupported syntax '.?'")]),
    ("[?optional.none()]", [(1, 2, "CEL syntax error: unsupported syntax '?'")]),
    # Problems said without a place: the first line of the words, at the start.
    ("1.0e400", [(1, 1, "not supported by the expression evaluator: invalid double literal")]),
    ("(" * 40 + "1" + ")" * 40,
     [(1, 1, "CANCELLED: Expression recursion limit exceeded. limit: 32 [CANCELLED]")]),
])
def test_what_the_evaluator_cannot_run_is_refused_in_its_words(
    source: str, found: list[tuple[int, int, str]],
) -> None:
    assert problems(source) == found


def test_an_unknown_field_of_a_map_is_no_problem_but_of_a_typed_value_is() -> None:
    assert compile_expression("{1: 2}.a == 2", JOB).result_type == "bool"
    assert problems("runPolicy.suspend.x") == [
        (1, 18, "CEL type error: expression of type 'bool' cannot be the operand of a "
                "select operation")]


def test_an_empty_expression_is_one_problem() -> None:
    for source in ("", "  \n "):
        with pytest.raises(CelCompileError) as caught:
            compile_expression(source, JOB)
        assert caught.value.problems == [CelProblem(1, 1, "empty CEL expression")]


@pytest.mark.parametrize(("source", "named"), [
    ("1u", "uint"), ("timestamp('2020-01-01T00:00:00Z')", "timestamp"),
    ("duration('1s')", "duration"), ("2.5", "double"), ("dyn(1)", "dyn"),
    ("[1]", "list<int>"),
])
def test_what_an_expression_gives_is_named_as_the_language_names_it(
    source: str, named: str,
) -> None:
    assert compile_expression(source, JOB).result_type == named


def test_an_object_of_a_typed_job_gives_a_map() -> None:
    """A message of the kind's schema is a map to the evaluator and to what checks types."""
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "size": {"type": "integer"}}}}}
    typed = Scope("job", types=TypeContext(job_schema=JobSchema(schema, "Demo")))
    assert compile_expression("job.spec", typed).result_type == "map"
    assert compile_expression("job.spec.size", typed).result_type == "int"
