"""Damaged or foreign data files: start-up names the file and line, repair keeps the rest.

A bad line anywhere in the snapshot, or anywhere but the torn last line of the
journal, stops the load with one `FILE:LINE: problem` line naming the repair
command; `repair_data_dir` keeps every good record, moves the other lines aside
verbatim with their line numbers, and leaves a directory that loads.
"""

from __future__ import annotations

import asyncio
import functools
import json
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from loguru import logger

from engine.cluster.apiserver.admission.service_account_admission import ROOT_CA_CONFIGMAP
from engine.cluster.apiserver.registry.builtins import CONFIGMAPS
from engine.cluster.apiserver.storage.checksums import seal
from engine.cluster.apiserver.storage.journal_repair import repair_data_dir
from engine.cluster.apiserver.storage.objects import ObjectTable
from engine.cluster.apiserver.storage.persistence import (
    JOURNAL,
    SNAPSHOT,
    CorruptDataError,
    ForeignFormatError,
    Journal,
)
from tests.unit.cluster.store_support import ManualReactor, make_core

REMEDY = ("; to start with the good records only, run `jobmachine repair-data --data-dir {}` "
          "(it moves the bad ones aside)")
NOT_JSON = "not JSON (unexpected character, expected a JSON value at column 1)"
TORN = b'{"rv":99,"op":"put","g":"","r":"configmaps","o":{"metad'


def _write(directory: Path, create: list[str], remove: tuple[str, ...] = ()) -> None:
    """Open a journaled core on `directory` (compacting what is there), create and delete
    configmaps, and close it: the changes are in the journal, the rest in the snapshot."""

    async def body() -> None:
        core = make_core(ManualReactor(), data_dir=directory)
        for name in create:
            core.store.create(CONFIGMAPS, "default", {"metadata": {"name": name}})
        for name in remove:
            core.store.table.remove(CONFIGMAPS.key, "default", name)
        await core.flushed()
        await core.close()

    asyncio.run(body())


def _data_dir(directory: Path) -> Path:
    """A data dir with objects in the snapshot (a, b, c, d) and changes in the journal
    (e and f created, a deleted)."""
    _write(directory, ["a", "b", "c", "d"])
    _write(directory, ["e", "f"], ("a",))
    return directory


def _load(directory: Path) -> ObjectTable:
    table = ObjectTable()
    Journal(directory).load(table)
    return table


def _state(table: ObjectTable) -> dict[tuple[tuple[str, str], str, str], bytes]:
    return {(key, *name): entry.raw() for key in table.type_keys()
            for name, entry in table.bucket(key).entries.items()}


def _configmaps(table: ObjectTable) -> set[str]:
    """The test's ConfigMaps (not the `kube-root-ca.crt` every namespace has)."""
    return {name for _, name in table.bucket(CONFIGMAPS.key).entries
            if name != ROOT_CA_CONFIGMAP}


def _lines(path: Path) -> list[bytes]:
    """The file's lines, without the empty string after the final newline."""
    return path.read_bytes().split(b"\n")[:-1]


def _as_written(line: bytes) -> bytes:
    """A JSON object line sealed with its checksum, as the engine writes every line (so a
    test of a record's shape meets that check, not the checksum's); anything else as is."""
    try:
        is_object = isinstance(orjson.loads(line), dict)
    except orjson.JSONDecodeError:
        is_object = False
    return seal(line) if is_object else line


def _insert(path: Path, number: int, line: bytes) -> None:
    """Put `line` (sealed, if a JSON object) in the file so that it becomes line `number`."""
    lines = _lines(path)
    lines.insert(number - 1, _as_written(line))
    path.write_bytes(b"\n".join(lines) + b"\n")


def _replace(path: Path, number: int, line: bytes) -> bytes:
    """Replace line `number` (by `line` sealed, if a JSON object); return what it was."""
    lines = _lines(path)
    old, lines[number - 1] = lines[number - 1], _as_written(line)
    path.write_bytes(b"\n".join(lines) + b"\n")
    return old


