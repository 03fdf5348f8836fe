"""Templates at their edges: a CEL error inside a `${...}` part that spans lines is placed at
its character in the whole template; text with no parts; values CEL gives as bytes, times
and durations, alone or inside a map."""

from __future__ import annotations

import datetime

import pytest

from engine.definition.cel import CelCompileError, CelProblem, Scope
from engine.definition.templates import compile_template, render_value

SCOPE = Scope("replica")


def _problem(source: str) -> tuple[int, int]:
    with pytest.raises(CelCompileError) as caught:
        compile_template(source, SCOPE)
    (problem,) = caught.value.problems
    assert "unknown variable 'nope'" in problem.message
    return problem.line, problem.column


@pytest.mark.parametrize(
    ("source", "position"),
    [
        ("ab ${nope}", (1, 6)),
        ("line one\nthen ${exitCode +\n  nope} end", (3, 3)),
        ("a\nb ${exitCode\n  + nope}", (3, 5)),
        ("x\n${\n\n exitCode + nope}", (4, 13)),
        ("first ${exitCode} then\nsecond ${\n    nope}", (3, 5)),
    ],
)
def test_an_error_in_a_part_is_placed_at_its_character_in_the_template(
    source: str, position: tuple[int, int]
) -> None:
    assert _problem(source) == position
    line, column = position
    assert source.split("\n")[line - 1][column - 1 :].startswith("nope")


def test_an_error_keeps_its_message() -> None:
    with pytest.raises(CelCompileError) as caught:
        compile_template("x ${exitCode >}", SCOPE)
    assert all(isinstance(p, CelProblem) and p.message for p in caught.value.problems)
    assert caught.value.problems[0].line == 1


def test_bytes_render_as_utf8_and_bad_bytes_as_the_replacement_character() -> None:
    assert render_value("café".encode()) == "café"
    assert render_value(b"ok \xff") == "ok \ufffd"


def test_a_template_without_parts_renders_as_written() -> None:
    assert compile_template("plain text, $${not a part}", SCOPE).render({}) == (
        "plain text, ${not a part}",
        [],
    )


def test_times_render_in_utc_with_a_z_and_durations_in_seconds_inside_maps_too() -> None:
    at = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    assert render_value(at) == "2026-01-02T03:04:05Z"
    assert render_value({"at": at, "after": datetime.timedelta(minutes=2)}) == (
        '{"after":"120s","at":"2026-01-02T03:04:05Z"}'
    )


def test_a_part_that_fails_is_left_as_written_up_to_its_brace() -> None:
    template = compile_template("name ${pod.name}! then ${exitCode}.", SCOPE)
    text, errors = template.render({"pod": {}, "exitCode": 3})
    assert text == "name ${pod.name}! then 3."
    assert len(errors) == 1


@pytest.mark.parametrize(
    ("source", "text"),
    [
        ("${'it\\'s }'} ok", "it's } ok"),
        ('${"say \\"}\\""}!', 'say "}"!'),
        ("${ {'X': '}'}.X }!", "}!"),
        ("${ {'a': {'b': 1}}.a.b }|", "1|"),
        ("${ [{'a': 1}, {'a': 2}].map(m, m.a) }", "[1,2]"),
    ],
)
def test_a_part_ends_at_its_own_brace_not_at_one_inside_a_string_or_a_map(
    source: str, text: str
) -> None:
    assert compile_template(source, SCOPE).render({}) == (text, [])


@pytest.mark.parametrize(
    ("source", "position"),
    [("ab ${exitCode", (1, 4)), ("line\nab ${exitCode", (2, 4)), ("x\ny\n  ${", (3, 3))],
)
def test_a_part_never_closed_is_an_error_at_its_dollar(
    source: str, position: tuple[int, int]
) -> None:
    with pytest.raises(CelCompileError) as caught:
        compile_template(source, SCOPE)
    assert caught.value.problems == [CelProblem(*position, "'${' is never closed by '}'")]
