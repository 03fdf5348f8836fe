"""What the store keeps of the managedFields lists it parsed: the lists of the objects it
holds, not those its writes replaced (which would push the live ones out of the bounded memo
and have them parsed again on their next write); and what it encodes again: only a manager
whose fields changed."""

from __future__ import annotations

from typing import Any

import pytest

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


def test_a_write_of_fields_its_manager_owns_encodes_no_fieldsv1_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A node writing a pod's status again owns the same fields: its FieldsV1 is written
    back as it was; a manager that gains a field has its set encoded anew."""
    store = make_core(ManualReactor()).store
    store.create(CONFIGMAPS, "default", {"metadata": {"name": "c"}, "data": {"a": "0"}},
                 field_manager="one")
    encoded: list[Any] = []
    real = managed_fields.fields_v1
    monkeypatch.setattr(managed_fields, "fields_v1", lambda fields: encoded.append(fields)
                        or real(fields))
    for value in ("1", "2", "3"):
        store.patch(CONFIGMAPS, "default", "c", "application/merge-patch+json",
                    b'{"data": {"a": "%s"}}' % value.encode(), field_manager="one")
    assert encoded == []
    written = store.patch(CONFIGMAPS, "default", "c", "application/merge-patch+json",
                          b'{"data": {"b": "1"}}', field_manager="one")
    assert len(encoded) == 1
    (entry,) = written.entry.obj["metadata"]["managedFields"]
    assert entry["fieldsV1"] == {"f:data": {".": {}, "f:a": {}, "f:b": {}}}
