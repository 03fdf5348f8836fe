"""`strategicPatch`'s edges (strategic_patch.py): arguments of the wrong kind said in its own
words, a null for a key the target lacks, maps and keyed lists merged below the top by
their dotted path, a new entry that holds a list, an entry that is no map in a keyed list,
and the shared order rule putting the entries the patch does not name in the server's
order."""

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


def test_an_entry_that_is_no_map_in_a_keyed_list_is_kept() -> None:
    merged = evaluate("strategicPatch(job.t, [{'l': [{'name': 'a', 'v': 2}]}], {'l': 'name'})",
                      {"t": {"l": ["x", {"name": "a", "v": 1}]}})
    assert len(merged["l"]) == 2 and "x" in merged["l"] and {"name": "a", "v": 2} in merged["l"]


def test_the_entries_a_patch_does_not_name_go_in_the_servers_order() -> None:
    """The API server's strategic merge hands entries in its own order (the engine's
    strategicPatch hands them in the server's already)."""
    def position(items: list[Any], item: Any) -> int:
        return items.index(item) if item in items else -1

    assert normalized_order(["c", "b", "a"], [], ["a", "b", "c"], position) == ["a", "b", "c"]
