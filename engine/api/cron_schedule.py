"""A CronJob schedule as robfig/cron v3's ParseStandard reads it: its words, and its fire times.

kube-apiserver rejects `spec.schedule` with the parser's error as the detail
(`Invalid value: "61 * * * *": end of range (61) above maximum (59): 61`), so
the check is written here rather than borrowed from a Python cron library,
whose grammar and messages differ: five fields (minute, hour, day of month,
month, day of week; names for months and days), or a descriptor (`@hourly`,
`@every 90s` ...), after an optional `TZ=`/`CRON_TZ=` zone. `schedule_error`
judges only that syntax, for the API server.

The engine's CronJob controller also needs *when* the Jobs are due, as the
Kubernetes CronJob controller computes it (pkg/controller/cronjob/utils.go with
robfig/cron v3's spec.go and constantdelay.go): `parse_schedule` gives a
`CronSchedule` whose `next_after` is robfig's `Next`, and `most_recent_time` is
the controller's `mostRecentScheduleTime`. Both the API server and the
controller import this module, which is why it lives in `engine.api`. Pure: no
clock reads (callers pass the times), no threads.

Semantics kept from robfig/cron v3:

- fire times are on whole seconds (always second 0 of a minute for five
  fields), strictly after the time asked about;
- when both day of month and day of week are restricted, a day matches if
  either does; when either is a star (`*` or `?`, alone or with step 1, e.g.
  `*/1`; robfig's starBit), both must match. Day of week runs 0-6 from Sunday,
  so 7 is refused;
- `Next` gives up after five years (`0 0 30 2 *` never fires: None here);
- `@every d` waits d cut to whole seconds, at least 1 s, from the whole second
  of the time asked about.

Five-field specs and the descriptors are computed by apscheduler 3.x's
CronTrigger from the numbers this parser expands (so robfig's ranges, steps and
names stay exact), once with both day fields, or once per day field when
robfig ORs them. apscheduler matches the fields on the zone's wall clock: it
runs in UTC over local wall-clock times, because apscheduler 3.x's own
arithmetic in a DST zone adds a naive day across the change and lands an hour
late, which skips, e.g., `@monthly`'s April 1 in New York
(agronholm/apscheduler#529, #606). Mapping wall-clock times back to instants
here follows robfig, which walks hours and minutes in real time: a local time
that a spring-forward change skips does not fire that day, and one that a
fall-back change repeats fires at both instants.

The zone: the `time_zone` argument (a CronJob's `spec.timeZone`), else the
spec's own `TZ=` prefix, else UTC. Upstream reads a schedule without a zone in
kube-controller-manager's local zone (time.Local); the engine has no host zone
to honour, so it uses UTC (and `Local` means UTC too).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from itertools import groupby
from zoneinfo import ZoneInfo

from apscheduler.triggers.cron import CronTrigger

_EVERY = "@every "
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_GO_INT = re.compile(r"[+-]?[0-9]+")
_DIGITS = "0123456789"
_NUMBER_CHARACTERS = _DIGITS + "."
_MAX_GO_INT = (1 << 63) - 1
_SECOND_NS = 1_000_000_000
_DURATION_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000,
                   "s": _SECOND_NS, "m": 60 * _SECOND_NS, "h": 3_600 * _SECOND_NS}
_UTC_NAMES = ("", "UTC", "Local")
_ONE_SECOND = timedelta(seconds=1)
# robfig's Next gives up when the search passes the end of the year five years on.
_HORIZON_YEARS = 5
# The longest each month gets (February 29 in leap years), to see that a day never comes.
_LONGEST_MONTH = (0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_MANY_MISSED = 100
_TOO_CLOSE = "time difference between two schedules is less than 1 second"


class CronScheduleError(ValueError):
    """A schedule that does not parse, or whose fire times make no sense; upstream's words."""


@dataclass(frozen=True)
class _Bounds:
    low: int
    high: int
    names: dict[str, int] = field(default_factory=dict)


# Seconds (always "0" in a standard spec), then the five fields in their order.
_FIELDS = (
    _Bounds(0, 59),
    _Bounds(0, 59),
    _Bounds(0, 23),
    _Bounds(1, 31),
    _Bounds(1, 12, {name: number for number, name in enumerate(_MONTHS, start=1)}),
    _Bounds(0, 6, {name: number for number, name in enumerate(_DAYS)}),
)
_HOURS, _DAYS_OF_MONTH, _MONTHS_OF_YEAR, _DAYS_OF_WEEK = _FIELDS[2:]


