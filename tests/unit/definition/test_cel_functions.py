"""Functions the engine adds to CEL: checked like the standard ones, evaluated to CEL values."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.definition import Facts, compile_definition, load_text, step
from engine.definition.cel import (
    CelCompileError,
    CelEvaluationError,
    CelProblem,
    Scope,
    compile_expression,
)
from engine.definition.templates import compile_template
from engine.definition.validate import validate_text
from engine.definition.vocabulary import FUNCTIONS
from tests.unit.definition.texts import JOB, document

JOB_SCOPE = Scope("job")
SUCCEEDED_IN_POLICY = (
    "sum(replicas.filter(t, t in job.spec.successPolicy.replicaTypes)"
    ".map(t, replicas[t].succeeded))"
)


def replicas(**succeeded: int) -> dict[str, dict[str, int]]:
    return {t: {"succeeded": n, "desired": 2} for t, n in succeeded.items()}


def policy(*types: str) -> dict[str, object]:
    return {"spec": {"successPolicy": {"replicaTypes": list(types)}}}


def guard(expression: str) -> list[str]:
    """Diagnostics for the job transition's guard, written at line 12 (its `"` at column 41)."""
    text = document(job=JOB.replace('"restarts == 0"', expression))
    return [str(d) for d in validate_text(text, "demo.yaml")]


def test_sum_adds_counts_across_the_replica_types_a_policy_names() -> None:
    expression = compile_expression(SUCCEEDED_IN_POLICY, JOB_SCOPE)
    assert expression.result_type == "int"
    assert expression.names == ("job", "replicas")
    variables = {"replicas": replicas(Master=1, Worker=2, PS=5), "job": policy("Master", "Worker")}
    assert expression.evaluate(variables) == 3
    assert type(expression.evaluate(variables)) is int


def test_a_guard_comparing_a_sum_against_ints_from_python_dicts() -> None:
    expression = compile_expression(f"{SUCCEEDED_IN_POLICY} >= 2", JOB_SCOPE)
    assert expression.result_type == "bool"
    job = policy("Worker", "Master")
    assert expression.evaluate({"replicas": replicas(Master=1, Worker=1, PS=4), "job": job})
    assert not expression.evaluate({"replicas": replicas(Master=0, Worker=1, PS=4), "job": job})


def test_the_sum_of_an_empty_list_is_the_int_zero() -> None:
    expression = compile_expression("sum([])", JOB_SCOPE)
    assert expression.result_type == "int"
    value = expression.evaluate({})
    assert value == 0 and type(value) is int
    nothing_named = compile_expression(f"{SUCCEEDED_IN_POLICY} == 0", JOB_SCOPE)
    assert nothing_named.evaluate({"replicas": replicas(Worker=3), "job": policy()}) is True


def test_the_sum_is_an_int_to_further_arithmetic() -> None:
    expression = compile_expression("sum([restarts, 2]) * 2 + 1 == 9", JOB_SCOPE)
    assert expression.evaluate({"restarts": 2}) is True


def test_a_list_of_strings_is_a_type_error_at_the_call() -> None:
    with pytest.raises(CelCompileError) as caught:
        compile_expression("restarts == 0 &&\n  sum(['a', 'b']) > 0", JOB_SCOPE)
    assert caught.value.problems == [CelProblem(
        2, 6, "CEL type error: found no matching overload for 'sum' applied to '(list(string))'"
    )]


def test_a_list_of_strings_is_reported_at_the_character_in_the_file() -> None:
    assert guard("\"sum(['a', 'b']) > 0\"") == [
        "demo.yaml:12:45: error: CEL type error: found no matching overload for 'sum' applied "
        "to '(list(string))'"
    ]


def test_a_call_of_another_shape_names_the_signature() -> None:
    assert guard('"sum(restarts, 1) > 0"') == [
        "demo.yaml:12:42: error: function 'sum' is called as sum(list(int)) -> int"
    ]
    assert guard('"[restarts].sum() > 0"') == [
        "demo.yaml:12:53: error: function 'sum' is called as sum(list(int)) -> int"
    ]


def test_elements_that_are_not_ints_at_run_time_are_an_error() -> None:
    expression = compile_expression("sum(job.counts)", JOB_SCOPE)
    for counts in ([1, 2.5], [True, True], [1, "2"]):
        with pytest.raises(CelEvaluationError, match="sum takes ints"):
            expression.evaluate({"job": {"counts": counts}})


