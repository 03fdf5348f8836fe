"""Durability: an append-only journal of every committed change, and a snapshot.

Every change is appended to `journal.jsonl`; a request is answered only after
the journal has been fsynced past its change, and the fsync is shared by every
request waiting at that moment (group commit), so concurrency raises
throughput instead of the number of fsyncs. On start the snapshot is loaded,
the journal replayed (a torn last line, never acknowledged, is ignored), and
both compacted into a fresh snapshot.

Every line read on start is checked before it is used, so that a damaged or
foreign file stops the start with one `FILE:LINE: problem` (`CorruptDataError`)
instead of a traceback or, worse, a state with records silently missing:
`journal_repair` keeps the good records and moves the rest aside.
"""

from __future__ import annotations

import asyncio
import functools
import os
import shlex
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from loguru import logger

from engine.cluster.apiserver.storage.checksums import SEALED, ChecksumMismatchError, seal, unseal
from engine.cluster.apiserver.storage.objects import Change, Obj, ObjectTable, TypeKey
from engine.cluster.apiserver.validation.names import dns1123_label_errors, dns1123_subdomain_errors

SNAPSHOT = "snapshot.jsonl"
JOURNAL = "journal.jsonl"
_FORMAT = 2
"""2: every line of the snapshot, and of the journal written after it, is sealed with a
CRC-32C (checksums.py); 1, read as well, had no checksums (upgraded by the first start)."""
_HEADER = '{"format": 2, "rv": N}'
REPAIR_COMMAND = "jobmachine repair-data --data-dir {directory}"
"""The command that makes a data directory with bad records startable again."""


class CorruptDataError(ValueError):
    """A line of the snapshot or journal that cannot be loaded as it is.

    Start-up stops rather than serve a state with the record silently missing;
    the message is one line, `FILE:LINE: problem`, and names the repair command.
    """

    def __init__(self, path: Path, line: int, problem: str, remedy: str | None = None) -> None:
        self.path = path
        self.line = line
        self.problem = problem.replace("\n", " ")
        if remedy is None:
            command = REPAIR_COMMAND.format(directory=shlex.quote(str(path.parent)))
            remedy = (f"to start with the good records only, run `{command}` (it moves the "
                      f"bad ones aside)")
        super().__init__(f"{path}:{line}: {self.problem}; {remedy}")


class ForeignFormatError(CorruptDataError):
    """A snapshot in a newer format than this version's: written by a newer jobmachine, so
    it is neither loaded nor repaired."""

    def __init__(self, path: Path, line: int, found: str) -> None:
        super().__init__(path, line, f"snapshot format {found} is newer than this jobmachine's "
                         f"({_FORMAT})", "start the jobmachine that wrote it")


JournalCorruptError = CorruptDataError
"""The former name of `CorruptDataError`."""


def snapshot_header(counter: int, count: int) -> bytes:
    """The snapshot's first line: its format, resourceVersion counter and record count."""
    return seal(orjson.dumps({"format": _FORMAT, "rv": counter, "count": count}))


def _unsealed(line: bytes) -> bytes | None:
    """The line without its checksum once it matches; None for a line without one."""
    try:
        return unseal(line.rstrip(b"\r\n"))
    except ChecksumMismatchError:
        raise _LineError("checksum mismatch: the line is not what was written") from None


def _checked(line: bytes, *, sealed: bool) -> bytes:
    """The line without its checksum, once it matches; a line without one only where
    `sealed` is False (a format 1 file)."""
    original = _unsealed(line)
    if original is None and sealed and not isinstance(_json(line), dict):
        return line  # no JSON at all, or not an object: the reader says which
    if original is None and sealed:
        raise _LineError("checksum missing: every line of this file ends with one")
    return line if original is None else original


class _LineError(Exception):
    """What is wrong with one line; the readers add the file and the line number."""


def _quoted(value: object) -> str:
    """A value from a damaged file, quoted for a one-line message and kept short."""
    text = orjson.dumps(value, default=repr).decode()
    return text if len(text) <= 60 else text[:57] + "..."