@dataclass(frozen=True)
class _Field:
    """The numbers one field allows, and robfig's star bit (written `*` or `?`, step 1)."""

    numbers: frozenset[int]
    star: bool

    def __or__(self, other: _Field) -> _Field:
        return _Field(self.numbers | other.numbers, self.star or other.star)


@dataclass(frozen=True)
class _Fields:
    """A five-field spec or descriptor, expanded (the seconds are always 0)."""

    minute: _Field
    hour: _Field
    day: _Field
    month: _Field
    weekday: _Field


def _only(number: int) -> _Field:
    return _Field(frozenset((number,)), star=False)


def _all(bounds: _Bounds) -> _Field:
    """robfig's all(): every number, with the star bit."""
    return _Field(frozenset(range(bounds.low, bounds.high + 1)), star=True)


_DAILY = _Fields(_only(0), _only(0), _all(_DAYS_OF_MONTH),
                 _all(_MONTHS_OF_YEAR), _all(_DAYS_OF_WEEK))
# parseDescriptor's schedules: robfig's `all()` sets the star bit, `1 << min` does not.
_DESCRIPTORS = {
    "@yearly": _Fields(_only(0), _only(0), _only(1), _only(1), _all(_DAYS_OF_WEEK)),
    "@annually": _Fields(_only(0), _only(0), _only(1), _only(1), _all(_DAYS_OF_WEEK)),
    "@monthly": _Fields(_only(0), _only(0), _only(1), _all(_MONTHS_OF_YEAR),
                        _all(_DAYS_OF_WEEK)),
    "@weekly": _Fields(_only(0), _only(0), _all(_DAYS_OF_MONTH),
                       _all(_MONTHS_OF_YEAR), _only(0)),
    "@daily": _DAILY,
    "@midnight": _DAILY,
    "@hourly": _Fields(_only(0), _all(_HOURS), _all(_DAYS_OF_MONTH),
                       _all(_MONTHS_OF_YEAR), _all(_DAYS_OF_WEEK)),
}


@dataclass(frozen=True)
class MissedTimes:
    """What `most_recent_time` found: the Job to start now, if any, and whether to warn.

    `time` is the latest fire time after the earliest time and not after now (None
    when the next one is still to come); `too_many` is upstream's manyMissed (more
    than 100 fire times missed, by its estimate), which the controller reports as
    a TooManyMissedTimes warning.
    """

    time: datetime | None
    too_many: bool


class CronSchedule(ABC):
    """A parsed schedule: robfig/cron v3's Schedule."""

    @abstractmethod
    def next_after(self, t: datetime) -> datetime | None:
        """robfig's Next: the first fire time strictly after `t` (timezone-aware), in UTC.

        None when there is none within robfig's five-year search (February 30, or a
        February 29 more than five years off).
        """

    @abstractmethod
    def _latest(self, first: datetime, now: datetime) -> datetime:
        """The last fire time not after `now` of the run that fires first at `first` (<= now)."""


class _EverySchedule(CronSchedule):
    """robfig's ConstantDelaySchedule (`@every`): a fixed delay from the whole second."""

    def __init__(self, delay: timedelta) -> None:
        self._delay = delay

    def next_after(self, t: datetime) -> datetime | None:
        """Next(t) = t + delay - t's sub-second part (the zone plays no part)."""
        return _whole_second(t) + self._delay

    def _latest(self, first: datetime, now: datetime) -> datetime:
        return first + (now - first) // self._delay * self._delay


