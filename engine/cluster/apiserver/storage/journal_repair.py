"""`jobmachine repair-data`: make a data directory with damaged records startable again.

Start-up refuses a snapshot or journal with a line it cannot load
(`CorruptDataError`), because serving without that record would lose it
silently. The repair keeps every record that loads and moves every other line
aside, verbatim with its line number and what is wrong with it, into
`<file>.rejected-<stamp>` next to the file. It is safe to interrupt: the new
files are written under temporary names, fsynced and loaded back before they
replace the originals, which stay as `<file>.bak-<stamp>` (hard links when the
file system allows, so no copy is made). Run it while no server uses the
directory.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import orjson

from engine.cluster.apiserver.storage.objects import ObjectTable
from engine.cluster.apiserver.storage.persistence import (
    JOURNAL,
    SNAPSHOT,
    CorruptDataError,
    ForeignFormatError,
    JournalReader,
    SnapshotReader,
    is_json,
    load_files,
    private_opener,
    snapshot_header,
    sync_directory,
)

_LISTED = 20  # rejected lines printed per file; the rejected file holds them all


@dataclass(frozen=True)
class Rejected:
    """A line moved aside: where it was, what is wrong with it, and its bytes."""

    line: int
    problem: str
    raw: bytes


@dataclass
class FileRepair:
    """What the repair does with one file: the lines it keeps and the lines it moves aside."""

    path: Path
    kept: list[bytes] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    # What no single line carries: a missing header, records cut off, a missing snapshot.
    notes: list[str] = field(default_factory=list)
    first_rv: int | None = None  # of the journal's first kept record

    @property
    def changed(self) -> bool:
        return bool(self.rejected or self.notes)

    def rejected_path(self, stamp: str) -> Path:
        return self.path.with_name(f"{self.path.name}.rejected-{stamp}")

    def backup_path(self, stamp: str) -> Path:
        return self.path.with_name(f"{self.path.name}.bak-{stamp}")

    def temporary_path(self, stamp: str) -> Path:
        return self.path.with_name(f"{self.path.name}.repaired-{stamp}")


@dataclass
class RepairReport:
    """What `repair_data_dir` found and did; `lines()` tells it to the admin."""

    directory: Path
    snapshot: FileRepair
    journal: FileRepair
    counter: int  # the snapshot's resourceVersion counter after the repair
    stamp: str | None = None  # set when files were written (None: a dry run, or no change)
    objects: int | None = None  # what the repaired directory loads
    rv: int | None = None

    @property
    def changed(self) -> bool:
        return self.snapshot.changed or self.journal.changed

    def lines(self) -> list[str]:
        if not self.changed:
            return [f"{self.directory}: nothing to repair ({len(self.snapshot.kept)} records "
                    f"in {SNAPSHOT}, {len(self.journal.kept)} in {JOURNAL})"]
        out: list[str] = []
        for repair in (self.snapshot, self.journal):
            out += self._file_lines(repair)
        if self.stamp is None:
            out.append("dry run: nothing was changed; run again without --dry-run to repair")
            return out
        backups = [str(r.backup_path(self.stamp)) for r in (self.snapshot, self.journal)
                   if r.changed and r.backup_path(self.stamp).exists()]
        if backups:
            out.append("the originals are kept as " + ", ".join(backups))
        out.append(f"{self.directory} loads again: {self.objects} objects, resourceVersion "
                   f"{self.rv}")
        return out

    def _file_lines(self, repair: FileRepair) -> list[str]:
        keep = "would keep" if self.stamp is None else "kept"
        head = f"{repair.path}: {keep} {_count(len(repair.kept), 'record')}"
        if not repair.rejected:
            return [head + ", nothing to move aside", *(f"  {n}" for n in repair.notes)]
        move = "would move" if self.stamp is None else "moved"
        where = "" if self.stamp is None else f" to {repair.rejected_path(self.stamp)}"
        out = [f"{head}, {move} {_count(len(repair.rejected), 'line')} aside{where}:"]
        out += [f"  line {r.line}: {r.problem}" for r in repair.rejected[:_LISTED]]
        if len(repair.rejected) > _LISTED:
            out.append(f"  ... and {len(repair.rejected) - _LISTED} more lines")
        return out + [f"  {note}" for note in repair.notes]


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


def repair_data_dir(directory: Path, *, dry_run: bool = False) -> RepairReport:
    """Keep every good record of `directory`'s snapshot and journal, move the other lines
    aside, and check that the result loads; with `dry_run`, only say what would happen."""
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory}: no such data directory")
    snapshot, counter, sealed = _scan_snapshot(directory / SNAPSHOT)
    journal = _scan_journal(directory / JOURNAL, sealed)
    if not snapshot.path.exists() and journal.first_rv not in (None, 1):
        snapshot.notes.append(
            f"{SNAPSHOT} is missing and the journal starts at resourceVersion "
            f"{journal.first_rv}: what was written before is lost; writing an empty snapshot"
        )
    report = RepairReport(directory, snapshot, journal, counter)
    if dry_run or not report.changed:
        return report
    stamp = _free_stamp([snapshot, journal])
    changed = [repair for repair in (snapshot, journal) if repair.changed]
    header = snapshot_header(counter, len(snapshot.kept))
    for repair in changed:
        content = [header] if repair is snapshot else []
        _write_durably(repair.temporary_path(stamp), [*content, *repair.kept])
    try:
        report.objects, report.rv = _check_loads(snapshot, journal, stamp)
    except BaseException:
        for repair in changed:
            repair.temporary_path(stamp).unlink(missing_ok=True)
        raise
    for repair in changed:
        if repair.rejected:
            _write_durably(repair.rejected_path(stamp), _rejected_lines(repair))
        if repair.path.exists():
            _keep_original(repair.path, repair.backup_path(stamp))
    sync_directory(directory)
    for repair in changed:
        os.replace(repair.temporary_path(stamp), repair.path)
        sync_directory(directory)
    report.stamp = stamp
    return report


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")


def _scan_snapshot(path: Path) -> tuple[FileRepair, int, bool | None]:
    """Sort the snapshot's lines into kept and moved aside; the counter to write, and
    whether the journal's lines must carry checksums (None: unknown, without a header)."""
    repair = FileRepair(path)
    if not path.exists():
        return repair, 0, None
    reader = SnapshotReader(path)
    for number, line in enumerate(_lines(path), 1):
        if not line.strip():
            continue
        header_problem = None
        if reader.counter is None and not reader.records:
            try:
                reader.header(number, line)
                continue
            except ForeignFormatError:
                raise
            except CorruptDataError as exc:
                header_problem = exc.problem
        try:
            reader.record(number, line)
            repair.kept.append(line)
        except CorruptDataError as exc:
            problem = exc.problem if header_problem is None or _is_record(line) else header_problem
            repair.rejected.append(Rejected(number, problem, line))
    # Never above the header's counter: journal records at or below it would be skipped.
    counter = reader.highest if reader.counter is None else reader.counter
    if reader.counter is None:
        empty = not (repair.kept or repair.rejected)
        repair.notes.append(f"no header line: writing one with the counter {counter}, the "
                            f"highest resourceVersion kept" + (" (the file was empty: what "
                            "it held is lost)" if empty else ""))
    announced = reader.announced
    if announced is not None and reader.records + len(repair.rejected) < announced:
        lost = announced - reader.records - len(repair.rejected)
        repair.notes.append(f"the header announces {announced} records: {lost} more were cut "
                            f"off the file and cannot be recovered")
    return repair, counter, reader.sealed if reader.counter is not None else None


