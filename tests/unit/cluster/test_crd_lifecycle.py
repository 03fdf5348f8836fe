"""A CRD's life on a store driven by hand, as apiextensions-apiserver's establishing and
finalizing controllers run it: its type served as soon as it is stored; on delete the CRD
marked Terminating, every object of its type deleted, and only once none is left (a
finalizer on one holds them all) its clean-up finalizer dropped, the CRD gone and the type
withdrawn."""

from __future__ import annotations

from typing import Any

import pytest

from engine.cluster.apiserver.core import Core
from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.registry import builtins as kinds
from engine.cluster.apiserver.registry.crds import CLEANUP_FINALIZER
from engine.cluster.apiserver.registry.deletion import DeleteOptions, delete
from engine.cluster.apiserver.registry.resources import ResourceType
from tests.unit.cluster.store_support import ManualReactor, make_core, namespace

NAME = "gadgets.example.com"
CRD = {"metadata": {"name": NAME}, "spec": {
    "group": "example.com", "scope": "Namespaced",
    "names": {"plural": "gadgets", "kind": "Gadget"},
    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}],
}}


@pytest.fixture
def core(reactor: ManualReactor) -> Core:
    made = make_core(reactor)
    namespace(made, "team")
    made.store.create(kinds.CRDS, "", CRD)
    reactor.run()
    return made


def gadgets(core: Core) -> ResourceType | None:
    return core.store.registry.lookup("example.com", "v1", "gadgets")


def gadget(core: Core, name: str, **metadata: Any) -> None:
    rt = gadgets(core)
    assert rt is not None
    core.store.create(rt, "team", {"apiVersion": "example.com/v1", "kind": "Gadget",
                                   "metadata": {"name": name, **metadata}})


def crd(core: Core) -> dict[str, Any] | None:
    entry = core.store.table.get(kinds.CRDS.key, "", NAME)
    return None if entry is None else entry.obj


def names(core: Core) -> list[str]:
    rt = gadgets(core)
    assert rt is not None
    return sorted(name for _, name in core.store.table.bucket(rt.key).entries)


def test_a_stored_crd_is_served_at_once_with_its_clean_up_finalizer(core: Core) -> None:
    assert gadgets(core) is not None
    stored = crd(core)
    assert stored is not None and CLEANUP_FINALIZER in stored["metadata"]["finalizers"]


def test_deleting_the_crd_deletes_its_objects_then_the_crd_and_its_type(
    core: Core, reactor: ManualReactor
) -> None:
    gadget(core, "a")
    gadget(core, "b")
    delete(core.store, kinds.CRDS, "", NAME, DeleteOptions())
    reactor.run()
    assert crd(core) is None
    assert gadgets(core) is None


def test_an_object_held_by_a_finalizer_holds_the_crd_terminating(
    core: Core, reactor: ManualReactor
) -> None:
    gadget(core, "held", finalizers=["example.com/keep"])
    gadget(core, "free")
    delete(core.store, kinds.CRDS, "", NAME, DeleteOptions())
    reactor.run()
    stored = crd(core)
    assert stored is not None
    terminating = [c for c in stored["status"]["conditions"] if c["type"] == "Terminating"]
    assert [(c["status"], c["reason"], c["message"]) for c in terminating] == [(
        "True", "InstanceDeletionInProgress",
        "CustomResourceDefinition marked for deletion; instance deletion in progress")]
    assert names(core) == ["held"]
    rt = gadgets(core)
    assert rt is not None
    held = core.store.get(rt, "team", "held").obj
    assert held["metadata"].get("deletionTimestamp")
    core.store.update(rt, "team", "held", {**held, "metadata": {**held["metadata"],
                                                                "finalizers": []}})
    reactor.run()
    assert crd(core) is None and gadgets(core) is None


def test_a_terminating_crd_is_marked_once(core: Core, reactor: ManualReactor) -> None:
    gadget(core, "held", finalizers=["example.com/keep"])
    gadget(core, "other", finalizers=["example.com/keep"])
    delete(core.store, kinds.CRDS, "", NAME, DeleteOptions())
    reactor.run()
    rt = gadgets(core)
    assert rt is not None
    other = core.store.get(rt, "team", "other").obj
    core.store.update(rt, "team", "other", {**other, "metadata": {**other["metadata"],
                                                                  "finalizers": []}})
    reactor.run()
    stored = crd(core)
    assert stored is not None
    assert [c["type"] for c in stored["status"]["conditions"]].count("Terminating") == 1


def test_a_crd_without_its_type_is_not_found_after(core: Core, reactor: ManualReactor) -> None:
    gadget(core, "a")
    rt = gadgets(core)
    assert rt is not None
    delete(core.store, kinds.CRDS, "", NAME, DeleteOptions())
    reactor.run()
    with pytest.raises(ApiError):
        core.store.get(rt, "team", "a")