def _json(line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        try:
            line.decode()
        except UnicodeDecodeError:
            raise _LineError("binary data, not a JSON line") from None
        raise _LineError(f"not JSON ({exc.msg} at column {exc.colno})") from None


def is_json(line: bytes) -> bool:
    """Whether `line` parses as JSON at all (a torn write does not)."""
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return True


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _optional_str(value: object) -> bool:
    return value is None or isinstance(value, str)


@functools.lru_cache(maxsize=1024)
def _valid_type(group: str, plural: str) -> bool:
    """Whether a resource type can have this name (cached: a snapshot has few types)."""
    return not ((group and dns1123_subdomain_errors(group)) or dns1123_label_errors(plural))


def _type_key(record: dict[str, Any]) -> TypeKey:
    """The record's (group, plural): a DNS subdomain (or "" for the core group) and a label."""
    group, plural = record.get("g"), record.get("r")
    if not isinstance(group, str) or not isinstance(plural, str):
        raise _LineError("g and r, the resource type, are not strings")
    if not _valid_type(group, plural):
        raise _LineError(
            f"no resource type can be called {_quoted(plural)} in group {_quoted(group)}"
        )
    return group, plural


def _check_object(key: TypeKey, obj: object) -> tuple[Obj, int]:
    """The object and its resourceVersion, if it has what the object table's indexes and the
    server's readers take for granted of every stored object."""
    if not isinstance(obj, dict):
        raise _LineError("the stored object is not a JSON object")
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        raise _LineError("the stored object has no metadata")
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise _LineError("the stored object has no metadata.name")
    for field in ("namespace", "uid"):
        if not _optional_str(metadata.get(field)):
            raise _LineError(f"metadata.{field} of {_quoted(name)} is not a string")
    owners = metadata.get("ownerReferences")
    if owners is not None and not (
        isinstance(owners, list)
        and all(not isinstance(ref, dict) or _optional_str(ref.get("uid")) for ref in owners)
    ):
        raise _LineError(f"metadata.ownerReferences of {_quoted(name)} are not references")
    rv = metadata.get("resourceVersion")
    if not isinstance(rv, str) or not (rv.isascii() and rv.isdigit()):
        raise _LineError(f"metadata.resourceVersion of {_quoted(name)} is not a number")
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str) or not kind:
        raise _LineError(f"apiVersion or kind of {_quoted(name)} is missing")
    if api_version.rpartition("/")[0] != key[0]:
        raise _LineError(
            f"{_quoted(name)} of apiVersion {_quoted(api_version)} is stored under the group "
            f"{_quoted(key[0])}"
        )
    return obj, int(rv)


