"""The engine's record in a job's status: every machine's state, as status stores it.

Status is the write-ahead log of the machines (architecture page), so this is
what survives a restart: the job state, each replica index's state (stored
compactly as index ranges per state, `0-3,7`), restart counts, a bounded
history of transitions and exact counts per transition for the pictures.
Status shows users the state, the restart count and the last few transitions
in fields of their own; the rest is one compact JSON text (`status.record`).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import orjson

from engine.controller.reconcile.children import ReplicaId


def format_ranges(indexes: Iterable[int], *, job_api: bool = False) -> str:
    """`[0, 1, 2, 3, 7]` -> `"0-3,7"`. In the Job API's form (`job_api`: completedIndexes,
    failedIndexes, as upstream's orderedIntervals.String) a run of two is `a,b`, not `a-b`."""
    ordered = sorted(set(indexes))
    parts: list[str] = []
    start = previous = None
    for index in ordered:
        if previous is not None and index == previous + 1:
            previous = index
            continue
        if start is not None:
            parts.append(_range(start, previous, job_api))
        start = previous = index
    if start is not None:
        parts.append(_range(start, previous, job_api))
    return ",".join(parts)


def _range(start: int, end: int | None, job_api: bool) -> str:
    if end is None or end == start:
        return str(start)
    return f"{start},{end}" if job_api and end == start + 1 else f"{start}-{end}"


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


POD_UID_KEPT = 8
"""Characters of a pod's uid the record keeps: enough to tell the pods of one replica apart
(a new pod of the same replica shares them with odds of one in four billion)."""


@dataclass(frozen=True)
class InPlaceEnds:
    """How many ends of a pod's main container the replica machine has seen.

    The kubelet restarts a container of an `OnFailure` or `Always` pod in place; each
    end is observed once (`podRestarting`), so the record keeps how many of this pod's
    ends were seen already. A new pod (another uid) starts from zero.
    """

    pod_uid: str
    """The first POD_UID_KEPT characters of the pod's uid (all the record keeps)."""
    seen: int

    def of(self, uid: str) -> bool:
        """Whether these are the ends of the pod with this uid."""
        return uid[:POD_UID_KEPT] == self.pod_uid[:POD_UID_KEPT]


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
    """The last few state changes (status shows them as `lastTransitions`), oldest first;
    the whole path is in `transition_counts`."""
    transition_counts: Mapping[tuple[str, str, str, str], int] = field(default_factory=dict)
    restart_attempt: int = 0
    """The job's attempt (restartJob adds one); every pod is labelled with the one it is of."""
    replica_timers: Mapping[ReplicaId, str] = field(default_factory=dict)
    """When each replica in a state with a timeout entered it (or the job last resumed)."""
    in_place_ends: Mapping[ReplicaId, InPlaceEnds] = field(default_factory=dict)
    """Per index whose pod the kubelet restarted in place: the ends seen so far."""
    last_failure: str = ""
    """The last replica failure the machines saw: `Master-0 (exit code 2, Error: ...)`."""
    last_failure_cause: str = ""
    """What failure rule that failure matched, in the Job API's words ('' for none)."""

    def with_changes(self, **changes: Any) -> MachineRecord:
        """A copy with some fields replaced: `dataclasses.replace` without running
        `__init__` again (a decision makes several per replica and round, and `replace`
        was about 3% of a model check's CPU)."""
        unknown = changes.keys() - _RECORD_FIELDS
        if unknown:
            raise TypeError(f"MachineRecord has no field {sorted(unknown)[0]!r}")
        copied = object.__new__(MachineRecord)
        copied.__dict__.update(self.__dict__)
        copied.__dict__.update(changes)
        return copied


_RECORD_FIELDS = frozenset(f.name for f in fields(MachineRecord))


RECORD_FIELD = "record"
"""The status field holding the record's bookkeeping as one compact JSON text.

One line in `kubectl describe` instead of a hundred: users read conditions,
replica statuses, the last transitions and the last failure in fields of their
own; `jobmachine graph --job` reads the transition counts from here.
"""

LAST_TRANSITIONS_FIELD = "lastTransitions"
LAST_FAILURE_FIELD = "lastFailure"

LAST_TRANSITIONS = 0
"""How many of the most recent state changes status keeps, as text (`lastTransitions`), unless
the engine is told otherwise: none, so `kubectl describe` stays short (Events tell them)."""

LEGACY_FIELDS = (
    "stateSince", "replicaStates", "replicaRestarts", "replicaBackoff", "replicaTimers",
    "history", "transitionCounts", "observedGeneration",
)
"""Status fields older engines wrote, dropped at the next status write: where status kept
the record before it became one field (read once first), and `observedGeneration`, which no
peer's job status has (Job, Kubeflow, JobSet): conditions say when a spec change took effect."""

_FORMAT = 1


class RecordError(ValueError):
    """The record in a job's status cannot be read (someone edited it by hand)."""


