"""The arithmetic of a rollout, as upstream's deployment util computes it.

`maxSurge` and `maxUnavailable` are intstr values: an int, or a percentage of the wanted
replicas (`'25%'`), the surge rounded up and the unavailable rounded down; both 0 would
stall a rollout, so the unavailable is then 1 (ResolveFenceposts). A template is named by
a hash of it (the `pod-template-hash` label): FNV-1a over its canonical JSON and the
collision count, written in the alphabet of upstream's SafeEncodeString.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import orjson

_PERCENT = re.compile(r"^(\d+)%$")
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""Upstream's rand.SafeEncodeString alphabet: no vowels (no words), no 0, 1, 3 (no look-alikes)."""
_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193


class BoundError(ValueError):
    """A maxSurge or maxUnavailable that is neither an int nor a percentage."""


def scaled_value(value: int | str, total: int, *, round_up: bool) -> int:
    """An intstr resolved against `total` (GetScaledValueFromIntOrPercent): an int as it is,
    `N%` as N percent of total, rounded up or down."""
    if isinstance(value, int):
        return value
    found = _PERCENT.match(value)
    if found is None:
        raise BoundError(f"invalid value for IntOrString: invalid value {value!r}: "
                         "must be an int or a percentage")
    share = int(found.group(1)) * total / 100
    return math.ceil(share) if round_up else math.floor(share)


def fenceposts(max_surge: int | str, max_unavailable: int | str, replicas: int
               ) -> tuple[int, int]:
    """(surge, unavailable) for `replicas` (ResolveFenceposts): both 0 make unavailable 1,
    or no pod could ever be replaced."""
    surge = scaled_value(max_surge, replicas, round_up=True)
    unavailable = scaled_value(max_unavailable, replicas, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def max_unavailable(rolling: bool, max_surge: int | str, unavailable: int | str,
                    replicas: int) -> int:
    """Pods that may be unavailable during a rollout (MaxUnavailable): 0 unless rolling
    with replicas, and never more than the replicas."""
    if not rolling or replicas == 0:
        return 0
    return min(fenceposts(max_surge, unavailable, replicas)[1], replicas)


def max_surge(rolling: bool, surge: int | str, unavailable: int | str, replicas: int) -> int:
    """Pods that may run above the replicas during a rollout (MaxSurge): 0 unless rolling."""
    if not rolling:
        return 0
    return fenceposts(surge, unavailable, replicas)[0]


def template_hash(template: Mapping[str, Any], collision_count: int = 0) -> str:
    """The `pod-template-hash` of a template: FNV-1a (32 bits) over its canonical JSON,
    then over the collision count when there is one, its decimal digits written in the safe
    alphabet (as upstream's ComputeHash, whose input is Go's printing of the template: the
    form is upstream's, the value is not)."""
    digest = _fnv1a(_FNV_OFFSET, orjson.dumps(template, option=orjson.OPT_SORT_KEYS))
    if collision_count:
        digest = _fnv1a(digest, str(collision_count).encode())
    return "".join(_SAFE_ALPHABET[ord(c) % len(_SAFE_ALPHABET)] for c in str(digest))


def _fnv1a(digest: int, data: bytes) -> int:
    for byte in data:
        digest = ((digest ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return digest
