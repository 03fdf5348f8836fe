"""CronJob schedules as robfig/cron v3 reads them: the parser's words, fire times checked by
hand and against a brute-force reading of robfig's rules, and the CronJob controller's most
recent schedule time."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.api.cron_schedule import (
    CronSchedule,
    CronScheduleError,
    MissedTimes,
    most_recent_time,
    parse_schedule,
    schedule_error,
)

NEW_YORK = ZoneInfo("America/New_York")


def at(text: str) -> datetime:
    """A UTC time, `2024-01-01 10:00:30.5` or shorter."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def new_york(text: str, fold: int = 0) -> datetime:
    """A New York wall-clock time (`fold=1`: its second pass), as its UTC instant.

    In UTC, because Python never finds an instant in a repeated hour equal to one in
    another zone.
    """
    return datetime.fromisoformat(text).replace(tzinfo=NEW_YORK, fold=fold).astimezone(UTC)


# --- the parser's words ------------------------------------------------------------------

@pytest.mark.parametrize(("spec", "problem"), [
    ("61 * * * *", "end of range (61) above maximum (59): 61"),
    ("* * *", "expected exactly 5 fields, found 3: [* * *]"),
    ("0 0 * * 7", "end of range (7) above maximum (6): 7"),
    ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
    ("-1 * * * *", 'failed to parse int from : strconv.Atoi: parsing "": invalid syntax'),
    ("*/0 * * * *", "step of range should be a positive number: */0"),
    ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
    ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
    ("*/2/3 * * * *", "too many slashes: */2/3"),
    ("0 0 0 * *", "beginning of range (0) below minimum (1): 0"),
    ("0 0 * 13 *", "end of range (13) above maximum (12): 13"),
    ("0 0 * foo *", 'failed to parse int from foo: strconv.Atoi: parsing "foo": invalid syntax'),
    ("@fortnightly", "unrecognized descriptor: @fortnightly"),
    ("@every 1d", 'failed to parse duration @every 1d: time: unknown unit "d" in duration "1d"'),
    ("@every 5", 'failed to parse duration @every 5: time: missing unit in duration "5"'),
    ("@every .s", 'failed to parse duration @every .s: time: invalid duration ".s"'),
    ("TZ=Nowhere 0 3 * * *", "provided bad location Nowhere: unknown time zone Nowhere"),
    ("CRON_TZ=../x 0 3 * * *", "provided bad location ../x: time: invalid location name"),
])
def test_a_schedule_that_does_not_parse_gets_the_parsers_words(spec: str, problem: str) -> None:
    assert schedule_error(spec) == problem
    with pytest.raises(CronScheduleError) as caught:
        parse_schedule(spec)
    assert str(caught.value) == problem
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize("spec", [
    "*/5 * * * *", "0 9 * JAN-MAR mon-fri", "@weekly", "@every 90m", "0,30 8-18/2 1-15 * ?",
    "TZ=Europe/Berlin 0 3 * * *", "CRON_TZ=UTC @daily", "@every -5s", "@every 0",
])
def test_schedules_that_parse(spec: str) -> None:
    assert schedule_error(spec) == ""
    assert isinstance(parse_schedule(spec), CronSchedule)


def test_a_time_zone_that_does_not_load_is_refused_in_robfigs_words() -> None:
    with pytest.raises(CronScheduleError, match=r"^provided bad location Mars/Olympus: "
                                                r"unknown time zone Mars/Olympus$"):
        parse_schedule("0 0 * * *", "Mars/Olympus")


# --- next_after, by hand -----------------------------------------------------------------
# 2024-01-01 is a Monday; 2024-05-15 a Wednesday.

