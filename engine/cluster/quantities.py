"""Kubernetes resource quantities ("500m", "16Gi", "1e3") as exact decimals.

Shared by the API server (a pod's QoS class) and the local node (what fits). The official
client has a parser, but the embedded cluster may not import that client, and the grammar is
small: a signed decimal number, then a binary suffix (Ki...Ei), a decimal
suffix (n, u, m, k, M, G, T, P, E) or an exponent (e3, E-2).
"""

from __future__ import annotations

import re
from decimal import Decimal

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
            "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
            "P": Decimal("1e15"), "E": Decimal("1e18")}
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