def read_record(status: Mapping[str, Any]) -> MachineRecord:
    """The record from a job's status; a new job's empty status gives an empty record.

    A status written before the record became one field is read from its old fields.
    """
    text = status.get(RECORD_FIELD)
    if text is None:
        return _read_legacy(status)
    try:
        stored = orjson.loads(text)
        return _from_stored(status, stored)
    except (orjson.JSONDecodeError, TypeError, KeyError, ValueError, AttributeError) as exc:
        raise RecordError(f"status.{RECORD_FIELD} cannot be read ({exc}); it is written by "
                          "the engine only") from exc


def state_of(status: Mapping[str, Any]) -> str | None:
    """The job machine's state as written: `state`, or `phase` where the state is the phase's
    own word (build_status leaves `state` out then, as a shipped machine's states are)."""
    state = status.get("state") or status.get("phase")
    return None if state is None else str(state)


def _from_stored(status: Mapping[str, Any], stored: Mapping[str, Any]) -> MachineRecord:
    if stored.get("v") != _FORMAT:
        raise ValueError(f"unknown format {stored.get('v')!r}")
    return MachineRecord(
        state=state_of(status),
        state_since=stored.get("since"),
        replica_states=_states_from(stored.get("replicas")),
        restarts=int(status.get("restarts") or 0),
        replica_restarts=_restarts_from(stored.get("restarts")),
        replica_backoff=_restarts_from(stored.get("backoff")),
        history=tuple(_parsed_transitions(status.get(LAST_TRANSITIONS_FIELD))),
        transition_counts=_counts_from(stored.get("counts")),
        restart_attempt=int(status.get("restartAttempt") or 0),
        replica_timers={
            replica: str(since) for replica, since in _per_index(stored.get("timers")).items()
        },
        in_place_ends={
            replica: InPlaceEnds(str(uid), int(seen))
            for replica, (uid, seen) in _per_index(stored.get("inPlace")).items()
        },
        last_failure=str(status.get(LAST_FAILURE_FIELD) or ""),
        last_failure_cause=str(stored.get("cause") or ""),
    )


def _read_legacy(status: Mapping[str, Any]) -> MachineRecord:
    counts = {
        (str(c["level"]), str(c.get("from") or ""), str(c["to"]), str(c["reason"])): int(
            c["count"]
        )
        for c in status.get("transitionCounts") or ()
    }
    return MachineRecord(
        state=state_of(status),
        state_since=status.get("stateSince"),
        replica_states=_states_from(status.get("replicaStates")),
        restarts=int(status.get("restarts") or 0),
        replica_restarts=_legacy_restarts(status.get("replicaRestarts")),
        replica_backoff=_legacy_restarts(status.get("replicaBackoff")),
        history=tuple(status.get("history") or ()),
        transition_counts=counts,
        restart_attempt=int(status.get("restartAttempt") or 0),
        replica_timers={r: str(s) for r, s in _per_index(status.get("replicaTimers")).items()},
    )


def _legacy_restarts(value: Any) -> dict[ReplicaId, RestartRecord]:
    return {
        replica: RestartRecord(int(entry["count"]), str(entry["last"]))
        for replica, entry in _per_index(value).items()
    }


def _states_from(value: Any) -> dict[ReplicaId, str]:
    return {
        ReplicaId(replica_type, index): state
        for replica_type, states in (value or {}).items()
        for state, ranges in (states or {}).items()
        for index in parse_ranges(str(ranges))
    }


def _restarts_from(value: Any) -> dict[ReplicaId, RestartRecord]:
    return {
        replica: RestartRecord(int(count), str(last))
        for replica, (count, last) in _per_index(value).items()
    }


def _per_index(value: Any) -> dict[ReplicaId, Any]:
    """`{type: {index: value}}` -> `{ReplicaId: value}`."""
    return {
        ReplicaId(replica_type, int(index)): entry
        for replica_type, entries in (value or {}).items()
        for index, entry in (entries or {}).items()
    }


def _by_index(values: Mapping[ReplicaId, Any]) -> dict[str, dict[str, Any]]:
    """`{ReplicaId: value}` -> `{type: {index: value}}`, sorted."""
    fields: dict[str, dict[str, Any]] = defaultdict(dict)
    for replica, value in sorted(values.items()):
        fields[replica.type][str(replica.index)] = value
    return dict(fields)


def _counts_from(stored: Any) -> dict[tuple[str, str, str, str], int]:
    """`{level: [[from, to, count] | [from, to, reason, count]]}`: a reason left out is the
    target's name (the language's default reason)."""
    counts: dict[tuple[str, str, str, str], int] = {}
    for level, entries in (stored or {}).items():
        for entry in entries:
            if len(entry) == 3:
                source, target, count = entry
                reason = target
            else:
                source, target, reason, count = entry
            counts[(str(level), str(source), str(target), str(reason))] = int(count)
    return counts