NEXT_AFTER: list[tuple[str, datetime, datetime | None]] = [
    ("* * * * *", at("2024-01-01"), at("2024-01-01 00:01")),
    ("* * * * *", at("2024-01-01 00:00:59.999999"), at("2024-01-01 00:01")),
    ("5,10 * * * *", at("2024-01-01 00:07"), at("2024-01-01 00:10")),
    ("10-12 * * * *", at("2024-01-01 00:12"), at("2024-01-01 01:10")),
    ("*/15 * * * *", at("2024-01-01 00:16"), at("2024-01-01 00:30")),
    ("5/20 * * * *", at("2024-01-01 00:30"), at("2024-01-01 00:45")),  # N/step: N-max/step
    ("10-40/15 3 * * *", at("2024-01-01 03:26"), at("2024-01-01 03:40")),
    ("10-40/15 3 * * *", at("2024-01-01 03:41"), at("2024-01-02 03:10")),
    ("0 12 * FEB *", at("2024-01-01"), at("2024-02-01 12:00")),
    ("0 0 1 jan-mar/2 *", at("2024-01-02"), at("2024-03-01")),
    ("0 8 * * MON-fri", at("2024-01-05 09:00"), at("2024-01-08 08:00")),
    ("0 0 ? * sun", at("2024-01-01"), at("2024-01-07")),
    ("0 0 * * 0", at("2024-01-01"), at("2024-01-07")),  # Sunday is 0 (7 is refused)
    ("0 0 * * 6,0", at("2024-01-06"), at("2024-01-07")),
    # Both day fields restricted: either matches (the 13th, or a Friday).
    ("0 0 13 * 5", at("2024-01-01"), at("2024-01-05")),
    ("0 0 13 * 5", at("2024-01-12"), at("2024-01-13")),
    ("0 0 13 * fri", at("2024-01-13"), at("2024-01-19")),
    # One of them a star (`*`, `?`, or a star with step 1): both must match.
    ("0 0 13 * *", at("2024-01-01"), at("2024-01-13")),
    ("0 0 13 * */1", at("2024-01-01"), at("2024-01-13")),
    ("0 0 ? * 5", at("2024-01-01"), at("2024-01-05")),
    ("0 0 */1 * 6", at("2024-01-01"), at("2024-01-06")),
    # A star with a larger step is no star: Sun, Tue, Thu, Sat or the 13th.
    ("0 0 13 * */2", at("2024-01-01"), at("2024-01-02")),
    ("@yearly", at("2024-05-15 10:20"), at("2025-01-01")),
    ("@annually", at("2024-05-15 10:20"), at("2025-01-01")),
    ("@monthly", at("2024-05-15 10:20"), at("2024-06-01")),
    ("@weekly", at("2024-05-15 10:20"), at("2024-05-19")),
    ("@daily", at("2024-05-15 10:20"), at("2024-05-16")),
    ("@midnight", at("2024-05-15 10:20"), at("2024-05-16")),
    ("@hourly", at("2024-05-15 10:20"), at("2024-05-15 11:00")),
    ("@hourly", at("2024-05-15 11:00"), at("2024-05-15 12:00")),
    # @every: the delay cut to whole seconds (at least one), from t's whole second.
    ("@every 90s", at("2024-01-01 00:00:00.750000"), at("2024-01-01 00:01:30")),
    ("@every 1m30.5s", at("2024-01-01 00:00:10.250000"), at("2024-01-01 00:01:40")),
    ("@every 500ms", at("2024-01-01 00:00:10.250000"), at("2024-01-01 00:00:11")),
    ("@every -5s", at("2024-01-01"), at("2024-01-01 00:00:01")),
    ("@every 1.5h", at("2024-01-01"), at("2024-01-01 01:30")),
    ("TZ=Asia/Tokyo 0 9 * * *", at("2023-12-31 23:00"), at("2024-01-01")),
    ("CRON_TZ=Asia/Tokyo @every 1h", at("2024-01-01"), at("2024-01-01 01:00")),
    # No February 30: robfig gives up after five years.
    ("0 0 30 2 *", at("2024-01-01"), None),
    ("0 0 31 4,6,9,11 *", at("2024-01-01"), None),
    ("0 0 29 2 *", at("2024-03-01"), at("2028-02-29")),
    ("0 0 29 2 *", at("2097-03-01"), None),  # 2100 is no leap year; 2104 is too far
    ("0 0 29 2 1", at("2097-03-01"), at("2098-02-03")),  # or a Monday in February
]


@pytest.mark.parametrize(("spec", "after", "expected"), NEXT_AFTER,
                         ids=[f"{spec}@{after:%Y-%m-%dT%H:%M:%S.%f}"
                              for spec, after, _ in NEXT_AFTER])
def test_next_after(spec: str, after: datetime, expected: datetime | None) -> None:
    assert parse_schedule(spec).next_after(after) == expected