def test_a_sum_beyond_int64_is_an_error() -> None:
    expression = compile_expression("sum(job.counts)", JOB_SCOPE)
    with pytest.raises(CelEvaluationError, match="does not fit in a CEL int"):
        expression.evaluate({"job": {"counts": [2**62, 2**62]}})
    assert expression.evaluate({"job": {"counts": [2**62, 2**62, -(2**62)]}}) == 2**62


def test_templates_combine_parts_that_call_engine_functions() -> None:
    template = compile_template("${sum([restarts, 1])} of ${restarts}", JOB_SCOPE)
    assert template.combined is not None and "sum" in template.combined.functions
    assert template.render({"restarts": 2}) == ("3 of 2", [])


def test_a_machine_guard_using_sum_steps_the_job() -> None:
    job = JOB.replace('"restarts == 0"', f'"{SUCCEEDED_IN_POLICY} >= 2"')
    (loaded,) = load_text(document(job=job), "demo.yaml")
    machine = compile_definition(loaded).job
    done = {"replicas": replicas(Master=1, Worker=1, PS=0), "job": policy("Master", "Worker")}
    assert step(machine, "Running", Facts(variables=done)).state == "Done"
    waiting = {**done, "replicas": replicas(Master=1, Worker=0, PS=3)}
    result = step(machine, "Running", Facts(variables=waiting))
    assert (result.state, result.errors) == ("Running", ())


def test_a_guard_whose_sum_fails_counts_as_false_and_is_reported() -> None:
    job = JOB.replace('"restarts == 0"', '"sum(job.counts) >= 2"')
    (loaded,) = load_text(document(job=job), "demo.yaml")
    result = step(compile_definition(loaded).job, "Running",
                  Facts(variables={"job": {"counts": [1.5, 1.5]}}))
    assert result.state == "Running"
    assert len(result.errors) == 1 and "sum takes ints" in result.errors[0]


def test_every_declared_function_is_documented_with_its_signature() -> None:
    doc = (Path(__file__).resolve().parents[3] / "docs" / "machine-language.md").read_text()
    assert [f.signature for f in FUNCTIONS if f"`{f.signature}`" not in doc] == []


@pytest.mark.parametrize(("text", "expected"), [
    ("", []), ("0", [0]), ("1,3-5", [1, 3, 4, 5]), ("0,1", [0, 1]), ("2-4,0", [0, 2, 3, 4]),
    ("3,3", [3]),
])
def test_indexes_reads_the_job_apis_interval_lists(text: str, expected: list[int]) -> None:
    expression = compile_expression("indexes(job.text)", JOB_SCOPE)
    assert expression.result_type == "list<int>"
    assert list(expression.evaluate({"job": {"text": text}})) == expected


@pytest.mark.parametrize("text", ["a", "1-", "-2", "3-1", "1,,x", "0-99999999999"])
def test_indexes_refuses_what_is_no_interval_list(text: str) -> None:
    expression = compile_expression("indexes(job.text)", JOB_SCOPE)
    with pytest.raises(CelEvaluationError, match="indexes"):
        expression.evaluate({"job": {"text": text}})


def test_first_index_says_which_rule_matched_first() -> None:
    expression = compile_expression("firstIndex(job.rules.map(r, r >= 2))", JOB_SCOPE)
    assert expression.result_type == "int"
    assert expression.evaluate({"job": {"rules": [1, 3, 5]}}) == 1
    assert expression.evaluate({"job": {"rules": [1, 0]}}) == -1
    assert expression.evaluate({"job": {"rules": []}}) == -1
    with pytest.raises(CelCompileError):
        compile_expression("firstIndex([1, 2])", JOB_SCOPE)


def test_ssh_key_pair_is_a_new_ecdsa_p521_pair_as_trainers_mpi_plugin_makes() -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    source = "[sshKeyPair()].map(k, [k.privateKey, k.publicKey])[0]"
    private, public = compile_expression(source, Scope("job")).evaluate({"job": {}})
    again = compile_expression(source, Scope("job")).evaluate({"job": {}})
    assert private.startswith("-----BEGIN EC PRIVATE KEY-----\n")
    key = serialization.load_pem_private_key(private.encode(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp521r1"
    # The public half in authorized_keys form, with its newline, is the private key's.
    assert public.startswith("ecdsa-sha2-nistp521 ") and public.endswith("\n")
    assert serialization.load_ssh_public_key(public.strip().encode()).public_numbers() == (
        key.public_key().public_numbers())
    assert again[0] != private
