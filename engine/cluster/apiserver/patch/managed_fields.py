"""`metadata.managedFields`: who owns which fields, read and written as kube-apiserver does.

In memory each manager is an *identifier* (the JSON of its entry without
time and fields, apiVersion dropped for appliers, exactly as upstream builds
it) mapped to its field set; on the object it is the list of entries upstream
writes: sorted by operation, time, manager, apiVersion and subresource, with
`fieldsType: FieldsV1`. Also here: the cap of ten update managers (older ones
fold into `ancient-changes`) and the 409 an apply conflict is answered with.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import orjson

from engine.cluster.apiserver.errors import ApiError, Cause
from engine.cluster.apiserver.patch.field_paths import (
    FieldSet,
    Path,
    fields_v1,
    from_fields_v1,
    path_string,
    shared_fields_v1,
)

APPLY, UPDATE = "Apply", "Update"
MAX_UPDATE_MANAGERS = 10
ANCIENT_CHANGES = "ancient-changes"
_ENTRY_KEYS = ("manager", "operation", "apiVersion", "subresource")


@dataclass
class ManagerFields:
    """One manager's fields at the apiVersion it wrote them in."""

    fields: FieldSet
    api_version: str
    applied: bool


@dataclass
class Managed:
    """Every manager of one object, by identifier, and when each last changed something.

    `sources` remembers the FieldsV1 document each decoded set came from, so a
    manager whose fields a write left alone is written back as it was read.
    """

    managers: dict[str, ManagerFields] = field(default_factory=dict)
    times: dict[str, str | None] = field(default_factory=dict)
    sources: dict[str, tuple[FieldSet, Any]] = field(default_factory=dict)

    def copy(self) -> Managed:
        """A copy whose managers can be replaced (sets are never changed in place)."""
        return Managed(
            {k: ManagerFields(v.fields, v.api_version, v.applied)
             for k, v in self.managers.items()},
            dict(self.times),
            dict(self.sources),
        )

    def owned(self) -> FieldSet:
        """Everything any manager owns."""
        result = FieldSet()
        for manager in self.managers.values():
            result = result.union(manager.fields)
        return result


def identifier(manager: str, operation: str, api_version: str, subresource: str = "") -> str:
    """The key upstream files a manager under (BuildManagerIdentifier)."""
    entry = {
        "manager": manager,
        "operation": operation,
        "apiVersion": "" if operation == APPLY else api_version,
        "subresource": subresource,
    }
    return _go_json({k: v for k, v in entry.items() if v})


def _go_json(value: Any) -> str:
    text = orjson.dumps(value).decode()
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


@lru_cache(maxsize=1024)
def describe(manager_id: str) -> dict[str, str]:
    """The entry fields an identifier stands for (kept per identifier, as every write encodes
    every manager of its object: do not change the answer)."""
    entry = orjson.loads(manager_id)
    return {k: str(entry[k]) for k in _ENTRY_KEYS if entry.get(k)}


def is_reset(entries: Any) -> bool:
    """`managedFields: []` or `[{}]` in a request clears every manager (upstream's reset)."""
    return isinstance(entries, list) and entries in ([], [{}])


def decode(entries: Any) -> Managed:
    """The managers an object's `metadata.managedFields` lists; ValueError when malformed.

    Stored objects are never mutated, so the list a stored object carries is read again on
    each of its writes: the managers it holds are kept (see `_remember`) and copied out.
    """
    known = _KNOWN.pop(id(entries), None)
    if known is not None and known[0] is entries:
        _KNOWN[id(entries)] = known  # the most recently used last, so it leaves last
        return known[1].copy()
    managed = _decoded(entries)
    _remember(entries, managed.copy())
    return managed


