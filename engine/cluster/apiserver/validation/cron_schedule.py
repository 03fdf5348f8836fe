"""A CronJob schedule checked as robfig/cron v3's ParseStandard checks it, with its error words.

kube-apiserver rejects `spec.schedule` with the parser's error as the detail
(`Invalid value: "61 * * * *": end of range (61) above maximum (59): 61`), so
the check is written here rather than borrowed from a Python cron library,
whose grammar and messages differ. Only the syntax is judged: five fields
(minute, hour, day of month, month, day of week; names for months and days), or
a descriptor (`@hourly`, `@every 90s` ...), after an optional `TZ=`/`CRON_TZ=`
zone. When the jobs run is the CronJob controller's business, not the server's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo

_DESCRIPTORS = frozenset(
    ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
)
_EVERY = "@every "
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_GO_INT = re.compile(r"[+-]?[0-9]+")
_DIGITS = "0123456789"
_NUMBER_CHARACTERS = _DIGITS + "."
_MAX_GO_INT = (1 << 63) - 1
_DURATION_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000,
                   "s": 1_000_000_000, "m": 60_000_000_000, "h": 3_600_000_000_000}


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


class _ParseError(ValueError):
    """A schedule that does not parse; the message is the parser's."""


def schedule_error(spec: str) -> str:
    """Why ParseStandard refuses `spec`, or "" when it parses."""
    try:
        _parse(spec)
    except _ParseError as error:
        return str(error)
    return ""


def _parse(spec: str) -> None:
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space = spec.find(" ")
        zone = spec[spec.find("=") + 1: space if space >= 0 else len(spec)]
        problem = location_error(zone)
        if problem:
            raise _ParseError(f"provided bad location {zone}: {problem}")
        spec = spec[space:].strip() if space >= 0 else ""
    if spec.startswith("@"):
        _descriptor(spec)
        return
    fields = spec.split()
    if len(fields) != 5:
        raise _ParseError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    for text, bounds in zip(("0", *fields), _FIELDS, strict=True):
        for expression in (part for part in text.split(",") if part):
            _range(expression, bounds)


def location_error(name: str) -> str:
    """Why Go's time.LoadLocation cannot load `name` ("" when it can)."""
    if name in ("", "UTC", "Local"):
        return ""
    if ".." in name or name.startswith(("/", "\\")):
        return "time: invalid location name"
    try:
        ZoneInfo(name)
    except (ValueError, OSError, KeyError):
        return f"unknown time zone {name}"
    return ""


def _descriptor(spec: str) -> None:
    if spec in _DESCRIPTORS:
        return
    if spec.startswith(_EVERY):
        problem = _duration_error(spec[len(_EVERY):])
        if problem:
            raise _ParseError(f"failed to parse duration {spec}: {problem}")
        return
    raise _ParseError(f"unrecognized descriptor: {spec}")


def _range(expression: str, bounds: _Bounds) -> None:
    """getRange: `*`, `?`, `N`, `N-M`, each with an optional `/step`."""
    range_and_step = expression.split("/")
    low_and_high = range_and_step[0].split("-")
    if low_and_high[0] in ("*", "?"):
        start, end = bounds.low, bounds.high
    else:
        start = _int_or_name(low_and_high[0], bounds.names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _int_or_name(low_and_high[1], bounds.names)
        else:
            raise _ParseError(f"too many hyphens: {expression}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _go_uint(range_and_step[1])
        if len(low_and_high) == 1:  # "N/step" means "N-max/step"
            end = bounds.high
    else:
        raise _ParseError(f"too many slashes: {expression}")
    if start < bounds.low:
        raise _ParseError(
            f"beginning of range ({start}) below minimum ({bounds.low}): {expression}")
    if end > bounds.high:
        raise _ParseError(f"end of range ({end}) above maximum ({bounds.high}): {expression}")
    if start > end:
        raise _ParseError(
            f"beginning of range ({start}) beyond end of range ({end}): {expression}")
    if step == 0:
        raise _ParseError(f"step of range should be a positive number: {expression}")


def _int_or_name(text: str, names: dict[str, int]) -> int:
    named = names.get(text.lower())
    return named if named is not None else _go_uint(text)


def _go_uint(text: str) -> int:
    """mustParseInt: strconv.Atoi, then no negatives."""
    if not _GO_INT.fullmatch(text):
        raise _ParseError(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": '
                          "invalid syntax")
    number = int(text)
    if not -_MAX_GO_INT - 1 <= number <= _MAX_GO_INT:
        raise _ParseError(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": '
                          "value out of range")
    if number < 0:
        raise _ParseError(f"negative number ({number}) not allowed: {text}")
    return number


def _duration_error(text: str) -> str:
    """Why Go's time.ParseDuration refuses `text` ("" when it parses)."""
    invalid = f'time: invalid duration "{text}"'
    rest = text[1:] if text[:1] in ("+", "-") else text
    if rest == "0":
        return ""
    if not rest:
        return invalid
    total = 0.0
    position = 0
    while position < len(rest):
        whole_end = _digits_end(rest, position)
        whole, fraction, unit_start = rest[position:whole_end], "", whole_end
        if rest[whole_end:whole_end + 1] == ".":
            unit_start = _digits_end(rest, whole_end + 1)
            fraction = rest[whole_end + 1:unit_start]
        if not whole and not fraction:
            return invalid
        position = unit_start
        while position < len(rest) and rest[position] not in _NUMBER_CHARACTERS:
            position += 1
        unit = rest[unit_start:position]
        if not unit:
            return f'time: missing unit in duration "{text}"'
        if unit not in _DURATION_UNITS:
            return f'time: unknown unit "{unit}" in duration "{text}"'
        total += float(f"{whole or 0}.{fraction or 0}") * _DURATION_UNITS[unit]
        if total > _MAX_GO_INT:
            return invalid
    return ""


def _digits_end(text: str, start: int) -> int:
    end = start
    while end < len(text) and text[end] in _DIGITS:
        end += 1
    return end
