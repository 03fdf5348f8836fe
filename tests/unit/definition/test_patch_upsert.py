"""The CEL functions `patch` (a JSON merge patch) and `upsert` (Kubernetes' merge by key)."""

from __future__ import annotations

from typing import Any

import pytest

from engine.definition.cel import CelCompileError, CelEvaluationError, Scope, compile_expression

JOB_SCOPE = Scope("job")


def evaluate(source: str, job: Any = None) -> Any:
    return compile_expression(source, JOB_SCOPE).evaluate({"job": job or {}})


def test_patch_merges_maps_at_every_depth_and_replaces_the_rest() -> None:
    assert evaluate(
        "patch(job.rj, {'replicas': 1, 'template': {'spec': {'parallelism': 2, 'x': [2]}}})",
        {"rj": {"name": "node", "replicas": 4,
                "template": {"metadata": {"a": "b"}, "spec": {"parallelism": 1, "x": [1, 3]}}}},
    ) == {"name": "node", "replicas": 1,
          "template": {"metadata": {"a": "b"}, "spec": {"parallelism": 2, "x": [2]}}}


def test_a_null_in_the_patch_removes_its_key_and_a_missing_map_is_made() -> None:
    assert evaluate("patch(job.c, {'image': null, 'resources': {'limits': {'cpu': '2'}}})",
                    {"c": {"name": "node", "image": "old"}}) == {
        "name": "node", "resources": {"limits": {"cpu": "2"}}}


def test_patch_leaves_its_arguments_as_they_were() -> None:
    job = {"c": {"r": {"a": 1}}}
    evaluate("patch(job.c, {'r': {'b': 2}})", job)
    assert job == {"c": {"r": {"a": 1}}}


def test_upsert_replaces_in_place_and_appends_new_names_in_order() -> None:
    assert evaluate(
        "upsert(job.env, [{'name': 'B', 'value': '2'}, {'name': 'C', 'value': '3'}], 'name')",
        {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "old"}]},
    ) == [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}, {"name": "C", "value": "3"}]


def test_upsert_keys_by_the_field_named() -> None:
    assert evaluate("upsert(job.ports, [{'containerPort': 29500}], 'containerPort')",
                    {"ports": [{"containerPort": 29500, "name": "x"}, {"containerPort": 80}]}) == [
        {"containerPort": 29500}, {"containerPort": 80}]


def test_an_entry_without_the_key_is_an_evaluation_error() -> None:
    with pytest.raises(CelEvaluationError, match="upsert"):
        evaluate("upsert([], [{'value': '1'}], 'name')")


def test_the_checker_knows_their_types() -> None:
    with pytest.raises(CelCompileError, match="no matching overload"):
        compile_expression("upsert([], [], 1)", JOB_SCOPE)
    assert compile_expression("patch({}, {})", JOB_SCOPE).result_type == "map<string, dyn>"
