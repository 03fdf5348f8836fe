"""FieldsV1 documents are shared between stored objects: equal subtrees are one dict, so a
server holding thousands of pods of one template keeps their managed fields about once,
written and read back exactly as before (the memory figures in docs/performance.md)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from engine.cluster.apiserver.core import open_core
from engine.cluster.apiserver.patch.field_paths import (
    _NODES,
    FieldSet,
    field,
    fields_v1,
    key_element,
    shared_fields_v1,
)
from engine.cluster.apiserver.registry.builtins import PODS
from tests.unit.cluster.store_support import ManualReactor, make_core


def _pod(name: str, volume: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "train"}},
            "spec": {"restartPolicy": "Never",
                     "containers": [{"name": "main", "image": "busybox:1",
                                     "env": [{"name": "RANK", "value": name[-1]}]}],
                     "volumes": [{"name": volume, "emptyDir": {}}]}}


def _fields(obj: dict[str, Any]) -> dict[str, Any]:
    document: dict[str, Any] = obj["metadata"]["managedFields"][0]["fieldsV1"]
    return document


def test_pods_of_one_template_share_the_parts_of_their_fields_that_are_equal() -> None:
    store = open_core(ManualReactor()).store
    one = store.create(PODS, "default", _pod("w-0", "scratch-a"), field_manager="me").entry.obj
    two = store.create(PODS, "default", _pod("w-1", "scratch-b"), field_manager="me").entry.obj
    # The RANK values differ but the fields set is equal: metadata's node is one dict.
    assert _fields(one)["f:metadata"] is _fields(two)["f:metadata"]
    assert (_fields(one)["f:spec"]["f:containers"]
            is _fields(two)["f:spec"]["f:containers"])
    # The volume's name is part of its key: those nodes stay apart, and so does spec.
    assert _fields(one)["f:spec"] is not _fields(two)["f:spec"]
    assert '"k:{\\"name\\":\\"scratch-b\\"}"' in orjson.dumps(_fields(two)).decode()


def test_a_restarted_server_shares_the_fields_it_reads_from_disk(tmp_path: Path) -> None:
    async def write() -> bytes:
        core = make_core(ManualReactor(), data_dir=tmp_path)
        for index in range(2):
            core.store.create(PODS, "default", _pod(f"w-{index}", "scratch"), field_manager="me")
        await core.flushed()
        await core.close()
        return orjson.dumps(core.store.get(PODS, "default", "w-1").obj)

    async def read() -> list[dict[str, Any]]:
        core = make_core(ManualReactor(), data_dir=tmp_path)
        await core.close()
        return [core.store.get(PODS, "default", name).obj for name in ("w-0", "w-1")]

    written = asyncio.run(write())
    # A fresh table of shared nodes, as in a new process.
    _NODES.clear()
    one, two = asyncio.run(read())
    # Each pod's service account volume has a name of its own; the rest is one.
    assert _fields(one)["f:metadata"] is _fields(two)["f:metadata"]
    assert _fields(one)["f:spec"]["f:containers"] is _fields(two)["f:spec"]["f:containers"]
    assert orjson.dumps(two) == written


def test_a_set_written_twice_is_one_document() -> None:
    port = key_element({"containerPort": 80, "protocol": "TCP"})
    paths = [(field("spec"), field("ports"), port), (field("spec"), field("ports"), port,
                                                     field("name"))]
    assert fields_v1(FieldSet.of(*paths)) is fields_v1(FieldSet.of(*paths))


def test_a_document_that_is_not_fields_v1_is_kept_as_it_was() -> None:
    odd: dict[str, Any] = {"f:spec": {"f:replicas": 3}}
    assert shared_fields_v1(odd) is odd


_DOCUMENTS = st.recursive(
    st.just({}),
    lambda inner: st.dictionaries(st.sampled_from([".", "f:a", "f:b", "k:{\"n\":1}", "v:2"]),
                                  inner, max_size=4),
    max_leaves=20,
)


@given(_DOCUMENTS)
def test_sharing_keeps_every_key_value_and_order(document: dict[str, Any]) -> None:
    shared = shared_fields_v1(document)
    assert orjson.dumps(shared) == orjson.dumps(document)
    assert shared_fields_v1(orjson.loads(orjson.dumps(document))) is shared
