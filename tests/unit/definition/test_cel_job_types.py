"""`job` typed against its kind's structural schema, as kube-apiserver types a CRD's rules:
fields the schema has are checked, open parts (int-or-string, preserve-unknown-fields,
names that are not identifiers) stay dynamic, and has() works on every field."""

from __future__ import annotations

from typing import Any

import pytest

from engine.definition.cel import CelCompileError, Scope, compile_expression
from engine.definition.cel_types import JobSchema, TypeContext

SPEC: dict[str, Any] = {
    "type": "object",
    "properties": {
        "input": {"type": "string"},
        "shards": {"type": "integer"},
        "ratio": {"type": "number"},
        "dryRun": {"type": "boolean"},
        "port": {"x-kubernetes-int-or-string": True},
        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "groups": {"type": "object", "additionalProperties": {
            "type": "array", "items": {"type": "string"}}},
        "steps": {"type": "array", "items": {
            "type": "object", "properties": {"name": {"type": "string"},
                                             "retries": {"type": "integer"}}}},
        "matrix": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
        "odd": {"type": "object", "properties": {"a-b": {"type": "string"}}},
    },
}
SCOPE = Scope("job", types=TypeContext(job_schema=JobSchema(
    {"type": "object", "properties": {"spec": SPEC}}, "Demo")))


def result(source: str) -> str:
    return compile_expression(source, SCOPE).result_type


def problem(source: str) -> str:
    with pytest.raises(CelCompileError) as raised:
        compile_expression(source, SCOPE)
    return str(raised.value)


def test_scalars_have_their_types() -> None:
    assert [result(s) for s in ("job.spec.input", "job.spec.shards", "job.spec.ratio",
                                "job.spec.dryRun")] == ["string", "int", "double", "bool"]
    assert "no matching overload for '_+_' applied to '(int, string)'" in problem(
        "job.spec.shards + 'x'")


def test_a_field_the_schema_does_not_have_is_named_with_the_nearest() -> None:
    assert problem("job.spec.inptu") == (
        "1:10: unknown field 'inptu' of job.spec (did you mean 'input'?); its fields: "
        "dryRun, extra, groups, input, labels, matrix, odd, port, ratio, shards, steps")
    assert "unknown field 'retry' of job.spec.steps[] (did you mean 'retries'?)" in problem(
        "job.spec.steps.all(s, s.retry > 0)")


def test_open_parts_stay_dynamic() -> None:
    assert result("job.spec.port") == "dyn"
    assert result("job.spec.extra.anything.deeper") == "dyn"
    assert result("job.spec.labels['team']") == "string"
    assert result("job.spec.groups['a'][0]") == "dyn"
    assert result("job.spec.matrix[0][1]") == "dyn"
    assert result("job.spec.odd['a-b']") == "dyn"


def test_has_works_on_every_field_and_metadata_and_status_are_there() -> None:
    assert result("has(job.spec.input) && has(job.spec.steps)") == "bool"
    assert result("job.metadata.name + job.metadata.namespace") == "string"
    assert result("job.metadata.labels['a']") == "string"
    assert result("has(job.status) && 'conditions' in job.status") == "bool"
    assert "unknown field 'nmae' of job.metadata (did you mean 'name'?)" in problem(
        "job.metadata.nmae")


def test_an_object_compared_with_a_map_says_what_the_object_is() -> None:
    assert "object job.spec" in problem("job.spec == {}")


def test_without_a_schema_job_is_an_untyped_map() -> None:
    assert compile_expression("job.spec.anything", Scope("job")).result_type == "dyn"