class _FieldSchedule(CronSchedule):
    """robfig's SpecSchedule, its fire times found by apscheduler on the zone's wall clock."""

    def __init__(self, fields: _Fields, zone: tzinfo) -> None:
        self._zone = zone
        self._fires = _ever_fires(fields)
        common = {"month": _numbers(fields.month), "hour": _numbers(fields.hour),
                  "minute": _numbers(fields.minute), "second": "0", "timezone": UTC}
        day, weekday = _numbers(fields.day), _weekday_names(fields.weekday)
        self._triggers: tuple[CronTrigger, ...]
        if fields.day.star or fields.weekday.star:  # robfig ANDs the two day fields
            self._triggers = (CronTrigger(day=day, day_of_week=weekday, **common),)
        else:  # and ORs them when both are restricted: the earlier of the two
            self._triggers = (CronTrigger(day=day, **common),
                              CronTrigger(day_of_week=weekday, **common))

    def next_after(self, t: datetime) -> datetime | None:
        """The first instant after `t` whose wall-clock time in the zone matches the fields."""
        start = _whole_second(t) + _ONE_SECOND
        if not self._fires:
            return None
        horizon = start.astimezone(self._zone).year + _HORIZON_YEARS
        while True:
            local = start.astimezone(self._zone)
            wall = self._next_wall(local.replace(tzinfo=None, fold=0), horizon)
            if wall is None:
                return None
            instants = [instant for instant in self._instants(wall) if instant >= start]
            repeated = local.replace(fold=1)
            if local.fold == 0 and repeated.utcoffset() != local.utcoffset():
                # `start` is in the first pass of an hour a fall-back change repeats: the
                # repeat (earlier wall times again) comes before any later wall time.
                turn = self._offset_change(start, repeated.astimezone(UTC))
                before_turn = [instant for instant in instants if instant < turn]
                if before_turn:
                    return before_turn[0]
                start = turn
            elif instants:
                return instants[0]
            else:  # a spring-forward change skips `wall`: go on from the change
                start = self._offset_change(self._instant(wall, fold=1),
                                            self._instant(wall, fold=0))

    def _latest(self, first: datetime, now: datetime) -> datetime:
        """Bisect on `s` for the last fire time: next_after(s) <= now holds until s reaches it.

        None (nothing within robfig's five years) counts as after now; only a February 29
        schedule missed for more than five years across 2100 could make that wrong.
        """
        low, latest, high = first - _ONE_SECOND, first, _whole_second(now)
        while high - low > _ONE_SECOND:
            middle = low + (high - low) // _ONE_SECOND // 2 * _ONE_SECOND
            fire = self.next_after(middle)
            if fire is not None and fire <= now:
                low, latest = middle, fire
            else:
                high = middle
        return latest

    def _next_wall(self, wall: datetime, horizon: int) -> datetime | None:
        """The first wall-clock time at or after `wall` the fields match, up to `horizon`'s end."""
        found = [trigger.get_next_fire_time(None, wall.replace(tzinfo=UTC))
                 for trigger in self._triggers]
        first: datetime | None = min((fire for fire in found if fire is not None), default=None)
        return None if first is None or first.year > horizon else first.replace(tzinfo=None)

    def _instant(self, wall: datetime, fold: int) -> datetime:
        return wall.replace(tzinfo=self._zone, fold=fold).astimezone(UTC)

    def _instants(self, wall: datetime) -> list[datetime]:
        """The instants whose local time is `wall`, ascending: none in a gap, two in a repeat."""
        instants: list[datetime] = []
        for fold in (0, 1):
            instant = self._instant(wall, fold)
            if (instant.astimezone(self._zone).replace(tzinfo=None) == wall
                    and instant not in instants):
                instants.append(instant)
        return instants

    def _offset_change(self, before: datetime, after: datetime) -> datetime:
        """The first whole second after `before`, up to `after`, with `after`'s UTC offset."""
        offset = after.astimezone(self._zone).utcoffset()
        while after - before > _ONE_SECOND:
            middle = before + (after - before) // _ONE_SECOND // 2 * _ONE_SECOND
            if middle.astimezone(self._zone).utcoffset() == offset:
                after = middle
            else:
                before = middle
        return after


def schedule_error(spec: str) -> str:
    """Why ParseStandard refuses `spec`, or "" when it parses."""
    try:
        _parse(spec)
    except CronScheduleError as error:
        return str(error)
    return ""


def parse_schedule(spec: str, time_zone: str | None = None) -> CronSchedule:
    """ParseStandard(`spec`) in `time_zone`, else the spec's `TZ=` zone, else UTC.

    Raises CronScheduleError with the parser's words (those `schedule_error`
    gives), or with robfig's "provided bad location" words for a `time_zone`
    that does not load.
    """
    spec_zone, parsed = _parse(spec)
    zone = _zone(time_zone if time_zone is not None else spec_zone)
    if isinstance(parsed, timedelta):
        return _EverySchedule(parsed)
    return _FieldSchedule(parsed, zone)


