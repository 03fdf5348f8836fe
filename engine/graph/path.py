"""The path one job took through its machines, as counts a picture can highlight.

A job's recorded status history lists every state change (level, from, to,
reason); counting them gives which states were visited and which edges fired
how often, which is all a picture needs to draw that job's path.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, cast

from engine.definition.vocabulary import Level

StateKey = tuple[Level, str]
# (level, source, target, reason); source None is the creation of an instance
EdgeKey = tuple[Level, str | None, str, str]

_LEVELS: tuple[Level, ...] = ("job", "replica")


@dataclass(frozen=True)
class Highlight:
    """How often each state was entered and each edge was taken."""

    visited: Mapping[StateKey, int] = field(default_factory=dict)
    fired: Mapping[EdgeKey, int] = field(default_factory=dict)


def highlight_from_history(entries: Iterable[Mapping[str, Any]]) -> Highlight:
    """Count a status history: entries with keys `level`, `from`, `to` and `reason`.

    `from` is None (or missing, or empty) for the entry that created an
    instance; a missing `reason` means the target state's name, as in the
    language. Malformed entries raise ValueError naming the entry.
    """
    visited: Counter[StateKey] = Counter()
    fired: Counter[EdgeKey] = Counter()
    for number, entry in enumerate(entries):
        level, source, target, reason = _entry(number, entry)
        visited[(level, target)] += 1
        fired[(level, source, target, reason)] += 1
    return Highlight(MappingProxyType(dict(visited)), MappingProxyType(dict(fired)))


def _entry(number: int, entry: Mapping[str, Any]) -> EdgeKey:
    level = entry.get("level")
    if level not in _LEVELS:
        raise ValueError(f"history entry {number}: level must be job or replica, not {level!r}")
    target = entry.get("to")
    if not isinstance(target, str) or not target:
        raise ValueError(f"history entry {number}: `to` must name a state, not {target!r}")
    source = entry.get("from") or None
    if source is not None and not isinstance(source, str):
        raise ValueError(f"history entry {number}: `from` must name a state, not {source!r}")
    reason = entry.get("reason") or target
    return cast(Level, level), source, target, str(reason)


def highlight_from_counts(counts: Iterable[Mapping[str, Any]]) -> Highlight:
    """Count a status's `transitionCounts`: entries with level, from, to, reason and count.

    Exact even when the bounded history has dropped old entries.
    """
    visited: Counter[StateKey] = Counter()
    fired: Counter[EdgeKey] = Counter()
    for number, entry in enumerate(counts):
        level, source, target, reason = _entry(number, entry)
        count = entry.get("count", 1)
        if not isinstance(count, int) or count < 1:
            raise ValueError(f"transition count {number}: count must be a positive integer")
        visited[(level, target)] += count
        fired[(level, source, target, reason)] += count
    return Highlight(MappingProxyType(dict(visited)), MappingProxyType(dict(fired)))