def _edited(line: bytes, **changes: object) -> bytes:
    record = orjson.loads(line)
    record.pop("crc", None)
    record.update(changes)
    return orjson.dumps(record)


def _error(directory: Path) -> CorruptDataError:
    with pytest.raises(CorruptDataError) as caught:
        _load(directory)
    message = str(caught.value)
    assert "\n" not in message
    return caught.value


def _message(path: Path, line: int, problem: str) -> str:
    return f"{path}:{line}: {problem}" + REMEDY.format(path.parent)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return _data_dir(tmp_path / "data")


def test_the_data_dir_of_a_running_server_loads(data_dir: Path) -> None:
    assert _configmaps(_load(data_dir)) == {"b", "c", "d", "e", "f"}
    header, *records = _lines(data_dir / SNAPSHOT)
    assert orjson.loads(header)["count"] == len(records)


# --- the one-line error -----------------------------------------------------------------


def test_garbage_in_the_middle_of_the_snapshot(data_dir: Path) -> None:
    _insert(data_dir / SNAPSHOT, 3, b"garbage")
    assert str(_error(data_dir)) == _message(data_dir / SNAPSHOT, 3, NOT_JSON)


def test_garbage_in_the_middle_of_the_journal(data_dir: Path) -> None:
    _insert(data_dir / JOURNAL, 2, b"garbage")
    error = _error(data_dir)
    assert (error.path, error.line) == (data_dir / JOURNAL, 2)
    assert str(error) == _message(data_dir / JOURNAL, 2, NOT_JSON)


def test_a_binary_file_for_a_snapshot(data_dir: Path) -> None:
    (data_dir / SNAPSHOT).write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xd8")
    assert str(_error(data_dir)) == _message(
        data_dir / SNAPSHOT, 1, "binary data, not a JSON line")