def test_the_answer_is_in_utc_whatever_zone_the_question_was_in() -> None:
    fire = parse_schedule("0 9 * * *", "Asia/Tokyo").next_after(new_york("2024-01-01 12:00"))
    assert fire == at("2024-01-02") and fire.tzinfo is UTC


def test_time_zone_beats_the_specs_own_zone_and_local_means_utc() -> None:
    january = at("2024-01-01")
    assert parse_schedule("TZ=Asia/Tokyo 0 9 * * *", "Europe/London").next_after(january) == (
        at("2024-01-01 09:00"))
    assert parse_schedule("0 9 * * *", "Local").next_after(january) == at("2024-01-01 09:00")


def test_a_naive_time_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        parse_schedule("* * * * *").next_after(datetime(2024, 1, 1))


def fires(spec: str, zone: str, after: datetime, count: int) -> list[datetime]:
    schedule, found = parse_schedule(spec, zone), []
    for _ in range(count):
        fire = schedule.next_after(after)
        assert fire is not None
        found.append(fire)
        after = fire
    return found


def test_a_time_the_spring_forward_change_skips_does_not_fire_that_day() -> None:
    # 2024-03-10 02:00 EST became 03:00 EDT in New York.
    assert fires("30 2 * * *", "America/New_York", at("2024-03-09 12:00"), 2) == [
        new_york("2024-03-11 02:30"), new_york("2024-03-12 02:30")]
    assert fires("*/30 * * * *", "America/New_York", new_york("2024-03-10 01:00"), 3) == [
        new_york("2024-03-10 01:30"), new_york("2024-03-10 03:00"), new_york("2024-03-10 03:30")]


def test_a_time_the_fall_back_change_repeats_fires_twice() -> None:
    # 2024-11-03 02:00 EDT became 01:00 EST in New York.
    assert fires("30 1 * * *", "America/New_York", at("2024-11-02 12:00"), 3) == [
        new_york("2024-11-03 01:30"), new_york("2024-11-03 01:30", fold=1),
        new_york("2024-11-04 01:30")]
    assert fires("0 * * * *", "America/New_York", new_york("2024-11-03 00:30"), 4) == [
        new_york("2024-11-03 01:00"), new_york("2024-11-03 01:00", fold=1),
        new_york("2024-11-03 02:00"), new_york("2024-11-03 03:00")]


def test_midnights_and_first_days_survive_the_change() -> None:
    # apscheduler 3.x computing in the zone itself skips these (a day lands an hour late).
    assert fires("@monthly", "America/New_York", at("2024-03-01 05:00"), 2) == [
        new_york("2024-04-01"), new_york("2024-05-01")]
    # 2024-03-31 02:00 CET became 03:00 CEST in Berlin.
    assert fires("@daily", "Europe/Berlin", at("2024-03-30 12:00"), 3) == [
        at("2024-03-30 23:00"), at("2024-03-31 22:00"), at("2024-04-01 22:00")]


# --- next_after against a brute-force reading of robfig's rules ---------------------------

@dataclass(frozen=True)
class Expected:
    """What a generated field means, worked out while generating it."""

    text: str
    numbers: frozenset[int]
    star: bool


MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
DAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


@st.composite
def expressions(draw: st.DrawFn, low: int, high: int, names: tuple[str, ...] = ()) -> Expected:
    """One range of a field (`*`, `?`, `N`, `N-M`, `*/S`, `N/S`, `N-M/S`), and its numbers."""
    def written(number: int) -> str:
        if names and draw(st.booleans()):
            name = names[number - low]
            return draw(st.sampled_from([name, name.upper(), name.capitalize()]))
        return str(number)

    kind = draw(st.sampled_from(["*", "?", "N", "N-M", "*/S", "N/S", "N-M/S"]))
    if kind.startswith(("*", "?")):
        start, end = low, high
    else:
        start = draw(st.integers(low, high))
        end = draw(st.integers(start, high)) if "M" in kind else (high if "S" in kind else start)
    step = draw(st.integers(1, high - low + 1)) if "S" in kind else 1
    text = {"*": "*", "?": "?", "N": written(start), "N-M": f"{written(start)}-{written(end)}",
            "*/S": f"*/{step}", "N/S": f"{written(start)}/{step}",
            "N-M/S": f"{written(start)}-{written(end)}/{step}"}[kind]
    star = kind.startswith(("*", "?")) and step == 1
    return Expected(text, frozenset(range(start, end + 1, step)), star)


