"""The `1,3-5,7` index interval syntax of succeededIndexes, status.completedIndexes and
status.failedIndexes, as kube-apiserver parses it (validateIndexesFormat,
parseIndexInterval, validateFailedIndexesNotOverlapCompleted).

Properties over random index sets: any set written as increasing intervals parses to its
size, however its runs are split; intervals out of order, an index at or above the
completions, and overlapping completed and failed lists are refused, naming the first
offending numbers. Examples pin the words of each parse error, which reach the user inside
a 422 message."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.cluster.apiserver.validation.job_policies import (
    indexes_format,
    indexes_overlap,
    parse_interval,
)

MAX_COMPLETIONS = 60


def runs(indexes: set[int]) -> list[tuple[int, int]]:
    """The maximal runs of consecutive indexes, in order."""
    found: list[tuple[int, int]] = []
    for index in sorted(indexes):
        if found and found[-1][1] == index - 1:
            found[-1] = (found[-1][0], index)
        else:
            found.append((index, index))
    return found


def written(intervals: list[tuple[int, int]]) -> str:
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in intervals)


@st.composite
def index_sets(draw: st.DrawFn) -> tuple[set[int], int]:
    """A set of indexes below some completions, and those completions."""
    completions = draw(st.integers(min_value=1, max_value=MAX_COMPLETIONS))
    indexes = draw(st.sets(st.integers(min_value=0, max_value=completions - 1)))
    return indexes, completions


@st.composite
def split_runs(draw: st.DrawFn, indexes: set[int]) -> list[tuple[int, int]]:
    """The set as increasing intervals, each maximal run cut at random places."""
    pieces: list[tuple[int, int]] = []
    for first, last in runs(indexes):
        cuts = sorted(draw(st.sets(st.integers(min_value=first + 1, max_value=last)))
                      if last > first else set())
        starts = [first, *cuts]
        ends = [cut - 1 for cut in cuts] + [last]
        pieces += list(zip(starts, ends, strict=True))
    return pieces


@settings(max_examples=200, deadline=None)
@given(data=st.data(), drawn=index_sets())
def test_any_increasing_interval_list_parses_to_the_number_of_indexes_it_names(
    data: st.DataObject, drawn: tuple[set[int], int]
) -> None:
    indexes, completions = drawn
    text = written(data.draw(split_runs(indexes)))
    assert indexes_format(text, completions) == (len(indexes), "")


@settings(max_examples=200, deadline=None)
@given(drawn=index_sets())
def test_every_interval_parses_to_its_bounds(drawn: tuple[set[int], int]) -> None:
    indexes, completions = drawn
    for first, last in runs(indexes):
        assert parse_interval(written([(first, last)]), completions) == (first, last, "")


@settings(max_examples=200, deadline=None)
@given(data=st.data(), drawn=index_sets())
def test_an_interval_that_does_not_start_after_the_last_one_ended_is_refused(
    data: st.DataObject, drawn: tuple[set[int], int]
) -> None:
    indexes, completions = drawn
    intervals = runs(indexes)
    if not intervals:
        return
    at = data.draw(st.integers(min_value=0, max_value=len(intervals) - 1))
    repeat = data.draw(st.integers(min_value=intervals[0][0], max_value=intervals[at][1]))
    bad = [*intervals[:at + 1], (repeat, repeat), *intervals[at + 1:]]
    assert indexes_format(written(bad), completions) == (
        0, f"non-increasing order, previous: {intervals[at][1]}, current: {repeat}")


@settings(max_examples=200, deadline=None)
@given(data=st.data(), drawn=index_sets())
def test_an_index_at_or_above_the_completions_is_too_large(
    data: st.DataObject, drawn: tuple[set[int], int]
) -> None:
    indexes, completions = drawn
    large = data.draw(st.integers(min_value=completions, max_value=completions + 5))
    text = written([*runs(indexes), (large, large)])
    assert indexes_format(text, completions) == (0, f'too large index: "{large}"')
    if indexes:
        first = min(indexes)
        ranged = written([(first, large)])
        assert parse_interval(ranged, completions) == (0, 0, f'too large index: "{large}"')


@settings(max_examples=300, deadline=None)
@given(data=st.data(), completions=st.integers(min_value=1, max_value=MAX_COMPLETIONS))
def test_completed_and_failed_lists_overlap_exactly_when_they_share_an_index(
    data: st.DataObject, completions: int
) -> None:
    below = st.sets(st.integers(min_value=0, max_value=completions - 1))
    completed, failed = data.draw(below), data.draw(below)
    completed_text = written(data.draw(split_runs(completed)))
    failed_text = written(data.draw(split_runs(failed)))
    shared = completed & failed
    expected = (f"failedIndexes and completedIndexes overlap at index: {min(shared)}"
                if shared else "")
    assert indexes_overlap(completed_text, failed_text, completions) == expected


def test_the_empty_list_names_no_index() -> None:
    assert indexes_format("", 3) == (0, "")


def test_a_fragment_of_three_parts_is_refused_whole() -> None:
    assert indexes_format("0,1-2-3", 5) == (
        0, "the fragment \"1-2-3\" violates the requirement that an index interval can have at "
        "most two parts separated by '-'")


def test_what_is_not_an_integer_is_named_quoted() -> None:
    assert indexes_format("0,x", 3) == (0, 'cannot convert string to integer for index: "x"')
    assert indexes_format("0,,2", 3) == (0, 'cannot convert string to integer for index: ""')
    assert indexes_format("1-", 3) == (0, 'cannot convert string to integer for index: ""')
    assert indexes_format("-1", 3) == (0, 'cannot convert string to integer for index: ""')
    assert indexes_format(" 1", 3) == (0, 'cannot convert string to integer for index: " 1"')
    assert indexes_format("1_0", 20) == (0, 'cannot convert string to integer for index: "1_0"')


def test_go_integers_with_a_sign_or_leading_zeros_are_integers() -> None:
    assert indexes_format("+0,02-+03", 5) == (3, "")


def test_an_integer_beyond_64_bits_does_not_convert() -> None:
    # strconv.Atoi fails with a range error before any comparison with the completions.
    huge = str(2**63)
    assert indexes_format(huge, 3) == (0, f'cannot convert string to integer for index: "{huge}"')
    assert indexes_format(str(2**63 - 1), 3) == (0, f'too large index: "{2**63 - 1}"')


def test_an_interval_must_increase() -> None:
    assert indexes_format("2-2", 5) == (0, "non-increasing order, previous: 2, current: 2")
    assert indexes_format("3-1", 5) == (0, "non-increasing order, previous: 3, current: 1")


def test_adjacent_intervals_are_increasing() -> None:
    assert indexes_format("0-1,2,3-4", 5) == (5, "")


def test_overlap_steps_over_intervals_that_do_not_parse() -> None:
    assert indexes_overlap("x,3", "1,y,3", 5) == (
        "failedIndexes and completedIndexes overlap at index: 3")
    assert indexes_overlap("", "1", 5) == ""
    assert indexes_overlap("1", "", 5) == ""
