"""The CEL function `strategicPatch`: Kubernetes' strategic merge patch, merge keys given by
path (Trainer's runtimePatches over a JobSet spec), with apimachinery's order of entries."""

from __future__ import annotations

from typing import Any

import pytest

from engine.definition.cel import CelCompileError, CelEvaluationError, Scope, compile_expression

JOB_SCOPE = Scope("job")
KEYS = ("{'replicatedJobs': 'name', 'replicatedJobs.containers': 'name', "
        "'replicatedJobs.containers.env': 'name'}")


def evaluate(source: str, job: Any = None) -> Any:
    return compile_expression(source, JOB_SCOPE).evaluate({"job": job or {}})


def test_lists_with_a_key_merge_entry_by_entry_and_others_are_replaced() -> None:
    spec = {"replicatedJobs": [
        {"name": "init", "containers": [{"name": "init", "image": "i"}]},
        {"name": "node", "tolerations": [{"key": "a"}], "containers": [
            {"name": "node", "image": "n", "env": [{"name": "A", "value": "1"}]}]}]}
    patch = {"replicatedJobs": [{"name": "node", "tolerations": [{"key": "b"}], "containers": [
        {"name": "node", "env": [{"name": "A", "valueFrom": {"x": 1}}]}]}]}
    assert evaluate(f"strategicPatch(job.spec, [job.patch], {KEYS})",
                    {"spec": spec, "patch": patch}) == {"replicatedJobs": [
        {"name": "init", "containers": [{"name": "init", "image": "i"}]},
        {"name": "node", "tolerations": [{"key": "b"}], "containers": [
            {"name": "node", "image": "n",
             "env": [{"name": "A", "value": "1", "valueFrom": {"x": 1}}]}]}]}


def test_an_entry_new_to_a_list_goes_before_the_ones_the_patch_does_not_name() -> None:
    """apimachinery's mergeSortedSlice: a patch entry not in the list is placed first."""
    env = [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    assert evaluate("strategicPatch({'env': job.env}, [{'env': job.add}], {'env': 'name'}).env",
                    {"env": env, "add": [{"name": "B", "value": "3"}, {"name": "C"}]}) == [
        {"name": "A", "value": "1"}, {"name": "B", "value": "3"}, {"name": "C"}]
    assert evaluate("strategicPatch({'env': job.env}, [{'env': [{'name': 'C'}]}], "
                    "{'env': 'name'}).env", {"env": env}) == [
        {"name": "C"}, {"name": "A", "value": "1"}, {"name": "B", "value": "2"}]


def test_patch_entries_keep_the_patchs_order_among_themselves() -> None:
    assert [e["name"] for e in evaluate(
        "strategicPatch({'l': job.l}, [{'l': [{'name': 'c'}, {'name': 'a'}]}], {'l': 'name'}).l",
        {"l": [{"name": "a"}, {"name": "b"}, {"name": "c"}]})] == ["b", "c", "a"]


def test_patches_apply_in_turn_and_a_null_removes_its_key() -> None:
    assert evaluate(
        "strategicPatch({'labels': {'a': '1', 'b': '2'}, 'x': 1}, "
        "[{'labels': {'a': '3'}}, {'labels': {'a': '4', 'b': null}, 'x': null}], {})") == {
        "labels": {"a": "4"}}


def test_the_arguments_are_left_as_they_were() -> None:
    job = {"spec": {"l": [{"name": "a", "v": 1}]}}
    evaluate("strategicPatch(job.spec, [{'l': [{'name': 'a', 'v': 2}]}], {'l': 'name'})", job)
    assert job == {"spec": {"l": [{"name": "a", "v": 1}]}}


def test_an_entry_without_its_key_is_an_evaluation_error() -> None:
    with pytest.raises(CelEvaluationError, match="is not a map with 'name'"):
        evaluate("strategicPatch({'l': []}, [{'l': [{'v': 1}]}], {'l': 'name'})")
    with pytest.raises(CelEvaluationError, match="is not a map"):
        evaluate("strategicPatch({}, [1], {})")


def test_the_checker_knows_its_types() -> None:
    with pytest.raises(CelCompileError, match="no matching overload"):
        compile_expression("strategicPatch({}, {}, {})", JOB_SCOPE)
    assert compile_expression("strategicPatch({}, [], {})", JOB_SCOPE).result_type == (
        "map<string, dyn>")
