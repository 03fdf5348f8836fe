"""Which values kube-apiserver's defaulters read as unset, and filling those in.

Go clients send every field without `omitempty` (`targetPort: 0`, `""`, `{}`),
and Go's decoder reads a JSON null into a plain field as its zero value. So a
defaulter of a Go *value* field (`if obj.Protocol == ""`) fills in null, `""`
and `0` alike, while one of a *pointer* field (`if obj.DefaultMode == nil`)
fills in only null or absent: there `0`, `""` and `false` are values.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

Change = Callable[[dict[str, Any]], dict[str, Any]]


def is_zero(value: Any) -> bool:
    """Null, `""` or the integer 0: what a Go value field holds when it was not set."""
    return value is None or value == "" or (type(value) is int and value == 0)


def with_values(obj: dict[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """`obj` with each Go value field that is unset (absent, null, `""`, 0) defaulted."""
    missing = {key: copy.deepcopy(value) for key, value in defaults.items()
               if is_zero(obj.get(key))}
    return {**obj, **missing} if missing else obj


def with_pointers(obj: dict[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """`obj` with each Go pointer field that is absent or null defaulted."""
    missing = {key: copy.deepcopy(value) for key, value in defaults.items()
               if obj.get(key) is None}
    return {**obj, **missing} if missing else obj


def in_field(obj: dict[str, Any], key: str, change: Change) -> dict[str, Any]:
    """`obj` with the struct at `key` changed; a missing or malformed one is left as it came
    (validation answers for it). `obj` itself when `change` changed nothing: every write
    defaults the whole object, and most of it holds its defaults already."""
    value = obj.get(key)
    if not isinstance(value, dict):
        return obj
    changed = change(value)
    return obj if changed is value else {**obj, key: changed}


def in_path(obj: dict[str, Any], path: tuple[str, ...], change: Change) -> dict[str, Any]:
    """`obj` with the struct at the end of `path` changed, when every step is a struct."""
    if not path:
        return change(obj)
    return in_field(obj, path[0], lambda inner: in_path(inner, path[1:], change))


def in_items(obj: dict[str, Any], key: str, change: Change) -> dict[str, Any]:
    """`obj` with every struct of the list at `key` changed (`obj` itself when none did)."""
    value = obj.get(key)
    if not isinstance(value, list):
        return obj
    items = [change(item) if isinstance(item, dict) else item for item in value]
    if all(new is given for new, given in zip(items, value, strict=True)):
        return obj
    return {**obj, key: items}