@st.composite
def fields(draw: st.DrawFn, low: int, high: int, names: tuple[str, ...] = ()) -> Expected:
    """A comma list of one to three ranges: the union of their numbers, a star if any is."""
    parts = draw(st.lists(expressions(low, high, names), min_size=1, max_size=3))
    return Expected(",".join(part.text for part in parts),
                    frozenset().union(*(part.numbers for part in parts)),
                    any(part.star for part in parts))


SPEC_FIELDS = st.tuples(fields(0, 59), fields(0, 23), fields(1, 31),
                        fields(1, 12, MONTH_NAMES), fields(0, 6, DAY_NAMES))
Spec = tuple[Expected, Expected, Expected, Expected, Expected]


def day_matches(spec: Spec, day: date) -> bool:
    """robfig's dayMatches: OR when both day fields are restricted, AND when one is a star."""
    _, _, of_month, month, of_week = spec
    in_month = day.day in of_month.numbers
    in_week = day.isoweekday() % 7 in of_week.numbers
    if day.month not in month.numbers:
        return False
    if of_month.star or of_week.star:
        return in_month and in_week
    return in_month or in_week


def reference_next(spec: Spec, after: datetime) -> datetime | None:
    """Minute by minute through each matching day, until robfig's five-year limit (UTC)."""
    minute, hour = spec[0].numbers, spec[1].numbers
    start = after.replace(microsecond=0) + timedelta(seconds=1)
    day = start.date()
    while day.year <= start.year + 5:
        if day_matches(spec, day):
            midnight = datetime(day.year, day.month, day.day, tzinfo=UTC)
            for offset in range(24 * 60):
                candidate = midnight + timedelta(minutes=offset)
                if (candidate >= start and candidate.hour in hour
                        and candidate.minute in minute):
                    return candidate
        day += timedelta(days=1)
    return None


@settings(max_examples=200, deadline=None)
@given(SPEC_FIELDS, st.datetimes(datetime(2000, 1, 1), datetime(2099, 12, 31)))
def test_next_after_matches_a_brute_force_reading_of_robfig(spec: Spec, after: datetime) -> None:
    text = " ".join(field.text for field in spec)
    aware = after.replace(tzinfo=UTC)
    assert parse_schedule(text).next_after(aware) == reference_next(spec, aware), text


ZONES = ("America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "America/Santiago",
         "America/Havana")


def offset_changes(zone: str) -> list[datetime]:
    """The hours of 2024 that begin just after the zone's UTC offset changed."""
    tz, hours = ZoneInfo(zone), (at("2024-01-01") + timedelta(hours=n) for n in range(366 * 24))
    return [hour for hour in hours
            if (hour - timedelta(hours=1)).astimezone(tz).utcoffset()
            != hour.astimezone(tz).utcoffset()]


CHANGES = {zone: offset_changes(zone) for zone in ZONES}


# A single minute too, often: a repeated hour shows when the next match is in the repeat.
MINUTES = st.one_of(fields(0, 59), st.integers(0, 59).map(
    lambda minute: Expected(str(minute), frozenset({minute}), star=False)))


@settings(max_examples=200, deadline=None)
@given(MINUTES, fields(0, 23), st.sampled_from(ZONES), st.data())
def test_in_a_zone_every_instant_whose_local_time_matches_fires(
    minute: Expected, hour: Expected, zone: str, data: st.DataObject
) -> None:
    # Near a change of the zone's offset (often within the hours it skips or repeats).
    tz = ZoneInfo(zone)
    minutes = st.one_of(st.integers(-70, 10), st.integers(-36 * 60, 12 * 60))
    start = data.draw(st.sampled_from(CHANGES[zone])) + timedelta(
        minutes=data.draw(minutes), microseconds=data.draw(st.integers(0, 999_999)))
    expected = start.replace(second=0, microsecond=0) + timedelta(minutes=1)
    while not (expected.astimezone(tz).hour in hour.numbers
               and expected.astimezone(tz).minute in minute.numbers):
        expected += timedelta(minutes=1)
    spec = f"{minute.text} {hour.text} * * *"
    assert parse_schedule(spec, zone).next_after(start) == expected, (spec, zone, start)


# --- most_recent_time --------------------------------------------------------------------

