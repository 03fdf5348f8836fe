"""Decimal integers in request text (query parameters, index lists, percents), read as Go's
`strconv` reads them, without Python's limit on long digit strings.

Python refuses to convert a string of more than 4,300 digits to an int (a ValueError that
would become a 500), and converting long ones costs time quadratic in their length. Go
reads any number of leading zeros and refuses any longer number as out of its 64-bit range.
So the digits are counted before anything is converted: a number beyond every 64-bit
integer is given as one that is just as far out of range, for the caller's range check.
"""

from __future__ import annotations

import re

_DECIMAL = re.compile(r"([+-]?)0*([0-9]+)", re.ASCII)
_DIGITS_BEYOND_64_BITS = 21
"""More significant digits than any int64 or uint64 has (uint64's maximum has 20)."""
BEYOND_64_BITS = 10**_DIGITS_BEYOND_64_BITS
"""What a longer number is read as (with its sign): out of every 64-bit range."""
INT64 = range(-(2**63), 2**63)
"""The values of Go's int64 (and of its int, 64 bits on every platform kube-apiserver runs)."""


def decimal(text: str) -> int | None:
    """The integer `text` writes (an optional sign, then ASCII digits, nothing else), or None
    when it writes none; a number of more significant digits than any 64-bit integer is
    read as ±BEYOND_64_BITS."""
    match = _DECIMAL.fullmatch(text)
    if match is None:
        return None
    sign, digits = match.groups()
    value = int(digits) if len(digits) < _DIGITS_BEYOND_64_BITS else BEYOND_64_BITS
    return -value if sign == "-" else value


def go_int64(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64) (and strconv.Atoi): the number, or None when `text`
    writes none or one out of int64's range."""
    number = decimal(text)
    return number if number is not None and number in INT64 else None