def most_recent_time(schedule: CronSchedule, earliest: datetime, now: datetime) -> MissedTimes:
    """The CronJob controller's mostRecentScheduleTime: the Job due at `now`, if any.

    `earliest` is the CronJob's last schedule time (else its creation time, or
    now - startingDeadlineSeconds when later). The time returned is exact: the
    latest fire time t with earliest < t <= now, found by bisection rather than by
    walking every missed time (upstream walks from an estimate, which can land
    past the latest time of a very uneven schedule). `too_many` keeps upstream's
    estimate: (now - first) / (second - first) + 1 > 100, from the first two fire
    times after `earliest`. Where robfig finds no fire time (Go's zero time,
    e.g. `59 23 31 2 *`), upstream fails with "time difference between two
    schedules is less than 1 second", and so does this (CronScheduleError).
    """
    first = schedule.next_after(earliest)
    if first is not None and now < first:
        return MissedTimes(None, too_many=False)
    second = None if first is None else schedule.next_after(first)
    if first is None or second is None:
        raise CronScheduleError(_TOO_CLOSE)
    if now < second:
        return MissedTimes(first, too_many=False)
    missed = (now - first) // _ONE_SECOND // ((second - first) // _ONE_SECOND) + 1
    return MissedTimes(schedule._latest(first, now), too_many=missed > _MANY_MISSED)


def location_error(name: str) -> str:
    """Why Go's time.LoadLocation cannot load `name` ("" when it can)."""
    if name in _UTC_NAMES:
        return ""
    if ".." in name or name.startswith(("/", "\\")):
        return "time: invalid location name"
    try:
        ZoneInfo(name)
    except (ValueError, OSError, KeyError):
        return f"unknown time zone {name}"
    return ""


def _zone(name: str | None) -> tzinfo:
    if name is None or name in _UTC_NAMES:
        return UTC
    problem = location_error(name)
    if problem:
        raise CronScheduleError(f"provided bad location {name}: {problem}")
    return ZoneInfo(name)


def _whole_second(t: datetime) -> datetime:
    """`t` in UTC without its sub-second part (a naive `t` would read the host's zone)."""
    if t.utcoffset() is None:
        raise ValueError(f"a schedule needs timezone-aware times, not {t}")
    return t.astimezone(UTC).replace(microsecond=0)