def latest(spec: str, earliest: datetime, now: datetime, zone: str | None = None) -> MissedTimes:
    return most_recent_time(parse_schedule(spec, zone), earliest, now)


@pytest.mark.parametrize(("spec", "earliest", "now", "due", "too_many"), [
    # None due: the next fire time is still to come.
    ("0 * * * *", "2024-01-01 10:00", "2024-01-01 10:30", None, False),
    ("0 * * * *", "2024-01-01 10:00", "2024-01-01 09:00", None, False),
    # One due, the earliest time itself excluded, now included.
    ("0 * * * *", "2024-01-01 10:00", "2024-01-01 11:05", "2024-01-01 11:00", False),
    ("0 * * * *", "2024-01-01 10:00", "2024-01-01 11:00", "2024-01-01 11:00", False),
    # Several missed: the latest.
    ("0 * * * *", "2024-01-01 10:00", "2024-01-01 15:30", "2024-01-01 15:00", False),
    # Upstream's estimate, (now - first) / (second - first) + 1, against 100: first 11:00,
    # then 99 hours and 59 minutes (100), or 100 hours (101), later.
    ("0 * * * *", "2024-01-01 10:00", "2024-01-05 14:59", "2024-01-05 14:00", False),
    ("0 * * * *", "2024-01-01 10:00", "2024-01-05 15:00", "2024-01-05 15:00", True),
    # Uneven schedules: still the exact latest time.
    ("0 0 1,15 * *", "2024-01-01", "2024-03-20", "2024-03-15", False),
    # (Upstream steps 78 one-day intervals on from January 1 and finds nothing.)
    ("0 0 1,2 * *", "2023-12-31", "2024-03-20", "2024-03-02", False),
    ("0 9 * * 1-5", "2024-01-05 09:00", "2024-01-14 12:00", "2024-01-12 09:00", False),
    ("0 9 * * 1-5", "2024-01-05 09:00", "2024-01-08 08:00", None, False),
    ("30 6-16/4 * * 1-5", "2024-01-01", "2024-03-02 12:00", "2024-03-01 14:30", True),
    # @every counts from the earliest time's whole second; under a second is a second.
    ("@every 7m", "2024-01-01 10:00:30.5", "2024-01-01 11:00", "2024-01-01 10:56:30", False),
    ("@every 500ms", "2024-01-01 00:00:00.25", "2024-01-01 00:00:10.9", "2024-01-01 00:00:10",
     False),
    ("@every 1m", "2024-01-01", "2024-01-01 01:41", "2024-01-01 01:41", True),
])
def test_most_recent_time(spec: str, earliest: str, now: str, due: str | None,
                          too_many: bool) -> None:
    assert latest(spec, at(earliest), at(now)) == MissedTimes(
        None if due is None else at(due), too_many)


def test_a_time_the_fall_back_change_repeats_is_due_again_at_its_second_pass() -> None:
    assert latest("30 1 * * *", new_york("2024-11-03 01:30"), at("2024-11-03 07:00"),
                  "America/New_York") == MissedTimes(new_york("2024-11-03 01:30", fold=1), False)


@pytest.mark.parametrize("spec", ["0 0 30 2 *", "59 23 31 2 *"])
def test_a_schedule_that_never_fires_is_refused_as_upstream_refuses_it(spec: str) -> None:
    with pytest.raises(CronScheduleError,
                       match=r"^time difference between two schedules is less than 1 second$"):
        latest(spec, at("2024-01-01"), at("2024-06-01"))


def counted(schedule: CronSchedule) -> Callable[[], int]:
    """Count the schedule's next_after calls (most_recent_time's whole cost)."""
    calls = 0
    original = schedule.next_after

    def next_after(t: datetime) -> datetime | None:
        nonlocal calls
        calls += 1
        return original(t)

    schedule.next_after = next_after  # type: ignore[method-assign]
    return lambda: calls


def test_years_of_missed_minutes_are_not_walked_one_by_one() -> None:
    schedule, now = parse_schedule("* * * * *"), at("2027-06-01 12:34:56.000789")
    calls = counted(schedule)
    started = time.process_time()
    missed = most_recent_time(schedule, now - timedelta(days=3 * 365), now)
    assert time.process_time() - started < 0.05
    assert missed == MissedTimes(at("2027-06-01 12:34"), too_many=True)
    assert calls() < 40
