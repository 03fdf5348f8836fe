"""The engine's record in a job's status: every machine's state, as status stores it.

Status is the write-ahead log of the machines (architecture page), so this is
what survives a restart: the job state, each replica index's state (stored
compactly as index ranges per state, `0-3,7`), restart counts, a bounded
history of transitions and exact counts per transition for the pictures.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from engine.controller.children import ReplicaId


def format_ranges(indexes: Iterable[int]) -> str:
    """`[0, 1, 2, 3, 7]` -> `"0-3,7"`."""
    ordered = sorted(set(indexes))
    parts: list[str] = []
    start = previous = None
    for index in ordered:
        if previous is not None and index == previous + 1:
            previous = index
            continue
        if start is not None:
            parts.append(_range(start, previous))
        start = previous = index
    if start is not None:
        parts.append(_range(start, previous))
    return ",".join(parts)


def _range(start: int, end: int | None) -> str:
    return str(start) if end in (None, start) else f"{start}-{end}"


_RANGE = re.compile(r"(?P<first>[0-9]+)(?:-(?P<last>[0-9]+))?", re.ASCII)


def parse_ranges(text: str) -> list[int]:
    """`"0-3,7"` -> `[0, 1, 2, 3, 7]`; raises ValueError on anything else."""
    found: list[int] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        match = _RANGE.fullmatch(part)
        if match is None:
            raise ValueError(f"{part!r} is not an index or a range like 0-3")
        first = int(match["first"])
        last = int(match["last"] or first)
        if last < first:
            raise ValueError(f"range {part!r} runs backwards")
        found.extend(range(first, last + 1))
    return found


@dataclass(frozen=True)
class RestartRecord:
    """Restarts counted for one replica index, and when the last one was."""

    count: int
    last: str


@dataclass(frozen=True)
class MachineRecord:
    """The engine's part of a job's status, as plain values."""

    state: str | None = None
    state_since: str | None = None
    replica_states: Mapping[ReplicaId, str] = field(default_factory=dict)
    restarts: int = 0
    replica_restarts: Mapping[ReplicaId, RestartRecord] = field(default_factory=dict)
    replica_backoff: Mapping[ReplicaId, RestartRecord] = field(default_factory=dict)
    """Failed attempts in a row per index, counted or not: the re-creation back-off."""
    history: tuple[Mapping[str, Any], ...] = ()
    transition_counts: Mapping[tuple[str, str, str, str], int] = field(default_factory=dict)
    restart_attempt: int = 0
    """The job's attempt (restartJob adds one); every pod is labelled with the one it is of."""
    replica_timers: Mapping[ReplicaId, str] = field(default_factory=dict)
    """When each replica in a state with a timeout entered it (or the job last resumed)."""

    def with_changes(self, **changes: Any) -> MachineRecord:
        """A copy with some fields replaced."""
        return replace(self, **changes)


def read_record(status: Mapping[str, Any]) -> MachineRecord:
    """The record from a job's status; a new job's empty status gives an empty record."""
    replica_states = {
        ReplicaId(replica_type, index): state
        for replica_type, states in (status.get("replicaStates") or {}).items()
        for state, ranges in (states or {}).items()
        for index in parse_ranges(str(ranges))
    }
    replica_restarts = _per_index(status.get("replicaRestarts"))
    replica_backoff = _per_index(status.get("replicaBackoff"))
    counts = {
        (str(c["level"]), str(c.get("from") or ""), str(c["to"]), str(c["reason"])): int(
            c["count"]
        )
        for c in status.get("transitionCounts") or ()
    }
    return MachineRecord(
        state=status.get("state"),
        state_since=status.get("stateSince"),
        replica_states=replica_states,
        restarts=int(status.get("restarts") or 0),
        replica_restarts=replica_restarts,
        replica_backoff=replica_backoff,
        history=tuple(status.get("history") or ()),
        transition_counts=counts,
        restart_attempt=int(status.get("restartAttempt") or 0),
        replica_timers={
            ReplicaId(replica_type, int(index)): str(since)
            for replica_type, entries in (status.get("replicaTimers") or {}).items()
            for index, since in (entries or {}).items()
        },
    )


def _per_index(value: Any) -> dict[ReplicaId, RestartRecord]:
    return {
        ReplicaId(replica_type, int(index)): RestartRecord(int(entry["count"]), str(entry["last"]))
        for replica_type, entries in (value or {}).items()
        for index, entry in (entries or {}).items()
    }


def _per_index_fields(records: Mapping[ReplicaId, RestartRecord]) -> dict[str, Any]:
    fields: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for replica, entry in sorted(records.items()):
        fields[replica.type][str(replica.index)] = {"count": entry.count, "last": entry.last}
    return dict(fields)


def _timer_fields(timers: Mapping[ReplicaId, str]) -> dict[str, Any]:
    fields: dict[str, dict[str, str]] = defaultdict(dict)
    for replica, since in sorted(timers.items()):
        fields[replica.type][str(replica.index)] = since
    return dict(fields)


def record_fields(record: MachineRecord) -> dict[str, Any]:
    """The status fields that hold `record` (merged into the status by status.py)."""
    states: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for replica, state in record.replica_states.items():
        states[replica.type][state].append(replica.index)
    return {
        "state": record.state,
        "stateSince": record.state_since,
        "restarts": record.restarts,
        "replicaStates": {
            replica_type: {state: format_ranges(indexes) for state, indexes in sorted(by.items())}
            for replica_type, by in sorted(states.items())
        },
        "replicaRestarts": _per_index_fields(record.replica_restarts),
        "replicaBackoff": _per_index_fields(record.replica_backoff),
        "restartAttempt": record.restart_attempt,
        "replicaTimers": _timer_fields(record.replica_timers),
        "history": list(record.history),
        "transitionCounts": [
            {"level": level, "from": source or None, "to": target, "reason": reason,
             "count": count}
            for (level, source, target, reason), count in sorted(record.transition_counts.items())
        ],
    }