def _counts_to(counts: Mapping[tuple[str, str, str, str], int]) -> dict[str, list[list[Any]]]:
    stored: dict[str, list[list[Any]]] = defaultdict(list)
    for (level, source, target, reason), count in sorted(counts.items()):
        entry: list[Any] = [source, target] if reason == target else [source, target, reason]
        stored[level].append([*entry, count])
    return dict(stored)


_TRANSITION = re.compile(
    r"(?P<time>\S+) (?P<who>\S+): (?:(?P<source>\S+) )?-> (?P<target>\S+) \((?P<reason>\S+)\)"
)


def _parsed_transitions(lines: Any) -> list[dict[str, Any]]:
    """The history entries `lastTransitions` shows (lines not in its format are skipped)."""
    entries = []
    for line in lines or ():
        match = _TRANSITION.fullmatch(str(line))
        if match is None:
            continue
        who = match["who"]
        level = "job" if who == "job" else "replica"
        entry: dict[str, Any] = {"time": match["time"], "level": level}
        if who != "job":
            entry["replica"] = who
        entry.update({"from": match["source"], "to": match["target"], "reason": match["reason"]})
        entries.append(entry)
    return entries


def transition_text(entry: Mapping[str, Any]) -> str:
    """One history entry as a line: `2027-01-15T08:05:00Z Worker-1: Running -> Restarting
    (PodFailed)`."""
    who = entry.get("replica") or "job"
    source = entry.get("from")
    change = f"{source} -> {entry['to']}" if source else f"-> {entry['to']}"
    return f"{entry.get('time')} {who}: {change} ({entry['reason']})"


def _stored(record: MachineRecord) -> dict[str, Any]:
    """The record's bookkeeping, without what status shows in its own fields."""
    stored: dict[str, Any] = {
        "v": _FORMAT,
        "since": record.state_since,
        "replicas": _written(record.replica_states, "replicas", _states_to),
        "restarts": _written(record.replica_restarts, "restarts", _restarts_to),
        "backoff": _written(record.replica_backoff, "backoff", _restarts_to),
        "timers": _written(record.replica_timers, "timers", _timers_to),
        "inPlace": _written(record.in_place_ends, "inPlace", _ends_to),
        "counts": _written(record.transition_counts, "counts", _counts_to),
        "cause": record.last_failure_cause,
    }
    return {key: value for key, value in stored.items() if value not in (None, "", {}, [])}


def _states_to(replica_states: Mapping[ReplicaId, str]) -> dict[str, dict[str, str]]:
    states: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for replica, state in replica_states.items():
        states[replica.type][state].append(replica.index)
    return {replica_type: {state: format_ranges(indexes) for state, indexes in sorted(by.items())}
            for replica_type, by in sorted(states.items())}


def _restarts_to(restarts: Mapping[ReplicaId, RestartRecord]) -> Any:
    return _by_index({r: [e.count, e.last] for r, e in restarts.items()})


def _timers_to(timers: Mapping[ReplicaId, str]) -> Any:
    return _by_index(dict(timers))


def _ends_to(ends: Mapping[ReplicaId, InPlaceEnds]) -> Any:
    return _by_index({r: [e.pod_uid, e.seen] for r, e in ends.items()})


_WRITTEN: dict[tuple[int, str], tuple[object, Any]] = {}
_WRITTEN_KEPT = 4096


def _written(value: Mapping[Any, Any], part: str, write: Callable[[Any], Any]) -> Any:
    """`write(value)`, the stored form of one part of a record, made once per mapping:
    a record's mappings are never changed once it holds them, and the next pass's record
    holds most of the last one's (a pass writes every part of its record again, and the
    model checker makes thousands). The form handed out is shared: orjson only reads it."""
    key = (id(value), part)
    known = _WRITTEN.get(key)
    if known is None or known[0] is not value:  # an id is only unique while it lives
        if len(_WRITTEN) >= _WRITTEN_KEPT:
            _WRITTEN.clear()
        known = _WRITTEN[key] = (value, write(value))
    return known[1]


def record_fields(record: MachineRecord) -> dict[str, Any]:
    """The status fields that hold `record` (status.py merges them in and drops
    LEGACY_FIELDS). A field with nothing to say is None, so it is left out."""
    return {
        "state": record.state,
        "restarts": record.restarts or None,
        "restartAttempt": record.restart_attempt or None,
        LAST_TRANSITIONS_FIELD: [transition_text(e) for e in record.history] or None,
        LAST_FAILURE_FIELD: record.last_failure or None,
        RECORD_FIELD: orjson.dumps(_stored(record)).decode(),
    }


def shown_in_history(entry: Mapping[str, Any]) -> bool:
    """Whether a state change is kept in the last transitions: every change of the job, and a
    replica's moves (the creation of a replica's machine is not news)."""
    return entry["level"] == "job" or entry.get("from") is not None