def _decoded(entries: Any) -> Managed:
    managed = Managed()
    if entries is None:
        return managed
    if not isinstance(entries, list):
        raise ValueError("managedFields must be a list")
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ValueError(f"managed fields entry {index} is not an object")
        operation = entry.get("operation")
        if operation not in (APPLY, UPDATE):
            raise ValueError("operation must be `Apply` or `Update`")
        api_version = entry.get("apiVersion")
        if not isinstance(api_version, str) or not api_version:
            raise ValueError("apiVersion must not be empty")
        fields_type = entry.get("fieldsType")
        if fields_type != "FieldsV1":
            raise ValueError(
                f"missing fieldsType in managed fields entry {index}"
                if not fields_type
                else f'invalid fieldsType "{fields_type}" in managed fields entry {index}'
            )
        key = identifier(
            str(entry.get("manager") or ""), operation, api_version,
            str(entry.get("subresource") or ""),
        )
        document = entry.get("fieldsV1") or {}
        fields = from_fields_v1(document)
        managed.managers[key] = ManagerFields(fields, api_version, operation == APPLY)
        managed.sources[key] = (fields, document)
        managed.times[key] = _timestamp(entry.get("time"))
    return managed


# The managers of the managedFields lists read or written last, by the list's id (the list is
# held too, so its id stays its own), least recently used first. A parsed field set costs
# far more than its JSON, hence the bound.
_KNOWN: dict[int, tuple[Any, Managed]] = {}
_KNOWN_LIMIT = 4096


def forget(entries: Any) -> None:
    """Drop what `entries` decodes to: no stored object holds that list any more (its
    object was written anew or deleted). Left in, it would only push out the lists still
    read: every update adds the list it writes, and a wide job's pods, written seconds
    apart among thousands of other writes, were parsed again at about 0.4 ms each."""
    known = _KNOWN.get(id(entries))
    if known is not None and known[0] is entries:
        del _KNOWN[id(entries)]


def _remember(entries: Any, managed: Managed) -> None:
    """Keep what `entries` decodes to (`managed` is kept as it is: give it away)."""
    if entries is None:
        return
    if len(_KNOWN) >= _KNOWN_LIMIT:
        del _KNOWN[next(iter(_KNOWN))]
    _KNOWN[id(entries)] = (entries, managed)


def share_loaded_fields(objects: Iterable[dict[str, Any]]) -> None:
    """Make the FieldsV1 documents of objects just read from disk the shared nodes that
    writes produce (`shared_fields_v1`), so a restarted server holds them once, not once
    per object. Call before anyone else sees the objects: their lists are changed in place."""
    for obj in objects:
        entries = obj.get("metadata", {}).get("managedFields")
        if not isinstance(entries, list):
            continue
        for entry in entries:
            document = entry.get("fieldsV1") if isinstance(entry, dict) else None
            if isinstance(document, dict):
                entry["fieldsV1"] = shared_fields_v1(document)


def _timestamp(value: Any) -> str | None:
    """A `time` as metav1.Time writes it back: RFC 3339 in whole seconds, UTC."""
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise ValueError(f"time must be a string, not {value!r}")
    if len(value) == 20 and value[10] == "T" and value[-1] == "Z":
        return value  # the canonical form needs no parse
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def encode(managed: Managed) -> list[dict[str, Any]] | None:
    """The `metadata.managedFields` list for these managers (None when there are none).

    What the list decodes to is kept, managers in the list's order as `decode` reads them,
    so the next write to the object does not parse it again."""
    if not managed.managers:
        return None
    keyed = []
    for key, manager in managed.managers.items():
        described = describe(key)
        entry: dict[str, Any] = {
            "manager": described.get("manager", ""),
            "operation": APPLY if manager.applied else UPDATE,
            "apiVersion": manager.api_version,
        }
        time = managed.times.get(key)
        if time:
            entry["time"] = time
        entry["fieldsType"] = "FieldsV1"
        source = managed.sources.get(key)
        unchanged = source is not None and source[0] is manager.fields
        entry["fieldsV1"] = source[1] if source and unchanged else fields_v1(manager.fields)
        if described.get("subresource"):
            entry["subresource"] = described["subresource"]
        keyed.append((_entry_order(entry), key, entry))
    keyed.sort(key=lambda item: item[0])
    entries = [entry for _, _, entry in keyed]
    written = Managed()
    for _, key, entry in keyed:
        manager = managed.managers[key]
        written.managers[key] = ManagerFields(manager.fields, manager.api_version,
                                              manager.applied)
        written.sources[key] = (manager.fields, entry["fieldsV1"])
        written.times[key] = entry.get("time")
    _remember(entries, written)
    return entries


