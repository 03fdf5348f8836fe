"""Kubernetes resource quantities ("500m", "16Gi", "1e3") as exact decimals.

Shared by the API server (a pod's QoS class, rounding to milli units) and the local node
(what fits). The official
client has a parser, but the embedded cluster may not import that client, and the grammar is
small: a signed decimal number, then a binary suffix (Ki...Ei), a decimal
suffix (n, u, m, k, M, G, T, P, E) or an exponent (e3, E-2).
"""

from __future__ import annotations

import re
from decimal import ROUND_UP, Decimal

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
            "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
            "P": Decimal("1e15"), "E": Decimal("1e18")}
_SI_SUFFIXES = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P",
                18: "E"}
_MILLI = Decimal("0.001")
_QUANTITY = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?$"
)


def parse_quantity(value: object) -> Decimal:
    """The quantity's value in base units (cores for cpu, bytes for memory); ValueError with
    the reason for anything that is not a quantity."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a quantity")
    if isinstance(value, int | float):
        amount = Decimal(str(value))
        if not amount.is_finite():
            raise ValueError(f"{value!r} is not a quantity")
        return amount
    text = str(value).strip()
    match = _QUANTITY.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a quantity (e.g. 2, 500m, 16Gi)")
    number, suffix = match.group(1), match.group(2) or ""
    base = Decimal(number)
    if suffix in _BINARY:
        return base * _BINARY[suffix]
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        return base.scaleb(int(suffix[1:]))
    return base * _DECIMAL[suffix]


def milli_rounded(value: object) -> str | None:
    """Quantity.RoundUp(-3) as SetDefaults_ResourceList applies it: a quantity finer than a
    milli unit rounded away from zero to one ("0.0001" is "1m"), written in Go's canonical
    form; None when the value needs no rounding or is not a quantity (validation answers)."""
    try:
        amount = parse_quantity(value)
    except ValueError:
        return None
    rounded = amount.quantize(_MILLI, rounding=ROUND_UP)
    if rounded == amount:
        return None
    mantissa, exponent = int(rounded.scaleb(3)), -3
    while mantissa % 1000 == 0 and exponent < 18:
        mantissa, exponent = mantissa // 1000, exponent + 3
    # A binary quantity that needs rounding is not a whole number of bytes: Go writes it
    # as a decimal one. An exponent stays an exponent.
    match = _QUANTITY.match(str(value).strip())
    suffix = match.group(2) if match is not None else None
    if suffix is not None and suffix[:1] in ("e", "E") and len(suffix) > 1:
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    return f"{mantissa}{_SI_SUFFIXES[exponent]}"
