"""The garbage collector and deletion rules, stepped with a manual reactor and fake clock."""

from __future__ import annotations

from typing import Any

from engine.cluster.apiserver.admission.service_account_admission import ROOT_CA_CONFIGMAP
from engine.cluster.apiserver.core import Core
from engine.cluster.apiserver.registry.builtins import CONFIGMAPS, PODS
from engine.cluster.apiserver.registry.deletion import DeleteOptions, delete
from tests.unit.cluster.store_support import ManualReactor


def _cm(core: Core, name: str, *owners: dict[str, Any], **meta: Any) -> dict[str, Any]:
    refs = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": o["metadata"]["name"],
            "uid": o["metadata"]["uid"],
            **({"blockOwnerDeletion": True} if meta.pop("block", False) else {}),
        }
        for o in owners
    ]
    body = {"metadata": {"name": name, **({"ownerReferences": refs} if refs else {}), **meta}}
    return core.store.create(CONFIGMAPS, "default", body).entry.obj


def _names(core: Core) -> set[str]:
    """The test's ConfigMaps (not the `kube-root-ca.crt` every namespace has)."""
    return {name for _, name in core.store.table.bucket(CONFIGMAPS.key).entries
            if name != ROOT_CA_CONFIGMAP}


def test_background_cascade_runs_after_the_delete(core: Core, reactor: ManualReactor) -> None:
    owner = _cm(core, "owner")
    child = _cm(core, "child", owner)
    _cm(core, "grandchild", child)
    delete(core.store, CONFIGMAPS, "default", "owner", DeleteOptions())
    assert _names(core) == {"child", "grandchild"}
    reactor.run()
    assert _names(core) == set()


def test_foreground_waits_for_blocking_dependents(core: Core, reactor: ManualReactor) -> None:
    owner = _cm(core, "owner")
    _cm(core, "blocker", owner, block=True, finalizers=["x.io/hold"])
    _cm(core, "free", owner)
    delete(core.store, CONFIGMAPS, "default", "owner", DeleteOptions(propagation="Foreground"))
    reactor.run()
    assert _names(core) == {"owner", "blocker"}
    blocker = core.store.table.get(CONFIGMAPS.key, "default", "blocker")
    assert blocker is not None and blocker.obj["metadata"]["deletionTimestamp"]
    core.store.patch(
        CONFIGMAPS,
        "default",
        "blocker",
        "application/merge-patch+json",
        b'{"metadata":{"finalizers":null}}',
    )
    reactor.run()
    assert _names(core) == set()


def test_orphan_removes_the_references(core: Core, reactor: ManualReactor) -> None:
    owner = _cm(core, "owner")
    _cm(core, "child", owner)
    deleting = delete(
        core.store, CONFIGMAPS, "default", "owner", DeleteOptions(propagation="Orphan")
    )
    assert deleting.obj["metadata"]["finalizers"] == ["orphan"]
    reactor.run()
    child = core.store.table.get(CONFIGMAPS.key, "default", "child")
    assert _names(core) == {"child"}
    assert child is not None and "ownerReferences" not in child.obj["metadata"]


def test_graceful_pod_is_removed_when_the_grace_period_ends(
    core: Core, reactor: ManualReactor
) -> None:
    body = {
        "metadata": {"name": "p"},
        "spec": {
            "nodeName": "n",
            "terminationGracePeriodSeconds": 10,
            "containers": [{"name": "c", "image": "i"}],
        },
    }
    core.store.create(PODS, "default", body)
    deleting = delete(core.store, PODS, "default", "p", DeleteOptions())
    assert deleting.obj["metadata"]["deletionGracePeriodSeconds"] == 10
    reactor.advance(9)
    assert core.store.table.get(PODS.key, "default", "p") is not None
    reactor.advance(2)
    assert core.store.table.get(PODS.key, "default", "p") is None


def test_shorter_grace_period_wins(core: Core, reactor: ManualReactor) -> None:
    body = {
        "metadata": {"name": "p"},
        "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "i"}]},
    }
    core.store.create(PODS, "default", body)
    delete(core.store, PODS, "default", "p", DeleteOptions())
    delete(core.store, PODS, "default", "p", DeleteOptions(grace_period=0))
    assert core.store.table.get(PODS.key, "default", "p") is None
