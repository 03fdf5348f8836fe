"""Kubernetes timestamps: RFC 3339, UTC, `Z`, whole seconds, and back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from engine.kube.timestamps import format_time, parse_time


def test_format_time_is_utc_with_z_to_the_second() -> None:
    moment = datetime(2027, 1, 15, 9, 30, 5, 999_999, tzinfo=timezone(timedelta(hours=1)))
    assert format_time(moment) == "2027-01-15T08:30:05Z"


@pytest.mark.parametrize(
    ("text", "moment"),
    [
        ("2027-01-15T08:30:05Z", datetime(2027, 1, 15, 8, 30, 5, tzinfo=UTC)),
        ("2027-01-15T08:30:05.123456Z", datetime(2027, 1, 15, 8, 30, 5, 123456, tzinfo=UTC)),
        ("2027-01-15T09:30:05+01:00", datetime(2027, 1, 15, 8, 30, 5, tzinfo=UTC)),
        ("2027-01-15T08:30:05", datetime(2027, 1, 15, 8, 30, 5, tzinfo=UTC)),
    ],
)
def test_parse_time_reads_time_and_micro_time(text: str, moment: datetime) -> None:
    parsed = parse_time(text)
    assert parsed == moment
    assert parsed.tzinfo is not None


def test_a_formatted_time_parses_back() -> None:
    moment = datetime(2027, 1, 15, 8, 30, 5, tzinfo=UTC)
    assert parse_time(format_time(moment)) == moment