def test_a_snapshot_cut_in_the_middle_of_a_line(data_dir: Path) -> None:
    snapshot = data_dir / SNAPSHOT
    data = snapshot.read_bytes()
    snapshot.write_bytes(data[: data.index(b"\n", len(data) // 2) - 10])
    error = _error(data_dir)
    assert error.line == len(_lines(snapshot)) + 1
    assert error.problem.startswith("not JSON (unexpected end of data at column ")


def test_a_snapshot_cut_at_the_end_of_a_line(data_dir: Path) -> None:
    snapshot = data_dir / SNAPSHOT
    lines = _lines(snapshot)
    snapshot.write_bytes(b"\n".join(lines[:3]) + b"\n")
    announced = len(lines) - 1
    assert str(_error(data_dir)) == _message(
        snapshot, 4, f"the file holds 2 records where its header (line 1) announces "
        f"{announced}: it was cut short")


def test_an_empty_snapshot(data_dir: Path) -> None:
    (data_dir / SNAPSHOT).write_bytes(b"")
    assert str(_error(data_dir)) == _message(
        data_dir / SNAPSHOT, 1, 'the file is empty, but a snapshot starts with the header '
        '{"format": 2, "rv": N}')


def test_a_missing_snapshot_behind_a_journal(data_dir: Path) -> None:
    (data_dir / SNAPSHOT).unlink()
    first = orjson.loads(_lines(data_dir / JOURNAL)[0])["rv"]
    assert str(_error(data_dir)) == _message(
        data_dir / JOURNAL, 1, f"the journal starts at resourceVersion {first}, but "
        f"snapshot.jsonl, which holds what came before, is missing")


@pytest.mark.parametrize(
    ("header", "problem"),
    [
        (b'{"hello": "world"}',
         'not a jobmachine snapshot: the first line is no {"format": 2, "rv": N}'),
        (b"[1, 2, 3]", 'not a jobmachine snapshot: the first line is no {"format": 2, "rv": N}'),
        (b'{"format": 2, "rv": "12"}', "rv, the resourceVersion counter, is not a number"),
        (b'{"format": 2, "rv": 12, "count": -1}', "count, the number of records, is not a number"),
        (b'{"format": "one", "rv": 12}', 'unknown snapshot format "one"'),
    ],
)
def test_a_bad_snapshot_header(data_dir: Path, header: bytes, problem: str) -> None:
    _replace(data_dir / SNAPSHOT, 1, header)
    assert str(_error(data_dir)) == _message(data_dir / SNAPSHOT, 1, problem)


def test_a_snapshot_without_its_header(data_dir: Path) -> None:
    snapshot = data_dir / SNAPSHOT
    snapshot.write_bytes(b"\n".join(_lines(snapshot)[1:]) + b"\n")
    assert str(_error(data_dir)) == _message(
        snapshot, 1, 'the header {"format": 2, "rv": N} is missing: this line is a stored object')


def test_a_newer_snapshot_format_is_not_for_repair(data_dir: Path) -> None:
    _replace(data_dir / SNAPSHOT, 1, b'{"format": 3, "rv": 12}')
    error = _error(data_dir)
    assert isinstance(error, ForeignFormatError)
    assert str(error) == (f"{data_dir / SNAPSHOT}:1: snapshot format 3 is newer than this "
                          f"jobmachine's (2); start the jobmachine that wrote it")
    with pytest.raises(ForeignFormatError):
        repair_data_dir(data_dir)


def _object_of(line: bytes, **metadata: object) -> Any:
    obj = orjson.loads(line)["o"]
    obj["metadata"].update(metadata)
    return obj


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda line: b"[1, 2]", "not a snapshot record (an object with g, r and o)"),
        (lambda line: b'{"g": "", "r": "configmaps"}', "not a snapshot record (an object with "
         "g, r and o)"),
        (lambda line: _edited(line, g=None), "g and r, the resource type, are not strings"),
        (lambda line: _edited(line, r="Config Maps"),
         'no resource type can be called "Config Maps" in group ""'),
        (lambda line: _edited(line, g="apps"),
         '"b" of apiVersion "v1" is stored under the group "apps"'),
        (lambda line: _edited(line, o=[1]), "the stored object is not a JSON object"),
        (lambda line: _edited(line, o={"kind": "ConfigMap"}), "the stored object has no metadata"),
        (lambda line: _edited(line, o=_object_of(line, name="")),
         "the stored object has no metadata.name"),
        (lambda line: _edited(line, o=_object_of(line, namespace=7)),
         'metadata.namespace of "b" is not a string'),
        (lambda line: _edited(line, o=_object_of(line, ownerReferences={"uid": "x"})),
         'metadata.ownerReferences of "b" are not references'),
        (lambda line: _edited(line, o=_object_of(line, resourceVersion="7a")),
         'metadata.resourceVersion of "b" is not a number'),
        (lambda line: _edited(line, o=_object_of(line, resourceVersion="999999")),
         "resourceVersion 999999 is above the snapshot's counter"),
    ],
)
def test_a_snapshot_record_of_the_wrong_shape(
    data_dir: Path, change: Callable[[bytes], bytes], problem: str
) -> None:
    snapshot = data_dir / SNAPSHOT
    number = next(i for i, line in enumerate(_lines(snapshot), 1) if b'"name":"b"' in line)
    _replace(snapshot, number, change(_lines(snapshot)[number - 1]))
    error = _error(data_dir)
    assert (error.path, error.line) == (snapshot, number)
    assert error.problem.startswith(problem)


def test_a_second_copy_of_an_object_in_the_snapshot(data_dir: Path) -> None:
    snapshot = data_dir / SNAPSHOT
    _insert(snapshot, 3, _lines(snapshot)[1])
    assert str(_error(data_dir)) == _message(snapshot, 3, "a second copy of the object at line 2")


def _journal_line(directory: Path, needle: bytes) -> tuple[int, bytes]:
    lines = _lines(directory / JOURNAL)
    return next((i, line) for i, line in enumerate(lines, 1) if needle in line)


