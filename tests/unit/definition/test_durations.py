"""Durations as definitions write them: whole seconds as numbers or digits, Go-style text,
and what is not a duration (a negative number, a boolean, a typo that is not CEL)."""

from __future__ import annotations

import pytest

from engine.definition.durations import looks_like_duration, parse_duration


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (0, 0.0),
        (1, 1.0),
        (45, 45.0),
        ("0", 0.0),
        ("30", 30.0),
        (" 45 ", 45.0),
        ("500ms", 0.5),
        ("1h30m", 5400.0),
        ("1.5s", 1.5),
    ],
)
def test_a_duration_is_seconds(value: str | int, seconds: float) -> None:
    assert parse_duration(value) == seconds


@pytest.mark.parametrize("value", [-1, -30, True, False, "ten", "10x", "-5s", ""])
def test_what_is_not_a_duration_is_none(value: str | int) -> None:
    assert parse_duration(value) is None


@pytest.mark.parametrize("value", ["30s", "1H", "10 S", " 5m", "1.5Min"])
def test_text_that_starts_with_a_digit_is_meant_as_a_duration(value: str) -> None:
    assert looks_like_duration(value)


@pytest.mark.parametrize("value", ["restarts * 10", "duration('1m')", "", "s30"])
def test_text_that_does_not_is_cel(value: str) -> None:
    assert not looks_like_duration(value)
