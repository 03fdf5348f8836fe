"""A child object's status as its parent tells situations apart: without its timestamps.

With spec.child a replica is an object of another kind (a JobSet's Jobs), whose own
machine writes its status. The model checker moves a child by giving it a status its
machine wrote (`children.py`); two children are in the same situation when their specs
and those statuses agree but for when things happened (the parent's guards read
conditions and counts, and compare times only with each other's).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

import orjson

TIME_FIELDS = frozenset({"startTime", "completionTime", "lastTransitionTime", "lastProbeTime",
                         "lastUpdateTime", "lastHeartbeatTime"})
"""Status fields that say when something happened."""


def without_times(value: Any) -> Any:
    """The value with every time field (`TIME_FIELDS`) left out, at any depth."""
    if isinstance(value, Mapping):
        return {k: without_times(v) for k, v in value.items() if k not in TIME_FIELDS}
    if isinstance(value, list):
        return [without_times(v) for v in value]
    return value


def stamped(value: Any, when: str) -> Any:
    """A copy of the value with every time field (`TIME_FIELDS`) set to `when`."""
    if isinstance(value, Mapping):
        return {k: when if k in TIME_FIELDS and isinstance(v, str) else stamped(v, when)
                for k, v in value.items()}
    if isinstance(value, list):
        return [stamped(v, when) for v in value]
    return value


def status_key(status: Mapping[str, Any] | None) -> bytes:
    """What a child's status says, but for when: equal keys, one situation."""
    return orjson.dumps(without_times(status or {}), option=orjson.OPT_SORT_KEYS)


def child_situation(child: Mapping[str, Any]) -> Hashable:
    """A child as its parent's situation counts it: its spec (the parent's forced fields
    change it), its status but for times, and whether it is being deleted."""
    return (
        orjson.dumps(child.get("spec") or {}, option=orjson.OPT_SORT_KEYS),
        status_key(child.get("status")),
        bool((child.get("metadata") or {}).get("deletionTimestamp")),
    )
