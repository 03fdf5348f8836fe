"""Compacting the journal while writes keep coming loses nothing and keeps the dir small."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.cluster.apiserver.admission.service_account_admission import ROOT_CA_CONFIGMAP
from engine.cluster.apiserver.registry.builtins import CONFIGMAPS
from engine.cluster.apiserver.storage.objects import ObjectTable
from engine.cluster.apiserver.storage.persistence import JOURNAL, SNAPSHOT, Journal
from tests.unit.cluster.store_support import ManualReactor, make_core


def _configmaps(table: ObjectTable) -> dict[str, bytes]:
    return {name: entry.raw() for (_, name), entry in table.bucket(CONFIGMAPS.key).entries.items()
            if name != ROOT_CA_CONFIGMAP}


def _load(directory: Path) -> ObjectTable:
    table = ObjectTable()
    Journal(directory).load(table)
    return table


def test_writes_during_a_compaction_all_survive_and_the_journal_shrinks(tmp_path: Path) -> None:
    async def body() -> tuple[dict[str, bytes], int, int, int]:
        core = make_core(ManualReactor(), data_dir=tmp_path)
        assert core.journal is not None
        for index in range(200):
            core.store.create(CONFIGMAPS, "default", {"metadata": {"name": f"old-{index}"},
                                                      "data": {"k": "v" * 200}})
        for index in range(150):
            core.store.table.remove(CONFIGMAPS.key, "default", f"old-{index}")
        await core.flushed()
        before = (tmp_path / JOURNAL).stat().st_size
        compaction = asyncio.ensure_future(core.journal.compact_while_serving(core.store.table))
        for index in range(20):  # these land while the compaction runs, or after it
            core.store.create(CONFIGMAPS, "default", {"metadata": {"name": f"new-{index}"}})
            await asyncio.sleep(0)
        compacted = await compaction
        await core.flushed()
        after = (tmp_path / JOURNAL).stat().st_size
        state = _configmaps(core.store.table)
        # No close: the process could die now, and the files alone must hold it all.
        shutil.copytree(tmp_path, tmp_path.parent / "crashed")
        await core.close()
        return state, before, compacted, after

    state, before, compacted, after = asyncio.run(body())
    # The size the compaction found: what was flushed, and perhaps the first new line, which
    # the journal's writer thread may have written before the compaction looked.
    assert before <= compacted < before + 1_000 and before > 0
    assert after < before / 10
    assert _configmaps(_load(tmp_path.parent / "crashed")) == state
    assert len(state) == 70


def test_an_empty_journal_is_left_alone(tmp_path: Path) -> None:
    async def body() -> int:
        core = make_core(ManualReactor(), data_dir=tmp_path)
        assert core.journal is not None
        await core.flushed()
        await core.journal.compact_while_serving(core.store.table)  # the start-up's writes
        snapshot = (tmp_path / SNAPSHOT).stat().st_mtime_ns
        compacted = await core.journal.compact_while_serving(core.store.table)
        assert (tmp_path / SNAPSHOT).stat().st_mtime_ns == snapshot
        await core.close()
        return compacted

    assert asyncio.run(body()) == 0


steps = st.lists(st.one_of(
    st.tuples(st.just("put"), st.integers(0, 9)),
    st.tuples(st.just("delete"), st.integers(0, 9)),
    st.tuples(st.just("compact"), st.just(0)),
    st.tuples(st.just("yield"), st.just(0)),
), max_size=40)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps)
def test_any_interleaving_of_writes_and_compactions_loads_back_as_it_was(
    plan: list[tuple[str, int]],
) -> None:
    with tempfile.TemporaryDirectory() as temporary:
        directory = Path(temporary)

        async def body() -> dict[str, bytes]:
            core = make_core(ManualReactor(), data_dir=directory)
            assert core.journal is not None
            running: list[asyncio.Future[int]] = []
            for step, index in plan:
                name = f"cm-{index}"
                exists = core.store.table.get(CONFIGMAPS.key, "default", name) is not None
                if step == "put" and not exists:
                    core.store.create(CONFIGMAPS, "default", {"metadata": {"name": name}})
                elif step == "put":
                    core.store.table.remove(CONFIGMAPS.key, "default", name)
                    core.store.create(CONFIGMAPS, "default", {"metadata": {"name": name},
                                                              "data": {"again": "yes"}})
                elif step == "delete" and exists:
                    core.store.table.remove(CONFIGMAPS.key, "default", name)
                elif step == "compact":
                    running.append(asyncio.ensure_future(
                        core.journal.compact_while_serving(core.store.table)))
                else:
                    await asyncio.sleep(0)
            await asyncio.gather(*running)
            await core.flushed()
            state = _configmaps(core.store.table)
            await core.close()
            return state

        written = asyncio.run(body())
        assert _configmaps(_load(directory)) == written