@pytest.mark.parametrize(
    ("needle", "change", "problem"),
    [
        (b'"name":"e"', lambda r: b'"just a string"',
         "not a journal record (an object with rv, op, g and r)"),
        (b'"name":"e"', lambda r: _edited(r, op="move"), 'unknown record type (op "move")'),
        (b'"name":"e"', lambda r: _edited(r, rv="7"),
         "rv, the resourceVersion, is not a positive integer"),
        (b'"name":"e"', lambda r: _edited(r, rv=True),
         "rv, the resourceVersion, is not a positive integer"),
        (b'"name":"e"', lambda r: _edited(r, r="config/maps"),
         'no resource type can be called "config/maps" in group ""'),
        (b'"name":"e"', lambda r: _edited(r, o={"metadata": {"namespace": "default"}}),
         "the stored object has no metadata.name"),
        (b'"name":"e"', lambda r: _edited(r, rv=orjson.loads(r)["rv"] + 100),
         "the object's resourceVersion"),
        (b'"op":"del"', lambda r: _edited(r, n=None), "ns and n, the deleted object, are not "
         "strings"),
    ],
)
def test_a_journal_record_of_the_wrong_shape(
    data_dir: Path, needle: bytes, change: Callable[[bytes], bytes], problem: str
) -> None:
    number, line = _journal_line(data_dir, needle)
    _replace(data_dir / JOURNAL, number, change(line))
    error = _error(data_dir)
    assert (error.path, error.line) == (data_dir / JOURNAL, number)
    assert error.problem.startswith(problem)


def test_a_journal_out_of_order(data_dir: Path) -> None:
    journal = data_dir / JOURNAL
    first = _lines(journal)[0]
    _insert(journal, 3, first)
    rv = orjson.loads(first)["rv"]
    before = orjson.loads(_lines(journal)[1])["rv"]
    assert str(_error(data_dir)) == _message(
        journal, 3, f"resourceVersion {rv} after {before}: the journal is in increasing order")


# --- the torn last line ------------------------------------------------------------------


@pytest.fixture
def warnings() -> Iterator[list[str]]:
    messages: list[str] = []
    sink = logger.add(lambda message: messages.append(str(message)), level="WARNING")
    yield messages
    logger.remove(sink)


def test_a_torn_last_journal_line_is_skipped_with_a_warning(
    data_dir: Path, warnings: list[str]
) -> None:
    journal = data_dir / JOURNAL
    expected = _state(_load(data_dir))
    number = len(_lines(journal)) + 1
    with open(journal, "ab") as stream:
        stream.write(TORN)
    assert _state(_load(data_dir)) == expected
    assert [w for w in warnings if f"{journal}:{number}: ignoring a torn last record" in w]


def test_a_finished_bad_last_journal_line_is_no_torn_write(data_dir: Path) -> None:
    journal = data_dir / JOURNAL
    with open(journal, "ab") as stream:
        stream.write(TORN + b"\n")
    assert _error(data_dir).line == len(_lines(journal))


# --- repair ------------------------------------------------------------------------------