def _entry_order(entry: dict[str, Any]) -> tuple[str, str, str, str, str]:
    # RFC 3339 UTC timestamps in whole seconds sort as their instants do.
    return (
        entry["operation"],
        entry.get("time") or "",
        entry["manager"],
        entry["apiVersion"],
        entry.get("subresource") or "",
    )


def cap_update_managers(managed: Managed, limit: int = MAX_UPDATE_MANAGERS) -> None:
    """Fold the oldest update managers into one `ancient-changes` entry per apiVersion until
    at most `limit` remain (capManagersManager)."""
    updaters = [k for k, v in managed.managers.items() if not v.applied]
    if len(updaters) <= limit:
        return
    updaters.sort(key=lambda k: managed.times.get(k) or "")
    first_of_version: dict[str, str] = {}
    remaining = len(updaters)
    for key in updaters:
        if remaining <= limit:
            break
        manager = managed.managers[key]
        bucket = identifier(ANCIENT_CHANGES, UPDATE, manager.api_version)
        first = first_of_version.get(manager.api_version)
        if first is None:
            first_of_version[manager.api_version] = key
            continue
        if bucket not in managed.managers:
            managed.managers[bucket] = managed.managers.pop(first)
            managed.times[bucket] = managed.times.pop(first, None)
        merged = manager.fields.union(managed.managers[bucket].fields)
        managed.managers[bucket] = ManagerFields(merged, manager.api_version, False)
        managed.times[bucket] = managed.times.get(key)
        del managed.managers[key]
        managed.times.pop(key, None)
        remaining -= 1


def print_manager(manager_id: str) -> str:
    """A manager as conflict messages name it: `"name"`, `"name" using v1`..."""
    entry = describe(manager_id)
    text = _go_quote(entry.get("manager", ""))
    if entry.get("subresource"):
        text += f" with subresource {_go_quote(entry['subresource'])}"
    if entry.get("operation") == UPDATE:
        text += f" using {entry.get('apiVersion', '')}"
    return text


def _go_quote(text: str) -> str:
    return orjson.dumps(text).decode()


Conflicts = list[tuple[str, Path]]


class ApplyConflictError(Exception):
    """Fields an apply would take from other managers without `force`."""

    def __init__(self, conflicts: Conflicts) -> None:
        super().__init__(conflict_message(conflicts))
        self.conflicts = conflicts


def conflicts_of(sets: dict[str, FieldSet]) -> Conflicts:
    return [(manager, path) for manager in sorted(sets) for path in sets[manager].paths()]


def conflict_message(conflicts: Conflicts) -> str:
    if len(conflicts) == 1:
        manager, path = conflicts[0]
        return (
            f"Apply failed with 1 conflict: conflict with {print_manager(manager)}: "
            f"{path_string(path)}"
        )
    by_manager: dict[str, list[Path]] = {}
    for manager, path in conflicts:
        by_manager.setdefault(manager, []).append(path)
    lines = []
    for manager in sorted(by_manager):
        lines.append(f"conflicts with {print_manager(manager)}:")
        lines.extend(f"- {path_string(path)}" for path in by_manager[manager])
    return f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)


def conflict_error(conflicts: Conflicts) -> ApiError:
    """The 409 upstream answers (NewApplyConflictError: causes only, no name or kind)."""
    causes = tuple(
        Cause(path_string(path), f"conflict with {print_manager(manager)}",
              "FieldManagerConflict")
        for manager, path in conflicts
    )
    return ApiError(409, "Conflict", conflict_message(conflicts), {}, causes)
