"""Deletion: finalizers, propagation policies, garbage collection, pods, namespaces."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from tests.integration.apiserver.conftest import pod, status_of
from tests.polling import eventually


def _owned_cm(core: client.CoreV1Api, name: str, owner: Any, *, block: bool = False) -> None:
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": owner.metadata.name,
        "uid": owner.metadata.uid,
        "blockOwnerDeletion": block,
    }
    body = {"metadata": {"name": name, "ownerReferences": [ref]}}
    core.create_namespaced_config_map("default", body)


def _exists(core: client.CoreV1Api, name: str) -> bool:
    try:
        core.read_namespaced_config_map(name, "default")
    except client.ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


def test_finalizers_hold_the_object_until_removed(core: client.CoreV1Api) -> None:
    body = {"metadata": {"name": "c", "finalizers": ["example.com/hold"]}}
    core.create_namespaced_config_map("default", body)
    core.delete_namespaced_config_map("c", "default")
    held = core.read_namespaced_config_map("c", "default")
    assert held.metadata.deletion_timestamp is not None
    assert held.metadata.deletion_grace_period_seconds == 0
    with pytest.raises(client.ApiException) as error:
        core.patch_namespaced_config_map(
            "c", "default", {"metadata": {"finalizers": ["example.com/hold", "example.com/more"]}}
        )
    assert error.value.status == 422
    assert (
        "no new finalizers can be added if the object is being deleted"
        in status_of(error.value)["message"]
    )
    core.patch_namespaced_config_map("c", "default", {"metadata": {"finalizers": None}})
    assert not _exists(core, "c")


def test_preconditions(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    wrong = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="other"))
    with pytest.raises(client.ApiException) as error:
        core.delete_namespaced_config_map("c", "default", body=wrong)
    assert error.value.status == 409
    stale = client.V1DeleteOptions(preconditions=client.V1Preconditions(resource_version="1"))
    with pytest.raises(client.ApiException):
        core.delete_namespaced_config_map("c", "default", body=stale)
    right = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=created.metadata.uid))
    core.delete_namespaced_config_map("c", "default", body=right)
    assert not _exists(core, "c")


def test_background_deletion_collects_dependents(core: client.CoreV1Api) -> None:
    owner = core.create_namespaced_config_map("default", {"metadata": {"name": "owner"}})
    _owned_cm(core, "child", owner)
    core.delete_namespaced_config_map("owner", "default")
    assert not _exists(core, "owner")
    eventually(lambda: not _exists(core, "child"))


def test_dependent_with_a_live_owner_survives(core: client.CoreV1Api) -> None:
    first = core.create_namespaced_config_map("default", {"metadata": {"name": "first"}})
    second = core.create_namespaced_config_map("default", {"metadata": {"name": "second"}})
    refs = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": o.metadata.name, "uid": o.metadata.uid}
        for o in (first, second)
    ]
    core.create_namespaced_config_map(
        "default", {"metadata": {"name": "child", "ownerReferences": refs}}
    )
    core.delete_namespaced_config_map("first", "default")
    eventually(
        lambda: (
            len(core.read_namespaced_config_map("child", "default").metadata.owner_references) == 1
        )
    )
    assert _exists(core, "child")


def test_foreground_deletion_waits_for_blocking_dependents(core: client.CoreV1Api) -> None:
    owner = core.create_namespaced_config_map("default", {"metadata": {"name": "owner"}})
    body = {"metadata": {"name": "child", "finalizers": ["example.com/hold"]}}
    core.create_namespaced_config_map("default", body)
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "owner",
        "uid": owner.metadata.uid,
        "blockOwnerDeletion": True,
    }
    core.patch_namespaced_config_map("child", "default", {"metadata": {"ownerReferences": [ref]}})
    options = client.V1DeleteOptions(propagation_policy="Foreground")
    core.delete_namespaced_config_map("owner", "default", body=options)
    assert (
        "foregroundDeletion"
        in core.read_namespaced_config_map("owner", "default").metadata.finalizers
    )
    eventually(
        lambda: core.read_namespaced_config_map("child", "default").metadata.deletion_timestamp
    )
    assert _exists(core, "owner")
    core.patch_namespaced_config_map("child", "default", {"metadata": {"finalizers": None}})
    eventually(lambda: not _exists(core, "owner"))


def test_orphan_deletion_keeps_dependents_without_the_reference(core: client.CoreV1Api) -> None:
    owner = core.create_namespaced_config_map("default", {"metadata": {"name": "owner"}})
    _owned_cm(core, "child", owner)
    options = client.V1DeleteOptions(propagation_policy="Orphan")
    core.delete_namespaced_config_map("owner", "default", body=options)
    eventually(lambda: not _exists(core, "owner"))
    assert core.read_namespaced_config_map("child", "default").metadata.owner_references is None


def test_dependent_created_for_a_missing_owner_is_collected(core: client.CoreV1Api) -> None:
    ghost = client.V1ObjectMeta(name="ghost", uid="00000000-0000-0000-0000-000000000000")
    _owned_cm(core, "child", client.V1ConfigMap(metadata=ghost))
    eventually(lambda: not _exists(core, "child"))


def test_bound_pod_is_deleted_gracefully(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod("a", nodeName="node-1"))
    deleting = core.delete_namespaced_pod("a", "default")
    assert deleting.metadata.deletion_grace_period_seconds == 30
    assert core.read_namespaced_pod("a", "default").metadata.deletion_timestamp is not None
    core.delete_namespaced_pod("a", "default", grace_period_seconds=0)
    with pytest.raises(client.ApiException) as error:
        core.read_namespaced_pod("a", "default")
    assert error.value.status == 404


def test_bound_pod_goes_when_its_grace_period_ends(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod(
        "default", pod("a", nodeName="node-1", terminationGracePeriodSeconds=1)
    )
    core.delete_namespaced_pod("a", "default")

    def gone() -> bool:
        try:
            core.read_namespaced_pod("a", "default")
        except client.ApiException as exc:
            return exc.status == 404
        return False

    eventually(gone, timeout=15)


def test_unbound_pod_is_deleted_at_once(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod("a"))
    core.delete_namespaced_pod("a", "default")
    assert core.list_namespaced_pod("default").items == []


def test_namespace_deletion_empties_then_removes_it(core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "doomed"}})
    core.create_namespaced_config_map(
        "doomed", {"metadata": {"name": "c", "finalizers": ["example.com/hold"]}}
    )
    core.create_namespaced_pod("doomed", pod("p"))
    core.delete_namespace("doomed")
    assert core.read_namespace("doomed").status.phase == "Terminating"
    with pytest.raises(client.ApiException) as error:
        core.create_namespaced_pod("doomed", pod("late"))
    assert error.value.status == 403
    assert "because it is being terminated" in status_of(error.value)["message"]
    eventually(lambda: core.list_namespaced_pod("doomed").items == [])
    assert core.read_namespace("doomed").status.phase == "Terminating"
    core.patch_namespaced_config_map("c", "doomed", {"metadata": {"finalizers": None}})

    def gone() -> bool:
        return "doomed" not in {ns.metadata.name for ns in core.list_namespace().items}

    eventually(gone)


def test_initial_namespaces_cannot_be_deleted(core: client.CoreV1Api) -> None:
    with pytest.raises(client.ApiException) as error:
        core.delete_namespace("default")
    assert error.value.status == 403


def test_delete_collection(core: client.CoreV1Api) -> None:
    for name, team in (("a", "x"), ("b", "y"), ("c", "x")):
        core.create_namespaced_config_map(
            "default", {"metadata": {"name": name, "labels": {"team": team}}}
        )
    core.delete_collection_namespaced_config_map("default", label_selector="team=x")
    names = [c.metadata.name for c in core.list_namespaced_config_map("default").items]
    assert names == ["b", "kube-root-ca.crt"]
