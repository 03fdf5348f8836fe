"""Durability: an append-only journal of every committed change, and a snapshot.

Every change is appended to `journal.jsonl`; a request is answered only after
the journal has been fsynced past its change, and the fsync is shared by every
request waiting at that moment (group commit), so concurrency raises
throughput instead of the number of fsyncs. On start the snapshot is loaded,
the journal replayed (a torn last line, never acknowledged, is ignored), and
both compacted into a fresh snapshot.
"""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson
from loguru import logger

from engine.cluster.apiserver.objects import Change, ObjectTable

SNAPSHOT = "snapshot.jsonl"
JOURNAL = "journal.jsonl"
_FORMAT = 1


class JournalCorruptError(RuntimeError):
    """The journal has an unreadable record before its end: not a torn write."""


class Journal:
    """The durable log of one data directory."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._journal_path = directory / JOURNAL
        self._snapshot_path = directory / SNAPSHOT
        self._fd: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="journal")
        self._pending: list[bytes] = []
        self._appended = 0
        self._durable = 0
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._flushing = False
        self._failure: BaseException | None = None
        self._log = logger.bind(component="apiserver.journal", directory=str(directory))

    def load(self, table: ObjectTable) -> None:
        """Fill `table` from the snapshot and the journal."""
        self._directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        snapshot_rv = self._load_snapshot(table)
        table.rv = max(table.rv, snapshot_rv)
        self._replay(table, snapshot_rv)

    def compact(self, table: ObjectTable) -> None:
        """Write every object into a new snapshot, then empty the journal."""
        temporary = self._snapshot_path.with_name(SNAPSHOT + ".tmp")
        with open(temporary, "wb", opener=_private) as stream:
            stream.write(orjson.dumps({"format": _FORMAT, "rv": table.rv}) + b"\n")
            for key in table.type_keys():
                for entry in table.bucket(key).entries.values():
                    head = orjson.dumps({"g": key[0], "r": key[1]})[:-1]
                    stream.write(head + b',"o":' + entry.raw() + b"}\n")
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, self._snapshot_path)
        self._sync_directory()
        with open(self._journal_path, "wb", opener=_private) as stream:
            os.fsync(stream.fileno())

    def attach(self, table: ObjectTable) -> None:
        """Start journaling the table's changes (call on the loop that owns the table)."""
        self._loop = asyncio.get_running_loop()
        self._fd = os.open(self._journal_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
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
        while self._flushing or self._pending:
            await self.flushed()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._executor.shutdown(wait=True)

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
            line = orjson.dumps(head) + b"\n"
        else:
            line = orjson.dumps(head)[:-1] + b',"o":' + change.entry.raw() + b"}\n"
        self._pending.append(line)
        self._appended += 1
        if not self._flushing:
            self._flushing = True
            assert self._loop is not None
            self._loop.create_task(self._flush())

    async def _flush(self) -> None:
        assert self._loop is not None
        try:
            while self._pending:
                data = b"".join(self._pending)
                self._pending.clear()
                upto = self._appended
                await self._loop.run_in_executor(self._executor, self._write, data)
                self._durable = upto
                self._release(upto, None)
        except OSError as exc:
            self._failure = exc
            self._log.exception("journal write failed; writes can no longer be acknowledged")
            self._release(self._appended, exc)
        finally:
            self._flushing = False

    def _release(self, upto: int, error: BaseException | None) -> None:
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

    def _load_snapshot(self, table: ObjectTable) -> int:
        if not self._snapshot_path.exists():
            return 0
        with open(self._snapshot_path, "rb") as stream:
            header = orjson.loads(stream.readline())
            if header.get("format") != _FORMAT:
                found = header.get("format")
                raise JournalCorruptError(f"{self._snapshot_path}: unknown format {found}")
            for line in stream:
                record = orjson.loads(line)
                table.load((record["g"], record["r"]), record["o"])
        return int(header["rv"])

    def _replay(self, table: ObjectTable, snapshot_rv: int) -> None:
        if not self._journal_path.exists():
            return
        lines = self._journal_path.read_bytes().split(b"\n")
        for index, line in enumerate(lines):
            if not line:
                continue
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                if index == len(lines) - 1:
                    self._log.warning("ignoring a torn last journal record ({} bytes)", len(line))
                    return
                where = f"{self._journal_path}: record {index + 1}"
                raise JournalCorruptError(f"{where}: {exc}") from exc
            rv = int(record["rv"])
            if rv <= snapshot_rv:
                continue
            key = (record["g"], record["r"])
            if record["op"] == "del":
                table.unload(key, record["ns"], record["n"])
            else:
                table.load(key, record["o"])
            table.rv = max(table.rv, rv)

    def _sync_directory(self) -> None:
        fd = os.open(self._directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _private(path: str, flags: int) -> int:
    """Open for `open(..., opener=)` so that stored objects are readable by the owner only."""
    return os.open(path, flags, 0o600)