class SnapshotReader:
    """Checks the snapshot's lines in order: the header, then one stored object per line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.counter: int | None = None
        self.announced: int | None = None
        self.records = 0
        self.highest = 0
        self.sealed = False
        self._header_line = 0
        self._seen: dict[tuple[TypeKey, str, str], int] = {}

    def header(self, number: int, line: bytes) -> None:
        """Read the header line `{"format": 1, "rv": COUNTER, "count": RECORDS}`."""
        self._header_line = number
        try:
            unsealed = _unsealed(line)
            value = _json(unsealed if unsealed is not None else line)
            if isinstance(value, dict) and "o" in value and "format" not in value:
                raise _LineError(f"the header {_HEADER} is missing: this line is a stored object")
            if not isinstance(value, dict) or "format" not in value:
                raise _LineError(f"not a jobmachine snapshot: the first line is no {_HEADER}")
            found = value["format"]
            if _is_count(found) and found > _FORMAT:
                raise ForeignFormatError(self.path, number, _quoted(found))
            if found not in (1, _FORMAT):
                raise _LineError(f"unknown snapshot format {_quoted(found)}")
            if found == _FORMAT and unsealed is None:
                raise _LineError("checksum missing: every line of this file ends with one")
            counter, announced = value.get("rv"), value.get("count")
            if not _is_count(counter):
                raise _LineError("rv, the resourceVersion counter, is not a number")
            if announced is not None and not _is_count(announced):
                raise _LineError("count, the number of records, is not a number")
        except _LineError as bad:
            raise CorruptDataError(self.path, number, str(bad)) from None
        self.counter, self.announced = counter, announced
        self.sealed = found == _FORMAT

    def record(self, number: int, line: bytes) -> tuple[TypeKey, Obj]:
        """Read one stored object: `{"g": GROUP, "r": PLURAL, "o": OBJECT}`."""
        try:
            value = _json(_checked(line, sealed=self.sealed))
            if not isinstance(value, dict) or "o" not in value:
                raise _LineError("not a snapshot record (an object with g, r and o)")
            key = _type_key(value)
            obj, rv = _check_object(key, value["o"])
            if self.counter is not None and rv > self.counter:
                raise _LineError(f"resourceVersion {rv} is above the snapshot's counter "
                                 f"{self.counter} (line {self._header_line})")
            metadata = obj["metadata"]
            identity = (key, metadata.get("namespace") or "", metadata["name"])
            first = self._seen.get(identity)
            if first is not None:
                raise _LineError(f"a second copy of the object at line {first}")
        except _LineError as bad:
            raise CorruptDataError(self.path, number, str(bad)) from None
        self._seen[identity] = number
        self.records += 1
        self.highest = max(self.highest, rv)
        return key, obj

    def end(self, number: int) -> None:
        """Check the whole file once its last line (`number - 1`) is read."""
        if not self._header_line:
            raise CorruptDataError(self.path, 1, f"the file is empty, but a snapshot starts "
                                   f"with the header {_HEADER}")
        if self.announced is not None and self.records != self.announced:
            problem = (f"the file holds {self.records} records where its header "
                       f"(line {self._header_line}) announces {self.announced}")
            cut = ": it was cut short" if self.records < self.announced else ""
            raise CorruptDataError(self.path, number, problem + cut)


@dataclass(frozen=True, slots=True)
class JournalRecord:
    """One committed change: a put carries the stored object, a delete only its name."""

    rv: int
    key: TypeKey
    obj: Obj | None
    namespace: str
    name: str


class JournalReader:
    """Checks the journal's lines in order: each a change with a higher resourceVersion.

    `sealed`: whether every line must carry a checksum (after a format 2 snapshot); None
    (no snapshot) decides by the first line.
    """

    def __init__(self, path: Path, sealed: bool | None = None) -> None:
        self.path = path
        self.last = 0
        self.records = 0
        self.sealed = sealed

    def record(self, number: int, line: bytes) -> JournalRecord:
        """Read a put `{"rv", "op": "put", "g", "r", "o"}` or a deletion
        `{"rv", "op": "del", "g", "r", "ns", "n"}`."""
        try:
            if self.sealed is None:
                self.sealed = SEALED.search(line) is not None
            record = self._parse(_checked(line, sealed=self.sealed))
            if record.rv <= self.last:
                raise _LineError(f"resourceVersion {record.rv} after {self.last}: the journal "
                                 f"is in increasing order")
        except _LineError as bad:
            raise CorruptDataError(self.path, number, str(bad)) from None
        self.last = record.rv
        self.records += 1
        return record

    @staticmethod
    def _parse(line: bytes) -> JournalRecord:
        value = _json(line)
        if not isinstance(value, dict) or "op" not in value:
            raise _LineError("not a journal record (an object with rv, op, g and r)")
        op, rv = value["op"], value.get("rv")
        if op not in ("put", "del"):
            raise _LineError(f"unknown record type (op {_quoted(op)})")
        if not _is_count(rv) or not rv:
            raise _LineError("rv, the resourceVersion, is not a positive integer")
        key = _type_key(value)
        if op == "put":
            obj, stored = _check_object(key, value.get("o"))
            if stored != rv:
                raise _LineError(f"the object's resourceVersion {stored} is not the record's {rv}")
            metadata = obj["metadata"]
            return JournalRecord(rv, key, obj, metadata.get("namespace") or "", metadata["name"])
        namespace, name = value.get("ns"), value.get("n")
        if not isinstance(namespace, str) or not isinstance(name, str) or not name:
            raise _LineError("ns and n, the deleted object, are not strings")
        return JournalRecord(rv, key, None, namespace, name)


def load_files(table: ObjectTable, snapshot: Path, journal: Path) -> None:
    """Fill `table` from a snapshot and the journal written after it (either may be missing);
    `CorruptDataError` names the first line that cannot be loaded."""
    reader = _load_snapshot(table, snapshot)
    snapshot_rv = reader.counter if reader is not None else None
    table.rv = max(table.rv, snapshot_rv or 0)
    _replay(table, JournalReader(journal, reader.sealed if reader is not None else None),
            snapshot_rv)


def _load_snapshot(table: ObjectTable, path: Path) -> SnapshotReader | None:
    """Load the snapshot's objects; its reader (counter, format), None without a snapshot."""
    if not path.exists():
        return None
    reader = SnapshotReader(path)
    number = 0
    with open(path, "rb") as stream:
        for number, line in enumerate(stream, 1):
            if not line.strip():
                continue
            if reader.counter is None:
                reader.header(number, line)
            else:
                table.load(*reader.record(number, line))
    reader.end(number + 1)
    return reader