def test_repair_keeps_the_good_records_and_moves_the_rest_aside(data_dir: Path) -> None:
    snapshot, journal = data_dir / SNAPSHOT, data_dir / JOURNAL
    originals = {path: path.read_bytes() for path in (snapshot, journal)}  # before damage
    number, _ = _journal_line(data_dir, b'"name":"e"')
    _replace(journal, number, b"\x00\x00garbage\xff")
    _insert(snapshot, 3, b"garbage")
    torn = len(_lines(journal)) + 1
    with open(journal, "ab") as stream:
        stream.write(TORN)
    damaged = {path: path.read_bytes() for path in (snapshot, journal)}

    report = repair_data_dir(data_dir)

    assert report.stamp is not None
    stamp = report.stamp
    table = _load(data_dir)
    assert _configmaps(table) == {"b", "c", "d", "f"}
    assert report.objects == len(_state(table))
    rejected_snapshot = (data_dir / f"{SNAPSHOT}.rejected-{stamp}").read_bytes()
    assert rejected_snapshot.split(b"\n")[2:] == [
        f"# line 3: {NOT_JSON}".encode(), b"garbage", b""]
    rejected_journal = (data_dir / f"{JOURNAL}.rejected-{stamp}").read_bytes()
    assert rejected_journal.split(b"\n")[2:] == [
        f"# line {number}: binary data, not a JSON line".encode(), b"\x00\x00garbage\xff",
        f"# line {torn}: a torn last record, a write that was never acknowledged".encode(),
        TORN, b""]
    for path in (snapshot, journal):
        assert (data_dir / f"{path.name}.bak-{stamp}").read_bytes() == damaged[path]
    assert snapshot.read_bytes() == originals[snapshot]
    assert {p.stat().st_mode & 0o777 for p in data_dir.iterdir() if ".jsonl" in p.name} == {0o600}
    lines = report.lines()
    assert lines[0] == (f"{snapshot}: kept {len(_lines(snapshot)) - 1} records, moved 1 line "
                        f"aside to {snapshot}.rejected-{stamp}:")
    assert lines[1] == f"  line 3: {NOT_JSON}"
    assert lines[2].startswith(f"{journal}: kept {len(_lines(journal))} records, moved 2 lines")
    assert lines[-1] == f"{data_dir} loads again: {report.objects} objects, resourceVersion " \
                        f"{table.rv}"
    assert repair_data_dir(data_dir).lines() == [
        f"{data_dir}: nothing to repair ({len(_lines(snapshot)) - 1} records in snapshot.jsonl, "
        f"{len(_lines(journal))} in journal.jsonl)"]


def test_a_dry_run_changes_nothing(data_dir: Path) -> None:
    _insert(data_dir / JOURNAL, 2, b"garbage")
    before = {p.name: p.read_bytes() for p in data_dir.iterdir() if p.is_file()}
    report = repair_data_dir(data_dir, dry_run=True)
    assert report.changed and report.stamp is None
    assert report.lines()[1:] == [
        f"{data_dir / JOURNAL}: would keep {len(_lines(data_dir / JOURNAL)) - 1} records, "
        f"would move 1 line aside:",
        f"  line 2: {NOT_JSON}",
        "dry run: nothing was changed; run again without --dry-run to repair",
    ]
    assert {p.name: p.read_bytes() for p in data_dir.iterdir() if p.is_file()} == before


def test_repair_writes_a_lost_header_with_the_highest_resourceversion(data_dir: Path) -> None:
    snapshot = data_dir / SNAPSHOT
    expected = _state(_load(data_dir))
    snapshot.write_bytes(b"\n".join(_lines(snapshot)[1:]) + b"\n")
    report = repair_data_dir(data_dir)
    assert not report.snapshot.rejected
    assert report.snapshot.notes[0].startswith("no header line: writing one with the counter ")
    assert _state(_load(data_dir)) == expected


def test_repair_moves_an_object_above_the_counter_aside(data_dir: Path) -> None:
    snapshot = data_dir / SNAPSHOT
    number = next(i for i, line in enumerate(_lines(snapshot), 1) if b'"name":"b"' in line)
    line = _lines(snapshot)[number - 1]
    _replace(snapshot, number, _edited(line, o=_object_of(line, resourceVersion="999999")))
    report = repair_data_dir(data_dir)
    assert [(r.line, r.problem) for r in report.snapshot.rejected] == [
        (number, "resourceVersion 999999 is above the snapshot's counter "
                 f"{report.counter} (line 1)")]
    assert _configmaps(_load(data_dir)) == {"c", "d", "e", "f"}, "the journal still applies"


def test_repair_of_an_empty_snapshot_says_what_is_lost(data_dir: Path) -> None:
    (data_dir / SNAPSHOT).write_bytes(b"")
    report = repair_data_dir(data_dir)
    assert report.snapshot.notes == [
        "no header line: writing one with the counter 0, the highest resourceVersion kept "
        "(the file was empty: what it held is lost)"]
    assert _configmaps(_load(data_dir)) == {"e", "f"}


