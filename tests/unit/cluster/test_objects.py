"""The object table's entries: each keeps its JSON encoding, and no more memory than it."""

from __future__ import annotations

import tracemalloc

import orjson

from engine.cluster.apiserver.storage.objects import Entry


def test_an_entry_keeps_its_json_at_its_own_size() -> None:
    """orjson's output buffer is larger than the JSON (4 KiB for this event); the copy an
    entry keeps for every later answer and watch event is not."""
    entry = Entry({"metadata": {"name": "e"}, "message": "m" * 700})
    tracemalloc.start()
    try:
        raw = entry.raw()
        kept = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert orjson.loads(raw) == entry.obj
    assert entry.raw() is raw
    assert kept < len(raw) + 200