def _parse(spec: str) -> tuple[str | None, _Fields | timedelta]:
    """The spec's own zone (if any), and its fields or its `@every` delay."""
    zone = None
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space = spec.find(" ")
        zone = spec[spec.find("=") + 1: space if space >= 0 else len(spec)]
        problem = location_error(zone)
        if problem:
            raise CronScheduleError(f"provided bad location {zone}: {problem}")
        spec = spec[space:].strip() if space >= 0 else ""
    if spec.startswith("@"):
        return zone, _descriptor(spec)
    fields = spec.split()
    if len(fields) != 5:
        raise CronScheduleError(
            f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    _, minute, hour, day, month, weekday = (
        _field(text, bounds) for text, bounds in zip(("0", *fields), _FIELDS, strict=True))
    return zone, _Fields(minute, hour, day, month, weekday)


def _descriptor(spec: str) -> _Fields | timedelta:
    if spec in _DESCRIPTORS:
        return _DESCRIPTORS[spec]
    if spec.startswith(_EVERY):
        try:
            nanoseconds = _duration(spec[len(_EVERY):])
        except CronScheduleError as error:
            raise CronScheduleError(f"failed to parse duration {spec}: {error}") from None
        # Every(): under a second counts as one, the rest is cut to whole seconds.
        return timedelta(seconds=max(nanoseconds, _SECOND_NS) // _SECOND_NS)
    raise CronScheduleError(f"unrecognized descriptor: {spec}")


def _field(text: str, bounds: _Bounds) -> _Field:
    """getField: the union of the comma-separated ranges."""
    parsed = _Field(frozenset(), star=False)
    for expression in (part for part in text.split(",") if part):
        parsed |= _range(expression, bounds)
    return parsed


def _range(expression: str, bounds: _Bounds) -> _Field:
    """getRange: `*`, `?`, `N`, `N-M`, each with an optional `/step`."""
    range_and_step = expression.split("/")
    low_and_high = range_and_step[0].split("-")
    star = low_and_high[0] in ("*", "?")
    if star:
        start, end = bounds.low, bounds.high
    else:
        start = _int_or_name(low_and_high[0], bounds.names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _int_or_name(low_and_high[1], bounds.names)
        else:
            raise CronScheduleError(f"too many hyphens: {expression}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _go_uint(range_and_step[1])
        if len(low_and_high) == 1:  # "N/step" means "N-max/step"
            end = bounds.high
    else:
        raise CronScheduleError(f"too many slashes: {expression}")
    if start < bounds.low:
        raise CronScheduleError(
            f"beginning of range ({start}) below minimum ({bounds.low}): {expression}")
    if end > bounds.high:
        raise CronScheduleError(
            f"end of range ({end}) above maximum ({bounds.high}): {expression}")
    if start > end:
        raise CronScheduleError(
            f"beginning of range ({start}) beyond end of range ({end}): {expression}")
    if step == 0:
        raise CronScheduleError(f"step of range should be a positive number: {expression}")
    return _Field(frozenset(range(start, end + 1, step)), star=star and step == 1)


def _int_or_name(text: str, names: dict[str, int]) -> int:
    named = names.get(text.lower())
    return named if named is not None else _go_uint(text)


def _go_uint(text: str) -> int:
    """mustParseInt: strconv.Atoi, then no negatives."""
    if not _GO_INT.fullmatch(text):
        raise CronScheduleError(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": '
                                "invalid syntax")
    number = int(text)
    if not -_MAX_GO_INT - 1 <= number <= _MAX_GO_INT:
        raise CronScheduleError(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": '
                                "value out of range")
    if number < 0:
        raise CronScheduleError(f"negative number ({number}) not allowed: {text}")
    return number


def _duration(text: str) -> int:
    """Go's time.ParseDuration: `text` in nanoseconds, or its error words."""
    invalid = CronScheduleError(f'time: invalid duration "{text}"')
    sign = -1 if text[:1] == "-" else 1
    rest = text[1:] if text[:1] in ("+", "-") else text
    if rest == "0":
        return 0
    if not rest:
        raise invalid
    total = 0
    position = 0
    while position < len(rest):
        whole_end = _digits_end(rest, position)
        whole, fraction, unit_start = rest[position:whole_end], "", whole_end
        if rest[whole_end:whole_end + 1] == ".":
            unit_start = _digits_end(rest, whole_end + 1)
            fraction = rest[whole_end + 1:unit_start]
        if not whole and not fraction:
            raise invalid
        position = unit_start
        while position < len(rest) and rest[position] not in _NUMBER_CHARACTERS:
            position += 1
        unit = rest[unit_start:position]
        if not unit:
            raise CronScheduleError(f'time: missing unit in duration "{text}"')
        if unit not in _DURATION_UNITS:
            raise CronScheduleError(f'time: unknown unit "{unit}" in duration "{text}"')
        scale = _DURATION_UNITS[unit]
        # Go keeps the fraction's first digits (about 18) and adds it through a float64.
        digits = fraction[:18]
        total += int(whole or 0) * scale + int(int(digits or 0) * (scale / 10 ** len(digits)))
        if total > _MAX_GO_INT:
            raise invalid
    return sign * total


def _digits_end(text: str, start: int) -> int:
    end = start
    while end < len(text) and text[end] in _DIGITS:
        end += 1
    return end


def _ever_fires(fields: _Fields) -> bool:
    """Whether any day matches: not when only days of the month no allowed month has are.

    With robfig's OR, or a star day of the month, every week has a matching day;
    with a star day of the week, a day of the month must fit an allowed month.
    """
    return (not fields.weekday.star or fields.day.star
            or any(day <= _LONGEST_MONTH[month]
                   for month in fields.month.numbers for day in fields.day.numbers))


def _numbers(allowed: _Field) -> str:
    """The numbers as apscheduler's list; a run of consecutive numbers as one `a-b` range.

    Fewer expressions keep apscheduler quick (it tries every one on each step), and
    the set of numbers stays exactly robfig's.
    """
    runs = []
    for _, run in groupby(enumerate(sorted(allowed.numbers)), key=lambda pair: pair[1] - pair[0]):
        numbers = [number for _, number in run]
        runs.append(str(numbers[0]) if len(numbers) == 1 else f"{numbers[0]}-{numbers[-1]}")
    return ",".join(runs)


def _weekday_names(allowed: _Field) -> str:
    """The days by name: apscheduler counts 0 from Monday, robfig from Sunday."""
    return ",".join(_DAYS[day] for day in sorted(allowed.numbers))
