"""Where the positions index (positions.py) puts a problem: a CEL error's column when its
expression is a double-quoted YAML scalar that ends in an escape (each escape counts as
written, two or more characters, up to the very end of the expression), the field path
each problem carries, and a mapping key that is no plain value."""

from __future__ import annotations

from engine.definition.errors import Position
from engine.definition.loader import read_text
from engine.definition.positions import PositionIndex
from engine.definition.validate import validate_text
from tests.unit.definition.texts import JOB, document

EOF_ERROR = "error: CEL syntax error: mismatched input '<EOF>'"


def end_column(when: str) -> str:
    """Where the error of a guard that ends too early is reported, as `line:column`."""
    job = JOB.replace('when: "restarts == 0"', f"when: {when}")
    (problem,) = [str(d) for d in validate_text(document(job=job), "d.yaml")]
    assert EOF_ERROR in problem
    return problem.split(": ")[0].removeprefix("d.yaml:")


def test_an_error_after_a_closing_escape_is_reported_past_it_as_written() -> None:
    # The guard's text starts at column 42 of line 12.
    assert end_column('"restarts =="') == "12:53"
    assert end_column('"restarts ==\\t"') == "12:55"  # \t: two characters in the file
    assert end_column('"restarts ==\\x09"') == "12:57"  # \x09: four


def test_a_problem_carries_the_field_path_of_its_node() -> None:
    # The path locates a problem where a definition has no lines (an API object).
    job = JOB.replace('when: "restarts == 0"', 'when: "restarts =="')
    (problem,) = validate_text(document(job=job), "d.yaml")
    assert problem.position.path == ("spec", "job", "transitions", 0, "when")


def test_a_key_that_is_no_plain_value_is_an_error_at_the_key() -> None:
    # The keys after it are still read: `y` is an unknown field, and warned of.
    job = JOB.replace("Done: {terminal: success}", "Done: {[a, b]: 1, y: 2, terminal: success}")
    problem, *after = validate_text(document(job=job), "d.yaml")
    assert str(problem) == "d.yaml:10:14: error: a mapping key must be a plain value"
    assert [str(d)[:34] for d in after] == ["d.yaml:10:25: error: unknown field",
                                            "d.yaml:10:25: warning: unquoted ke"]
    assert problem.position.path == ("spec", "job", "states", "Done")


def test_an_index_without_the_node_or_any_above_it_points_at_the_files_start() -> None:
    empty = PositionIndex("f.yaml")
    assert empty.value(("spec", "job")) == Position("f.yaml", 1, 1)
    assert str(empty.key(("spec",))) == "f.yaml:1:1"


def test_a_key_that_reads_as_no_plain_value_is_kept_as_its_text() -> None:
    # YAML reads `2024-01-01` as a date; a key of the data is its text, a `null` key stays.
    (raw,), problems = read_text("a:\n  2024-01-01: x\n  ~: y\n", "f.yaml")
    assert problems == []
    assert raw.data == {"a": {"2024-01-01": "x", None: "y"}}
    assert [type(k) for k in raw.data["a"]] == [str, type(None)]


def test_a_key_carries_the_field_path_of_its_entry() -> None:
    (raw,), _ = read_text("a:\n  b: 1\n  c:\n    - d: 2\n", "f.yaml")
    assert raw.positions.key(("a", "c")) == Position("f.yaml", 3, 3, ("a", "c"))
    assert raw.positions.key(("a", "c", 0, "d")).path == ("a", "c", 0, "d")


def test_an_empty_block_scalar_on_the_files_last_line_maps_no_column() -> None:
    # Its one line holds the indicator (`|`, `>`), not the expression's text.
    for indicator in ("|", ">"):
        (raw,), _ = read_text(f"x: 1\na: {indicator}", "f.yaml")
        assert raw.positions.expression(("a",), 1, 1) is None
        assert raw.positions.value(("a",)) == Position("f.yaml", 2, 4, ("a",))
        assert raw.positions.key(("a",)) == Position("f.yaml", 2, 1, ("a",))
