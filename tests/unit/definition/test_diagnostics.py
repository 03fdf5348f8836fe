"""Diagnostics (errors.py): the message of a DefinitionError, the order and uniqueness of a
list of problems, field paths as Kubernetes writes them, and the words that list names or
suggest the nearest one."""

from __future__ import annotations

from engine.definition.errors import (
    DefinitionError,
    Position,
    error,
    format_field_path,
    name_list,
    nearest_hint,
    sorted_diagnostics,
    warning,
)

A = Position("a.yaml", 3, 5)
B = Position("a.yaml", 10, 1)
C = Position("b.yaml", 1, 1)


def test_a_definition_error_says_its_errors_one_a_line_in_order_and_not_its_warnings() -> None:
    raised = DefinitionError([error(C, "third"), warning(A, "doubt"), error(B, "second"),
                              error(A, "first")])
    assert str(raised) == ("a.yaml:3:5: error: first\na.yaml:10:1: error: second\n"
                           "b.yaml:1:1: error: third")
    assert [d.message for d in raised.diagnostics] == ["doubt", "first", "second", "third"]


def test_a_definition_error_without_an_error_says_the_definition_is_invalid() -> None:
    # A revision whose data holds no machine raises so (controller/machines/revisions.py).
    assert str(DefinitionError([])) == "invalid machine definition"
    assert str(DefinitionError([warning(A, "doubt")])) == "invalid machine definition"


def test_a_warning_is_no_error_and_says_so() -> None:
    assert not warning(A, "doubt").is_error and error(A, "wrong").is_error
    assert str(warning(A, "doubt")) == "a.yaml:3:5: warning: doubt"
    assert str(error(A, "wrong")) == "a.yaml:3:5: error: wrong"


def test_sorted_diagnostics_are_by_file_line_column_and_message_without_exact_duplicates(
) -> None:
    found = sorted_diagnostics([error(C, "z"), error(A, "b"), error(A, "a"), error(C, "z"),
                                warning(B, "w")])
    assert [(str(d.position), d.message) for d in found] == [
        ("a.yaml:3:5", "a"), ("a.yaml:3:5", "b"), ("a.yaml:10:1", "w"), ("b.yaml:1:1", "z")]


def test_a_field_path_is_written_as_kubernetes_writes_field_paths() -> None:
    assert format_field_path(("spec", "job", "transitions", 3, "when")) == (
        "spec.job.transitions[3].when")
    assert format_field_path((0, "spec", 1, 2)) == "[0].spec[1][2]"
    assert format_field_path(()) == ""
    assert Position("f", 1, 1, ("spec", "objects", 0)).field_path == "spec.objects[0]"


def test_names_are_listed_in_the_order_given_and_none_is_said() -> None:
    assert name_list(["b", "a", "c"]) == "b, a, c"
    assert name_list([]) == "(none)"


def test_the_nearest_name_is_suggested_only_when_one_is_close() -> None:
    assert nearest_hint("indx", ["replica", "index", "indexes"]) == " (did you mean 'index'?)"
    assert nearest_hint("indx", iter(["index"])) == " (did you mean 'index'?)"
    assert nearest_hint("zzz", ["index"]) == ""
