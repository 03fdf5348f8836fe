"""The journal: group commit, replay, compaction, torn tails and corruption."""

from __future__ import annotations

import asyncio
import errno
import threading
from pathlib import Path

import pytest

from engine.cluster.apiserver.admission.service_account_admission import ROOT_CA_CONFIGMAP
from engine.cluster.apiserver.registry.builtins import CONFIGMAPS
from engine.cluster.apiserver.storage.objects import ObjectTable
from engine.cluster.apiserver.storage.persistence import JOURNAL, Journal, JournalCorruptError
from tests.unit.cluster.store_support import ManualReactor, make_core


def _run(directory: Path, names: list[str]) -> int:
    """Write configmaps through a journaled core; return the last resourceVersion."""

    async def body() -> int:
        core = make_core(ManualReactor(), data_dir=directory)
        for name in names:
            core.store.create(CONFIGMAPS, "default", {"metadata": {"name": name}})
        await core.flushed()
        rv = core.store.table.rv
        await core.close()
        return rv

    return asyncio.run(body())


def _load(directory: Path) -> ObjectTable:
    table = ObjectTable()
    Journal(directory).load(table)
    return table


def _configmaps(table: ObjectTable) -> set[tuple[str, str]]:
    """The test's ConfigMaps (not the `kube-root-ca.crt` every namespace has)."""
    return {key for key in table.bucket(CONFIGMAPS.key).entries if key[1] != ROOT_CA_CONFIGMAP}


def test_replay_restores_objects_and_counter(tmp_path: Path) -> None:
    rv = _run(tmp_path, ["a", "b"])
    table = _load(tmp_path)
    assert table.rv == rv
    assert _configmaps(table) == {("default", "a"), ("default", "b")}


def test_restart_compacts_into_the_snapshot(tmp_path: Path) -> None:
    _run(tmp_path, ["a"])
    rv = _run(tmp_path, ["b"])
    lines = (tmp_path / JOURNAL).read_bytes().splitlines()
    assert len(lines) == 1
    table = _load(tmp_path)
    assert table.rv == rv and len(_configmaps(table)) == 2


def test_concurrent_writers_share_fsyncs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    syncs: list[int] = []
    original = Journal._write

    def counting(self: Journal, data: bytes) -> None:
        syncs.append(data.count(b"\n"))
        original(self, data)

    monkeypatch.setattr(Journal, "_write", counting)
    _run(tmp_path, [f"c{i}" for i in range(100)])
    assert sum(syncs) >= 100 and len(syncs) < 100


def test_corruption_before_the_end_is_an_error(tmp_path: Path) -> None:
    _run(tmp_path, ["a"])
    (tmp_path / JOURNAL).write_bytes(b"garbage\n" + (tmp_path / JOURNAL).read_bytes())
    with pytest.raises(JournalCorruptError):
        _load(tmp_path)


def test_a_write_is_acknowledged_only_once_the_journal_holds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The writer thread's fdatasync comes before the acknowledgement: `flushed` waits while
    the write is held back, and once it returns the journal on disk holds the change."""
    gate = threading.Event()
    original = Journal._write

    def held(self: Journal, data: bytes) -> None:
        gate.wait(10)
        original(self, data)

    async def body() -> tuple[bool, bytes]:
        core = make_core(ManualReactor(), data_dir=tmp_path)
        await core.flushed()
        monkeypatch.setattr(Journal, "_write", held)
        core.store.create(CONFIGMAPS, "default", {"metadata": {"name": "held"}})
        waiting = asyncio.ensure_future(core.flushed())
        await asyncio.sleep(0.2)
        early = waiting.done()
        gate.set()
        await waiting
        on_disk = (tmp_path / JOURNAL).read_bytes()
        await core.close()
        return early, on_disk

    early, on_disk = asyncio.run(body())
    assert not early
    assert b'"name":"held"' in on_disk


def test_a_failed_write_is_never_acknowledged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    def failing(self: Journal, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    async def body() -> list[str]:
        core = make_core(ManualReactor(), data_dir=tmp_path)
        await core.flushed()
        monkeypatch.setattr(Journal, "_write", failing)
        said = []
        for name in ("first", "second"):
            core.store.create(CONFIGMAPS, "default", {"metadata": {"name": name}})
            try:
                await core.flushed()
            except OSError as exc:
                said.append(exc.strerror)
        monkeypatch.undo()
        await core.close()
        return said

    assert asyncio.run(body()) == ["No space left on device"] * 2