def _is_record(line: bytes) -> bool:
    """Whether the line is meant as a stored object (so its problem is the record's)."""
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return isinstance(value, dict) and "o" in value


def _scan_journal(path: Path, sealed: bool | None) -> FileRepair:
    """Sort the journal's lines into kept and moved aside (a torn last line too: start-up
    skips it, the repair keeps it aside)."""
    repair = FileRepair(path)
    if not path.exists():
        return repair
    reader = JournalReader(path, sealed)
    lines = _lines(path)
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if number == len(lines) and not is_json(line):
            problem = "a torn last record, a write that was never acknowledged"
            repair.rejected.append(Rejected(number, problem, line))
            continue
        try:
            record = reader.record(number, line)
        except CorruptDataError as exc:
            repair.rejected.append(Rejected(number, exc.problem, line))
            continue
        repair.kept.append(line)
        if repair.first_rv is None:
            repair.first_rv = record.rv
    return repair


def _check_loads(snapshot: FileRepair, journal: FileRepair, stamp: str) -> tuple[int, int]:
    """Load the files as they will be after the repair: how many objects, which counter."""
    table = ObjectTable()
    paths = [r.temporary_path(stamp) if r.changed else r.path for r in (snapshot, journal)]
    try:
        load_files(table, paths[0], paths[1])
    except CorruptDataError as exc:
        raise RuntimeError(f"the repaired files do not load, nothing was changed: {exc}") from exc
    return sum(len(table.bucket(key).entries) for key in table.type_keys()), table.rv


def _rejected_lines(repair: FileRepair) -> list[bytes]:
    """The lines moved aside, each after a `# line N: problem` comment, verbatim."""
    out = [f"# Lines moved aside from {repair.path} by `jobmachine repair-data`.".encode(),
           b"# Each '# line N: problem' comment is followed by that line exactly as it was."]
    for rejected in repair.rejected:
        out += [f"# line {rejected.line}: {rejected.problem}".encode(), rejected.raw]
    return out


def _free_stamp(repairs: list[FileRepair]) -> str:
    """A UTC time stamp that no file this repair would write is named with yet."""
    base = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    for attempt in range(1000):
        stamp = base if not attempt else f"{base}-{attempt}"
        names = [path(stamp) for r in repairs
                 for path in (r.rejected_path, r.backup_path, r.temporary_path)]
        if not any(name.exists() for name in names):
            return stamp
    raise FileExistsError(f"{repairs[0].path.parent}: too many repairs at {base}")


def _write_durably(path: Path, lines: list[bytes]) -> None:
    """Write `lines`, each ending in a newline, owner-readable only, and fsync them."""
    with open(path, "xb", opener=private_opener) as stream:
        for line in lines:
            stream.write(line + b"\n")
        stream.flush()
        os.fsync(stream.fileno())


def _keep_original(path: Path, backup: Path) -> None:
    """Keep the file under `backup` too: a hard link, else a durable copy."""
    try:
        os.link(path, backup)
    except OSError:
        shutil.copy2(path, backup)
        with open(backup, "rb") as stream:
            os.fsync(stream.fileno())
