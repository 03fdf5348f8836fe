"""The CEL types a kind's schema gives `job`, node by node, and the engine's own structs:
what an expression may select, what type it gets and what an error names (cel_types.py).

Each test builds its own schema, so each one builds the types it checks (they are cached per
schema)."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from engine.cli import app
from engine.definition.cel import CelCompileError, Scope, compile_expression
from engine.definition.cel_types import JobSchema, TypeContext
from engine.shipped import shipped_dir

STRINGS = {"type": "object", "additionalProperties": {"type": "string"}}
OBJECT = {"type": "object", "properties": {"name": {"type": "string"},
                                           "size": {"type": "integer"}}}


def spec_field(node: Any) -> Scope:
    """The job scope of a kind whose spec has one field, `f`, as written."""
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"f": node}}}}
    return Scope("job", types=TypeContext(job_schema=JobSchema(schema, "Demo")))


def typed(source: str, scope: Scope) -> str:
    return compile_expression(source, scope).result_type


def refused(source: str, scope: Scope) -> str:
    with pytest.raises(CelCompileError) as raised:
        compile_expression(source, scope)
    return str(raised.value)


@pytest.mark.parametrize(("node", "source", "expected"), [
    ({"type": "integer"}, "job.spec.f", "int"),
    ({"type": "number"}, "job.spec.f", "double"),
    ({"type": "boolean"}, "job.spec.f", "bool"),
    ({"type": "string", "enum": ["A", "B"]}, "job.spec.f", "string"),
    ({"type": "string", "format": "date-time"}, "job.spec.f", "string"),
    ({"type": "array", "items": {"type": "integer"}}, "job.spec.f", "list<int>"),
    ({"type": "array", "items": {"type": "string"}}, "job.spec.f[0]", "string"),
    ({"type": "array"}, "job.spec.f", "list<dyn>"),
    ({"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
     "job.spec.f", "list<dyn>"),
    ({"type": "array", "items": STRINGS}, "job.spec.f", "list<dyn>"),
    ({"type": "array", "items": {"x-kubernetes-int-or-string": True}}, "job.spec.f",
     "list<dyn>"),
    ({"type": "array", "items": OBJECT}, "job.spec.f[0].size", "int"),
    (STRINGS, "job.spec.f", "map<string, string>"),
    ({"type": "object", "additionalProperties": {"type": "integer"}}, "job.spec.f['a']",
     "int"),
    ({"type": "object", "additionalProperties": {"type": "array"}}, "job.spec.f",
     "map<string, dyn>"),
    ({"type": "object", "additionalProperties": STRINGS}, "job.spec.f", "map<string, dyn>"),
    ({"type": "object", "additionalProperties": OBJECT}, "job.spec.f['a'].name", "string"),
    ({"type": "object", "additionalProperties": True}, "job.spec.f", "map<string, dyn>"),
    ({"additionalProperties": {"type": "string"}}, "job.spec.f", "dyn"),
    ({"type": "object"}, "job.spec.f", "map<string, dyn>"),
    ({"type": "object", "x-kubernetes-preserve-unknown-fields": True,
      "properties": {"a": {"type": "integer"}}}, "job.spec.f", "map<string, dyn>"),
    ({"type": "object", "properties": {"a-b": {"type": "integer"}}}, "job.spec.f",
     "map<string, dyn>"),
    ({"type": "object", "properties": {"in": {"type": "integer"}}}, "job.spec.f",
     "map<string, dyn>"),
    ({"type": "object", "properties": {"a": {"type": "integer"}},
      "additionalProperties": {"type": "string"}}, "job.spec.f.a", "int"),
    ({"x-kubernetes-int-or-string": True}, "job.spec.f", "dyn"),
    ({"type": "integer", "x-kubernetes-int-or-string": True}, "job.spec.f", "dyn"),
    ({"type": "string", "x-kubernetes-int-or-string": True}, "job.spec.f", "dyn"),
    ({}, "job.spec.f", "dyn"),
    ({"type": "null"}, "job.spec.f", "dyn"),
    (None, "job.spec.f", "dyn"),
])
def test_a_schema_node_gives_its_field_a_cel_type(node: Any, source: str,
                                                   expected: str) -> None:
    assert typed(source, spec_field(node)) == expected


def test_an_object_field_is_an_object_with_exactly_its_properties() -> None:
    scope = spec_field({"type": "object", "properties": {
        "name": {"type": "string"}, "limits": {"type": "object", "properties": {
            "cpu": {"type": "integer"}}}}})
    assert typed("job.spec.f.limits.cpu + 1", scope) == "int"
    assert refused("job.spec.f.limits.mem", scope) == (
        "1:19: unknown field 'mem' of job.spec.f.limits; its fields: cpu")
    assert refused("job.spec.f.nmae", scope) == (
        "1:12: unknown field 'nmae' of job.spec.f (did you mean 'name'?); its fields: "
        "limits, name")
    assert "'(object job.spec.f, map(T%1, T%2))'" in refused("job.spec.f == {}", scope)


def test_a_list_of_objects_and_a_map_of_objects_name_their_members_in_errors() -> None:
    listed = spec_field({"type": "array", "items": OBJECT})
    assert refused("job.spec.f.all(s, s.szie > 0)", listed) == (
        "1:21: unknown field 'szie' of job.spec.f[] (did you mean 'size'?); its fields: "
        "name, size")
    mapped = spec_field({"type": "object", "additionalProperties": OBJECT})
    assert refused("job.spec.f['a'].nam", mapped) == (
        "1:17: unknown field 'nam' of job.spec.f[*] (did you mean 'name'?); its fields: "
        "name, size")


def test_a_mistyped_field_is_refused_with_both_types() -> None:
    assert "applied to '(int, string)'" in refused(
        "job.spec.f + 'x'", spec_field({"type": "integer"}))
    assert "applied to '(list(int), int)'" in refused(
        "job.spec.f + 1", spec_field({"type": "array", "items": {"type": "integer"}}))
    assert "applied to '(map(string, string), int)'" in refused(
        "job.spec.f + 1", spec_field(STRINGS))


def test_objects_whose_names_meet_are_kept_apart() -> None:
    """spec.a_b, spec_a.b and spec_a_b all make a message named Job_spec_a_b."""
    def holding(field: str, kind: str) -> dict[str, Any]:
        return {"type": "object", "properties": {field: {"type": kind}}}
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"a_b": holding("p", "integer")}},
        "spec_a": {"type": "object", "properties": {"b": holding("q", "string")}},
        "spec_a_b": holding("r", "boolean")}}
    scope = Scope("job", types=TypeContext(job_schema=JobSchema(schema, "Demo")))
    assert [typed(s, scope) for s in ("job.spec.a_b.p", "job.spec_a.b.q", "job.spec_a_b.r")
            ] == ["int", "string", "bool"]
    assert refused("job.spec_a.b.p", scope) == (
        "1:14: unknown field 'p' of job.spec_a.b; its fields: q")


def test_the_job_has_metadata_as_the_engine_gives_it_and_an_open_status() -> None:
    # CRDs write metadata as a bare object; the engine's metadata is typed all the same.
    scope = Scope("job", types=TypeContext(job_schema=JobSchema({"type": "object", "properties": {
        "metadata": {"type": "object"}, "spec": OBJECT}}, "Demo")))
    assert [typed(s, scope) for s in (
        "job.apiVersion", "job.kind", "job.metadata.generation", "job.metadata.labels",
        "job.metadata.finalizers", "job.metadata.ownerReferences[0].controller",
        "job.status", "job.status.anything")] == [
        "string", "string", "int", "map<string, string>", "list<string>", "bool",
        "map<string, dyn>", "dyn"]
    assert refused("job.spce", scope) == (
        "1:5: unknown field 'spce' of job (did you mean 'spec'?); its fields: apiVersion, "
        "kind, metadata, spec, status")


def test_the_kinds_own_status_apiversion_and_kind_are_kept() -> None:
    scope = Scope("job", types=TypeContext(job_schema=JobSchema({"type": "object", "properties": {
        "apiVersion": {"x-kubernetes-int-or-string": True},
        "kind": {"type": "string", "enum": ["Demo"]},
        "status": {"type": "object", "properties": {"phase": {"type": "string"}}}}}, "Demo")))
    assert typed("job.apiVersion", scope) == "dyn"
    assert typed("job.status.phase", scope) == "string"
    assert refused("job.status.phsae", scope) == (
        "1:12: unknown field 'phsae' of job.status (did you mean 'phase'?); its fields: phase")


def test_a_top_level_name_that_is_no_identifier_leaves_the_job_untyped() -> None:
    scope = Scope("job", types=TypeContext(job_schema=JobSchema({"type": "object", "properties": {
        "spec": OBJECT, "x-data": {"type": "object", "properties": {
            "a": {"type": "string"}}}}}, "Demo")))
    assert typed("job['x-data'].a", scope) == "dyn"
    assert typed("job.spec.anything", scope) == "dyn"


def test_the_engine_structs_fields_have_their_signatures() -> None:
    replica = Scope("job", types=TypeContext(phase_words=("running", "active")))
    assert [typed(s, replica) for s in (
        "replicas['w'].running", "replicas['w'].active", "replicas['w'].states",
        "replicas['w'].states['Running'] + 1", "runPolicy.schedulingPolicy.minAvailable",
        "runPolicy.schedulingPolicy.minResources")] == [
        "int", "int", "map<string, int>", "int", "int", "map<string, dyn>"]
    assert "unknown field 'runnign' of a replica type's summary (did you mean 'running'?)" in (
        refused("replicas['w'].runnign", replica))
    status = Scope("job", status=True)
    assert [typed(s, status) for s in (
        "status.lastTransitions", "status.conditions", "status.replicaStatuses",
        "status.restarts")] == ["list<string>", "list<dyn>", "map<string, dyn>", "int"]
    assert "applied to '(list(string), int)'" in refused("status.lastTransitions + 1", status)


def test_references_has_one_map_per_reference_the_machine_names() -> None:
    scope = Scope("job", types=TypeContext(references=("runtime", "queue")))
    assert typed("references.runtime", scope) == "map<string, dyn>"
    assert typed("references.queue['spec']", scope) == "dyn"
    assert refused("references.runtme", scope) == (
        "1:12: unknown field 'runtme' of references (did you mean 'runtime'?); its fields: "
        "runtime, queue")


def test_job_schemas_are_equal_by_content() -> None:
    one = JobSchema({"type": "object", "properties": {"a": {"type": "string"}}}, "Demo")
    same = JobSchema({"properties": {"a": {"type": "string"}}, "type": "object"}, "Demo")
    other = JobSchema({"type": "object", "properties": {"b": {"type": "string"}}}, "Demo")
    assert one == same and hash(one) == hash(same)
    assert one != other and hash(one) != hash(other)
    assert one != dict(one.schema)
    assert len({one, same, other}) == 2


def test_a_schema_holding_a_yaml_date_is_compared_by_it() -> None:
    """YAML reads `default: 2024-01-01` as a date, which JSON has no word for."""
    def dated(day: int) -> JobSchema:
        return JobSchema({"type": "object", "properties": {"start": {
            "type": "string", "default": datetime.date(2024, 1, day)}}}, "Demo")
    assert dated(1) == dated(1)
    assert dated(1) != dated(2)


# Through `jobmachine validate`, with the kind's CRD beside the machine.
EXAMPLE = shipped_dir("examples") / "custom-kind"


def _validate(folder: Path, expression: str, top_level: dict[str, Any] | None = None
              ) -> tuple[int, str, Path]:
    crd = yaml.safe_load((EXAMPLE / "shardedjob-crd.yaml").read_text())
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"].update(
        top_level or {})
    (folder / "shardedjob-crd.yaml").write_text(yaml.safe_dump(crd))
    machine = folder / "shardedjob-machine.yaml"
    machine.write_text((EXAMPLE / "shardedjob-machine.yaml").read_text().replace(
        '"job.spec.input"', f'"{expression}"'))
    result = CliRunner().invoke(app, ["validate", str(machine)])
    return result.exit_code, result.output, machine


def test_validate_names_an_unknown_or_mistyped_field_at_its_place(tmp_path: Path) -> None:
    code, output, machine = _validate(tmp_path, "job.spec.inptu")
    assert code == 1
    assert f"{machine}:22:24: error: unknown field 'inptu' of job.spec (did you mean " \
        "'input'?); its fields: failureRules, input, runPolicy, shards\n" in output
    code, output, machine = _validate(tmp_path, "job.spec.input + 1")
    assert code == 1
    assert f"{machine}:22:" in output and "applied to '(string, int)'" in output


def test_validate_accepts_a_kind_with_a_top_level_name_that_is_no_identifier(
        tmp_path: Path) -> None:
    code, output, _ = _validate(tmp_path, "job.spec.inptu", {"x-data": OBJECT})
    assert code == 0, output
    assert "0 errors" in output
