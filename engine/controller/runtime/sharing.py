"""One copy of the equal parts of cached views: interned strings, shared dicts and tuples.

Thousands of pods are cached and most of what they hold is the same from pod to pod (a
spec, a set of conditions, how a container ended). Views are never mutated, so equal
parts can be one object. The table is bounded and keeps short values only: what is one
pod's own (a termination message, a job's owner reference) gets a copy of its own.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Hashable, Iterable, Mapping
from typing import Any, TypeVar

_T = TypeVar("_T")

SHARED_LIMIT = 4096
"""Distinct dicts and tuples kept; later new ones are not shared (the memory stays bounded)."""
SHARED_TEXT = 64
"""Longer strings are one pod's own: the table is not kept for them."""

_dicts: dict[Hashable, dict[str, Any]] = {}
_tuples: dict[Hashable, tuple[Any, ...]] = {}
_canonical: set[int] = set()
"""Ids of the objects in the tables: kept for the life of the process, so an object holding
one may be keyed by its id."""
_lock = threading.Lock()
_UNSHAREABLE = object()


def intern_value(value: Any) -> Any:
    """A string as its one interned copy; anything else as it is."""
    return sys.intern(value) if isinstance(value, str) else value


def interned(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """The mapping with its keys and string values interned."""
    return {sys.intern(key): intern_value(value) for key, value in mapping.items()}


def shared(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """One dict for all equal mappings of short strings, numbers and shared parts."""
    view = interned(mapping)
    key = tuple((name, _key_of(value)) for name, value in view.items())
    if any(part is _UNSHAREABLE for _, part in key):
        return view
    return _canonical_copy(_dicts, key, view)


def shared_tuple(values: Iterable[Any]) -> tuple[Any, ...]:
    """One tuple for all equal sequences of short strings, numbers and shared parts."""
    items = tuple(intern_value(value) for value in values)
    key = tuple(_key_of(item) for item in items)
    if any(part is _UNSHAREABLE for part in key):
        return items
    return _canonical_copy(_tuples, key, items)


def _key_of(value: Any) -> Any:
    if isinstance(value, dict | tuple):
        return ("shared", id(value)) if id(value) in _canonical else _UNSHAREABLE
    if isinstance(value, str) and len(value) > SHARED_TEXT:
        return _UNSHAREABLE
    if isinstance(value, str | int | float | bool | None):
        return value
    return _UNSHAREABLE


def _canonical_copy(table: dict[Hashable, _T], key: Hashable, value: _T) -> _T:
    with _lock:
        found = table.get(key)
        if found is None and len(table) < SHARED_LIMIT:
            table[key] = found = value
            _canonical.add(id(value))
    return found if found is not None else value
