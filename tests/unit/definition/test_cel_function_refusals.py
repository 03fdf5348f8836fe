"""The engine's CEL functions over values the checker could not type (a `dyn` field of the
job): a value of the wrong kind is an evaluation error in the function's own words, naming
the value, so a machine author reads which call failed and on what."""

from __future__ import annotations

from typing import Any

import pytest

from engine.definition import cel
from engine.definition.cel import CelEvaluationError, Scope, compile_expression

JOB_SCOPE = Scope("job")


def evaluate(source: str, job: dict[str, Any]) -> Any:
    return compile_expression(source, JOB_SCOPE).evaluate({"job": job})


@pytest.mark.parametrize(("source", "job", "words"), [
    ("merge(job.a, job.b)", {"a": {"x": 1}, "b": [1]},
     "merge takes two maps, not {'x': 1} and [1]"),
    ("merge(job.a, job.b)", {"a": [1], "b": {"x": 1}},
     "merge takes two maps, not [1] and {'x': 1}"),
    ("indexes(job.a)", {"a": 3}, "indexes takes a string, not 3"),
    ("indexes(job.a)", {"a": "1,x"}, "indexes: 'x' is not an index or a range a-b"),
    ("indexes(job.a)", {"a": "3-1"}, "indexes: '3-1' is not an ascending range of indexes"),
    ("firstIndex(job.a)", {"a": [False, 1]}, "firstIndex takes bools, not 1"),
    ("sha1(job.a)", {"a": 1}, "sha1 takes a string, not 1"),
    ("sort(job.a)", {"a": ["b", 1]}, "sort takes a list of strings, not ['b', 1]"),
    ("sort(job.a)", {"a": "ba"}, "sort takes a list of strings, not 'ba'"),
    ("sum(job.a)", {"a": [1, "x"]}, "sum takes ints, not 'x'"),
    ("upsert(job.a, job.b, job.c)", {"a": [], "b": [], "c": 1},
     "upsert takes two lists and a key, not [], [], 1"),
    ("upsert(job.a, job.b, 'n')", {"a": {}, "b": []},
     "upsert takes two lists and a key, not {}, [], 'n'"),
    ("upsert(job.a, job.b, 'n')", {"a": [], "b": {}},
     "upsert takes two lists and a key, not [], {}, 'n'"),
    ("upsert(job.a, job.b, 'n')", {"a": [], "b": [{"m": 1}]},
     "upsert: {'m': 1} is not a map with 'n'"),
    ("upsert(job.a, job.b, 'n')", {"a": [], "b": [3]}, "upsert: 3 is not a map with 'n'"),
])
def test_a_value_of_the_wrong_kind_is_refused_in_the_functions_words(
    source: str, job: dict[str, Any], words: str,
) -> None:
    with pytest.raises(CelEvaluationError) as caught:
        evaluate(source, job)
    assert words in str(caught.value)
    assert str(caught.value).startswith(repr(source) + ": ")


def test_an_error_that_is_no_missing_key_is_said_as_the_evaluator_says_it() -> None:
    """Only a missing key reads `no such key: x`; any other error keeps its own words."""
    with pytest.raises(CelEvaluationError) as caught:
        evaluate("job.a.b", {"a": {}})
    assert str(caught.value) == "'job.a.b': no such key: b"
    assert cel.failure_words(KeyError("b")) == "no such key: b"
    assert cel.failure_words(ValueError("b")) == "b"
    assert cel.failure_words(KeyError("a", "b")) == str(KeyError("a", "b"))


def test_indexes_at_high_numbers_count_the_range_not_its_ends() -> None:
    assert evaluate("indexes(job.a)", {"a": "99999999-100000001"}) == [
        99999999, 100000000, 100000001]


def test_indexes_bounds_one_range_and_what_was_read_before_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A range may span the bound's count of indexes plus one, and a list may go on while it
    has read no more than the bound: checked with a bound of 10 rather than 10^7."""
    monkeypatch.setattr(cel, "_MAX_INTERVAL", 10)
    assert evaluate("indexes(job.a)", {"a": "5-15"}) == list(range(5, 16))
    assert evaluate("indexes(job.a)", {"a": "0-9,20"}) == [*range(10), 20]
    for refused in ("5-16", "0-10,20"):
        with pytest.raises(CelEvaluationError, match="is not an ascending range of indexes"):
            evaluate("indexes(job.a)", {"a": refused})


def test_each_function_the_vocabulary_declares_is_called_by_its_own_implementation() -> None:
    """The table is made at import: made again, each name has its declaration and the
    evaluator's function, and a function declared without an implementation is refused."""
    made = cel._engine_functions()
    assert made.keys() == {f.name for f in cel.FUNCTIONS}
    for function in cel.FUNCTIONS:
        assert made[function.name].spec is function
        assert made[function.name].implementation is cel._IMPLEMENTATIONS[function.name]
    assert made == cel.ENGINE_FUNCTIONS


def test_a_function_declared_but_not_implemented_is_refused_at_import(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(cel._IMPLEMENTATIONS, "sort")
    with pytest.raises(RuntimeError) as caught:
        cel._engine_functions()
    assert str(caught.value) == (
        f"CEL functions declared {sorted(f.name for f in cel.FUNCTIONS)} but implemented "
        f"{sorted(n for n in cel._IMPLEMENTATIONS)}: vocabulary.py and cel.py must agree")


def test_extension_functions_are_found_by_their_last_name_with_every_full_name() -> None:
    """`Program.functions()` names `math.greatest` as `greatest`: the evaluator must be
    given it under its full name, and a short name shared by two extensions gives both."""
    found = cel._extensions_by_short_name()
    assert found == cel._EXTENSIONS
    assert found["greatest"] == {"math.greatest": cel.STDLIB_FUNCTIONS["math.greatest"]}
    assert found["contains"].keys() == {"contains", "sets.contains"}
    every = {full for by_full in found.values() for full in by_full}
    assert every == set(cel.STDLIB_FUNCTIONS)
    for short, by_full in found.items():
        assert all(full.rsplit(".", 1)[-1] == short for full in by_full)
