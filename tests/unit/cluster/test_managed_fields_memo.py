"""What the store keeps of the managedFields lists it parsed: the lists of the objects it
holds, not those its writes replaced (which would push the live ones out of the bounded memo
and have them parsed again on their next write)."""

from __future__ import annotations

from engine.cluster.apiserver.patch import managed_fields
from engine.cluster.apiserver.registry.builtins import CONFIGMAPS
from engine.cluster.apiserver.registry.deletion import DeleteOptions, delete
from tests.unit.cluster.store_support import ManualReactor, make_core


def _remembered(entries: object) -> bool:
    known = managed_fields._KNOWN.get(id(entries))
    return known is not None and known[0] is entries


def test_a_write_forgets_the_list_it_replaced_and_a_delete_forgets_the_last() -> None:
    store = make_core(ManualReactor()).store
    lists = [store.create(CONFIGMAPS, "default", {"metadata": {"name": "c"}, "data": {"n": "0"}},
                          field_manager="one").entry.obj["metadata"]["managedFields"]]
    for n in range(1, 6):
        body = b'{"data": {"n": "%d"}}' % n
        written = store.patch(CONFIGMAPS, "default", "c", "application/merge-patch+json", body,
                              field_manager="one" if n % 2 else "two")
        lists.append(written.entry.obj["metadata"]["managedFields"])
    assert [_remembered(entries) for entries in lists] == [False] * 5 + [True]
    unchanged = store.patch(CONFIGMAPS, "default", "c", "application/merge-patch+json",
                            b'{"data": {"n": "5"}}', field_manager="one")
    assert unchanged.entry.obj["metadata"]["managedFields"] is lists[-1]
    assert _remembered(lists[-1])
    delete(store, CONFIGMAPS, "default", "c", DeleteOptions())
    assert not _remembered(lists[-1])