def _replay(table: ObjectTable, reader: JournalReader, snapshot_rv: int | None) -> None:
    """Apply the journal's changes above the snapshot's counter, in order. A last line that
    is not JSON is a torn write, never acknowledged: skipped with a warning."""
    path = reader.path
    if not path.exists():
        return
    lines = path.read_bytes().split(b"\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if number == len(lines) and not is_json(line):
            logger.bind(component="apiserver.journal", directory=str(path.parent)).warning(
                "{}:{}: ignoring a torn last record ({} bytes), a write that was never "
                "acknowledged", path, number, len(line))
            return
        record = reader.record(number, line)
        if snapshot_rv is None and reader.records == 1 and record.rv != 1:
            raise CorruptDataError(path, number, f"the journal starts at resourceVersion "
                                   f"{record.rv}, but {SNAPSHOT}, which holds what came "
                                   f"before, is missing")
        if record.rv <= (snapshot_rv or 0):
            continue
        if record.obj is None:
            table.unload(record.key, record.namespace, record.name)
        else:
            table.load(record.key, record.obj)
        table.rv = max(table.rv, record.rv)


class _Swap:
    """A compaction queued behind the journal lines before it: the objects as of `counter`,
    and the loop's future for the journal's size before."""

    def __init__(self, counter: int, objects: list[tuple[TypeKey, bytes]],
                 done: asyncio.Future[None]) -> None:
        self.counter = counter
        self.objects = objects
        self.done = done


class Journal:
    """The durable log of one data directory.

    Its writer is one thread of its own, started by `attach`: the loop queues each change's
    line (and each compaction) under a lock and wakes the thread only when it sleeps; the
    thread takes every line queued so far, writes and fdatasyncs them at once (group commit),
    and tells the loop how many lines are durable. A thread pool's hand-off per commit (a
    future and a work item each way) was 6% of `up`'s CPU under wide jobs.
    """

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._journal_path = directory / JOURNAL
        self._snapshot_path = directory / SNAPSHOT
        self._fd: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: list[bytes | _Swap] = []
        self._ready = threading.Condition()
        self._writer: threading.Thread | None = None
        self._writer_waits = False
        self._closing = False
        self._appended = 0
        self._durable = 0
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._failure: BaseException | None = None
        self._log = logger.bind(component="apiserver.journal", directory=str(directory))

    def load(self, table: ObjectTable) -> None:
        """Fill `table` from the snapshot and the journal; `CorruptDataError` names the first
        line that cannot be loaded (a torn last journal line is skipped with a warning)."""
        self._directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        load_files(table, self._snapshot_path, self._journal_path)

    def compact(self, table: ObjectTable) -> None:
        """Write every object into a new snapshot, then empty the journal (before attach)."""
        self._write_snapshot(table.rv, _stored_objects(table))
        with open(self._journal_path, "wb", opener=private_opener) as stream:
            os.fsync(stream.fileno())

    async def compact_while_serving(self, table: ObjectTable) -> int:
        """Compact while changes keep coming (call on the loop that owns the table); the
        journal's size before, in bytes (nothing is done when it was empty).

        The objects are taken as of now, on the loop, with the table's counter R. Writing
        them and emptying the journal is queued on the journal's writer thread behind the
        lines already queued (all at or below R): it writes those first, and the lines
        queued after land in the emptied journal. A crash between the snapshot's rename and
        the emptying leaves a journal whose records the snapshot already holds: loading
        skips them.
        """
        if self._fd is None or self._failure is not None:
            return 0
        size = os.fstat(self._fd).st_size
        if size == 0:
            return 0
        assert self._loop is not None
        done: asyncio.Future[None] = self._loop.create_future()
        self._enqueue(_Swap(table.rv, _stored_objects(table), done))
        await done
        return size

    def _swap(self, counter: int, objects: list[tuple[TypeKey, bytes]]) -> None:
        assert self._fd is not None
        self._write_snapshot(counter, objects)
        os.ftruncate(self._fd, 0)
        os.fsync(self._fd)

    def _write_snapshot(self, counter: int, objects: list[tuple[TypeKey, bytes]]) -> None:
        temporary = self._snapshot_path.with_name(SNAPSHOT + ".tmp")
        with open(temporary, "wb", opener=private_opener) as stream:
            stream.write(snapshot_header(counter, len(objects)) + b"\n")
            for key, raw in objects:
                head = orjson.dumps({"g": key[0], "r": key[1]})[:-1]
                stream.write(seal(head + b',"o":' + raw + b"}") + b"\n")
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, self._snapshot_path)
        self._sync_directory()

    def attach(self, table: ObjectTable) -> None:
        """Start journaling the table's changes (call on the loop that owns the table)."""
        self._loop = asyncio.get_running_loop()
        self._fd = os.open(self._journal_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._writer = threading.Thread(target=self._write_queued, name="journal", daemon=True)
        self._writer.start()
        table.listen(self._record)

    async def flushed(self) -> None:
        """Return once every change recorded so far is on disk."""
        if self._failure is not None:
            raise self._failure
        if self._durable >= self._appended:
            return
        assert self._loop is not None
        future: asyncio.Future[None] = self._loop.create_future()
        self._waiters.append((self._appended, future))
        await future

    async def close(self) -> None:
        """Write what is queued, stop the writer thread and close the journal."""
        if self._writer is not None:
            with self._ready:
                self._closing = True
                self._ready.notify()
            await asyncio.to_thread(self._writer.join)
            self._writer = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _record(self, change: Change) -> None:
        metadata = change.entry.obj["metadata"]
        head: dict[str, object] = {
            "rv": change.rv,
            "op": "del" if change.type == "DELETED" else "put",
            "g": change.key[0],
            "r": change.key[1],
        }
        if change.type == "DELETED":
            head["ns"] = metadata.get("namespace") or ""
            head["n"] = metadata["name"]
            line = seal(orjson.dumps(head)) + b"\n"
        else:
            line = seal(orjson.dumps(head)[:-1] + b',"o":' + change.entry.raw() + b"}") + b"\n"
        self._appended += 1
        self._enqueue(line)

    def _enqueue(self, item: bytes | _Swap) -> None:
        with self._ready:
            self._queue.append(item)
            if self._writer_waits:
                self._writer_waits = False
                self._ready.notify()

    def _write_queued(self) -> None:
        """The writer thread: every line queued so far (up to a compaction) in one write and
        one fdatasync, then the compaction, until `close` and the queue is empty."""
        assert self._loop is not None
        loop, written = self._loop, 0
        while True:
            with self._ready:
                while not self._queue and not self._closing:
                    self._writer_waits = True
                    self._ready.wait()
                if not self._queue:
                    return
                cut = next((i for i, item in enumerate(self._queue) if isinstance(item, _Swap)),
                           len(self._queue))
                lines = self._queue[:cut]
                swap = self._queue[cut] if cut < len(self._queue) else None
                del self._queue[:cut + 1]
            if lines:
                written += len(lines)
                try:
                    self._write(b"".join(lines))  # type: ignore[arg-type]
                    loop.call_soon_threadsafe(self._release, written, None)
                except OSError as exc:
                    loop.call_soon_threadsafe(self._fail, exc)
            if isinstance(swap, _Swap):
                try:
                    self._swap(swap.counter, swap.objects)
                    loop.call_soon_threadsafe(_settle, swap.done, None)
                except OSError as exc:
                    loop.call_soon_threadsafe(_settle, swap.done, exc)

    def _fail(self, error: OSError) -> None:
        """On the loop: a write failed, so no write queued so far (nor after) is acknowledged."""
        if self._failure is None:
            self._failure = error
            self._log.opt(exception=error).error(
                "journal write failed; writes can no longer be acknowledged")
        self._release(self._appended, error)

    def _release(self, upto: int, error: BaseException | None) -> None:
        if error is None:
            self._durable = max(self._durable, upto)
        keep: list[tuple[int, asyncio.Future[None]]] = []
        for target, future in self._waiters:
            if target > upto:
                keep.append((target, future))
            elif not future.done():
                if error is None:
                    future.set_result(None)
                else:
                    future.set_exception(error)
        self._waiters = keep

    def _write(self, data: bytes) -> None:
        assert self._fd is not None
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        os.fdatasync(self._fd)

    def _sync_directory(self) -> None:
        sync_directory(self._directory)


def _settle(future: asyncio.Future[None], error: BaseException | None) -> None:
    """On the loop: a compaction's end (its waiter may have been cancelled meanwhile)."""
    if future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)


def _stored_objects(table: ObjectTable) -> list[tuple[TypeKey, bytes]]:
    """Every object of the table, as the bytes it is stored as (taken at one moment)."""
    return [(key, entry.raw()) for key in table.type_keys()
            for entry in table.bucket(key).entries.values()]


def sync_directory(directory: Path) -> None:
    """fsync a directory, so the names of files just written or renamed in it are durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def private_opener(path: str, flags: int) -> int:
    """Open for `open(..., opener=)` so that stored objects are readable by the owner only."""
    return os.open(path, flags, 0o600)