def test_repair_of_a_cut_snapshot_says_how_many_records_are_lost(data_dir: Path) -> None:
    snapshot = data_dir / SNAPSHOT
    lines = _lines(snapshot)
    snapshot.write_bytes(b"\n".join(lines[:-2]) + b"\n")
    report = repair_data_dir(data_dir)
    assert report.snapshot.notes == [
        f"the header announces {len(lines) - 1} records: 2 more were cut off the file and "
        f"cannot be recovered"]
    _load(data_dir)


def test_repair_of_a_missing_snapshot(data_dir: Path) -> None:
    (data_dir / SNAPSHOT).unlink()
    report = repair_data_dir(data_dir)
    assert report.snapshot.notes[0].startswith("snapshot.jsonl is missing and the journal starts")
    assert _configmaps(_load(data_dir)) == {"e", "f"}


def test_repair_of_a_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such data directory"):
        repair_data_dir(tmp_path / "nowhere")


# --- any garbage, anywhere ---------------------------------------------------------------


@functools.cache
def _valid_files() -> dict[str, bytes]:
    with tempfile.TemporaryDirectory(prefix="jobmachine-corruption-") as scratch:
        directory = _data_dir(Path(scratch) / "data")
        return {name: (directory / name).read_bytes() for name in (SNAPSHOT, JOURNAL)}


@functools.cache
def _valid_state() -> dict[tuple[tuple[str, str], str, str], bytes]:
    with tempfile.TemporaryDirectory() as scratch:
        for name, data in _valid_files().items():
            (Path(scratch) / name).write_bytes(data)
        return _state(_load(Path(scratch)))


def _json_values() -> st.SearchStrategy[object]:
    scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=10)
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                        | st.dictionaries(st.sampled_from(["g", "r", "o", "rv", "op", "n",
                                                           "metadata", "x"]),
                                          inner, max_size=4), max_leaves=8)


# Random bytes, JSON of about the right keys, and records cut short (torn writes). A line
# that happens to be a complete valid record cannot be told from a real one: none of these
# strategies makes one (no "format" key for a header, too few leaves for a record).
_GARBAGE = (
    st.binary(max_size=60)
    | _json_values().map(lambda value: json.dumps(value).encode())
    | st.integers(0, 400).map(lambda n: _valid_files()[JOURNAL][:n].split(b"\n")[-1])
    # A cut just before a line's end is that whole record, not a torn one.
    .filter(lambda cut: cut not in _valid_files()[JOURNAL].split(b"\n"))
).map(lambda garbage: garbage.replace(b"\n", b""))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from([SNAPSHOT, JOURNAL]), where=st.integers(0, 1000), garbage=_GARBAGE)
def test_garbage_anywhere_is_named_and_repaired(name: str, where: int, garbage: bytes) -> None:
    files = _valid_files()
    lines = files[name].split(b"\n")[:-1]
    number = where % (len(lines) + 1) + 1
    lines.insert(number - 1, garbage)
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        for other, data in files.items():
            (directory / other).write_bytes(data)
        (directory / name).write_bytes(b"\n".join(lines) + b"\n")
        try:
            table = _load(directory)
        except CorruptDataError as error:
            assert (error.path.name, error.line) == (name, number)
        else:
            assert not garbage.strip(), "only a blank line may load"
            assert _state(table) == _valid_state()
            return
        repair_data_dir(directory)
        assert _state(_load(directory)) == _valid_state()


def _flipped(line: bytes, inside: bytes) -> bytes:
    """`line` with one byte inside the first occurrence of `inside` changed, so that it
    still parses (the damage a checksum is for)."""
    at = line.index(inside) + len(inside) // 2
    return line[:at] + bytes([line[at] ^ 0x01]) + line[at + 1:]


