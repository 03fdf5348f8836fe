"""`strategicPatch`'s edges (strategic_patch.py): arguments of the wrong kind said in its own
words, a null for a key the target lacks, maps and keyed lists merged below the top by
their dotted path, a new entry that holds a list, a value new to the target taken as
written, a keyed list of mixed entries refused, and the shared order rule putting the
entries the patch does not name in the server's order."""

from __future__ import annotations

from typing import Any

import pytest

from engine.definition.cel import CelEvaluationError, Scope, compile_expression
from engine.definition.strategic_patch import normalized_order


def evaluate(source: str, job: Any = None) -> Any:
    return compile_expression(source, Scope("job")).evaluate({"job": job or {}})


@pytest.mark.parametrize(("target", "patches", "said"), [
    (1, [], "strategicPatch takes a map and a list of maps, not 1 and []"),
    ({}, {"a": 1}, "strategicPatch takes a map and a list of maps, not {} and {'a': 1}"),
])
def test_a_target_that_is_no_map_or_patches_that_are_no_list_are_said_so(
    target: Any, patches: Any, said: str,
) -> None:
    with pytest.raises(CelEvaluationError) as raised:
        evaluate("strategicPatch(job.t, job.p, {})", {"t": target, "p": patches})
    assert said in str(raised.value)


@pytest.mark.parametrize("keys", [[], {"l": 1}, {1: "name"}])
def test_merge_keys_that_are_no_map_of_strings_are_said_so(keys: Any) -> None:
    with pytest.raises(CelEvaluationError) as raised:
        evaluate("strategicPatch({}, [], job.k)", {"k": keys})
    assert f"strategicPatch: the merge keys {keys!r} are not a map of strings" in str(
        raised.value)


def test_a_null_for_a_key_the_target_lacks_changes_nothing() -> None:
    assert evaluate("strategicPatch({'a': 1}, [{'b': null}], {})") == {"a": 1}


def test_a_map_below_the_top_is_merged_into_the_targets() -> None:
    assert evaluate("strategicPatch({'meta': {'labels': {'a': '1', 'b': '2'}}}, "
                    "[{'meta': {'labels': {'a': '3'}}}], {})") == {
        "meta": {"labels": {"a": "3", "b": "2"}}}


def test_a_keyed_list_below_a_map_is_merged_by_its_dotted_path() -> None:
    spec = {"template": {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}}
    assert evaluate("strategicPatch(job.spec, [{'template': {'env': [{'name': 'B', "
                    "'value': '3'}]}}], {'template.env': 'name'})", {"spec": spec}) == {
        "template": {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}]}}


def test_a_new_entry_of_a_keyed_list_keeps_the_lists_it_holds() -> None:
    assert evaluate("strategicPatch({'l': []}, [{'l': [{'name': 'new', 'ports': [1, 2]}]}], "
                    "{'l': 'name'})") == {"l": [{"name": "new", "ports": [1, 2]}]}


@pytest.mark.parametrize(("target", "patch"), [
    (["x", {"name": "a", "v": 1}], [{"name": "a", "v": 2}]),
    ([{"name": "a", "v": 1}], ["x"]),
])
def test_a_keyed_list_whose_entries_are_not_all_maps_is_refused(target: Any, patch: Any
                                                                ) -> None:
    """As apimachinery's sliceElementType refuses a list of mixed entries."""
    with pytest.raises(CelEvaluationError) as raised:
        evaluate("strategicPatch(job.t, [{'l': job.p}], {'l': 'name'})",
                 {"t": {"l": target}, "p": patch})
    assert "strategicPatch: the entries of the list at l are not all maps" in str(raised.value)


def test_a_value_new_to_the_target_is_taken_as_written_but_for_its_nulls() -> None:
    """apimachinery merges nothing below a key or a list entry the original lacks: a new
    entry's own keyed list keeps two entries of one name and one without the key, and only
    nulls are dropped (discardNullValuesFromPatch). So a key the target has with a value
    of another kind."""
    keys = "{'jobs': 'name', 'jobs.env': 'name', 'env': 'name'}"
    env = [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}, {"value": "3"},
           {"name": "B", "value": None}]
    written = [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}, {"value": "3"},
               {"name": "B"}]
    merged = evaluate(f"strategicPatch(job.t, [job.p], {keys})", {
        "t": {"jobs": [{"name": "old"}], "env": {"was": "a map"}},
        "p": {"jobs": [{"name": "new", "env": env}], "env": env, "extra": {"env": env}}})
    assert merged == {"jobs": [{"name": "new", "env": written}, {"name": "old"}],
                      "env": written, "extra": {"env": written}}


def test_the_entries_a_patch_does_not_name_go_in_the_servers_order() -> None:
    """The API server's strategic merge hands entries in its own order (the engine's
    strategicPatch hands them in the server's already)."""
    def position(items: list[Any], item: Any) -> int:
        return items.index(item) if item in items else -1

    assert normalized_order(["c", "b", "a"], [], ["a", "b", "c"], position) == ["a", "b", "c"]