@pytest.mark.parametrize("file_name", [SNAPSHOT, JOURNAL])
def test_a_flipped_byte_that_still_parses_stops_the_start_and_changes_nothing(
    data_dir: Path, file_name: str
) -> None:
    path = data_dir / file_name
    number = next(i for i, line in enumerate(_lines(path), 1) if b'"name":"e"' in line
                  or (file_name == SNAPSHOT and b'"name":"b"' in line))
    lines = _lines(path)
    damaged = _flipped(lines[number - 1], b'"default"')
    orjson.loads(damaged)  # still JSON: only the checksum can tell
    lines[number - 1] = damaged
    path.write_bytes(b"\n".join(lines) + b"\n")
    before = {name: (data_dir / name).read_bytes() for name in (SNAPSHOT, JOURNAL)}
    with pytest.raises(CorruptDataError) as caught:
        _write(data_dir, [])  # a start: load, then compact
    assert str(caught.value) == _message(
        path, number, "checksum mismatch: the line is not what was written")
    assert {name: (data_dir / name).read_bytes() for name in before} == before


def test_a_line_whose_checksum_was_lost_is_named(data_dir: Path) -> None:
    journal = data_dir / JOURNAL
    lines = _lines(journal)
    lines[0] = lines[0].replace(b',"crc":', b',"crd":')
    journal.write_bytes(b"\n".join(lines) + b"\n")
    assert str(_error(data_dir)) == _message(
        journal, 1, "checksum missing: every line of this file ends with one")


def test_repair_moves_a_line_with_a_bad_checksum_aside(data_dir: Path) -> None:
    snapshot = data_dir / SNAPSHOT
    number = next(i for i, line in enumerate(_lines(snapshot), 1) if b'"name":"c"' in line)
    lines = _lines(snapshot)
    lines[number - 1] = _flipped(lines[number - 1], b'"name":"c"')
    snapshot.write_bytes(b"\n".join(lines) + b"\n")
    report = repair_data_dir(data_dir)
    assert [(r.line, r.problem) for r in report.snapshot.rejected] == [
        (number, "checksum mismatch: the line is not what was written")]
    assert _configmaps(_load(data_dir)) == {"b", "d", "e", "f"}


def _unsealed_format_1(directory: Path) -> None:
    """Rewrite a data dir as the release before checksums wrote it (format 1)."""
    for name in (SNAPSHOT, JOURNAL):
        path = directory / name
        lines = [orjson.loads(line) for line in _lines(path)]
        for value in lines:
            value.pop("crc")
            if "format" in value:
                value["format"] = 1
        path.write_bytes(b"".join(orjson.dumps(value) + b"\n" for value in lines))


def test_a_data_dir_without_checksums_loads_and_the_next_start_seals_it(data_dir: Path) -> None:
    expected = _state(_load(data_dir))
    _unsealed_format_1(data_dir)
    assert b'"crc"' not in (data_dir / SNAPSHOT).read_bytes()
    assert _state(_load(data_dir)) == expected
    _write(data_dir, ["g"])
    header, *records = _lines(data_dir / SNAPSHOT)
    assert orjson.loads(header)["format"] == 2
    assert all(b',"crc":' in line for line in [header, *records, *_lines(data_dir / JOURNAL)])
    assert _configmaps(_load(data_dir)) == {"b", "c", "d", "e", "f", "g"}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_single_changed_byte_of_a_stored_object_is_caught(data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as temporary:
        directory = _data_dir(Path(temporary) / "data")
        path = directory / data.draw(st.sampled_from([SNAPSHOT, JOURNAL]))
        lines = _lines(path)
        number = data.draw(st.integers(1, len(lines)))
        line = lines[number - 1]
        start = line.find(b'"o":')
        if start < 0:
            return  # a deletion or the header: no stored object on this line
        at = data.draw(st.integers(start + 5, line.rindex(b',"crc":') - 2))
        bit = data.draw(st.integers(0, 6))
        lines[number - 1] = line[:at] + bytes([line[at] ^ (1 << bit)]) + line[at + 1:]
        path.write_bytes(b"\n".join(lines) + b"\n")
        with pytest.raises(CorruptDataError) as caught:
            _load(directory)
        assert caught.value.path == path and caught.value.line == number
