"""kubectl delete with each cascade mode, over owner references between configmaps."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Kubectl
from tests.e2e.manifests import configmap

pytestmark = pytest.mark.e2e


def _family(kubectl: Kubectl, owner: str) -> None:
    """An owner configmap and two dependents that name it in their ownerReferences."""
    kubectl.apply(configmap(owner, {"role": "owner"}))
    uid = kubectl.get_json("cm", owner)["metadata"]["uid"]
    for index in range(2):
        kubectl.apply(
            configmap(
                f"{owner}-child-{index}", {"i": str(index)}, owner={"name": owner, "uid": uid}
            )
        )


def _exists(kubectl: Kubectl, name: str) -> bool:
    return kubectl.run("get", "cm", name).returncode == 0


def _wait_gone(kubectl: Kubectl, *names: str) -> None:
    kubectl("wait", "--for=delete", "--timeout=30s", *(f"configmap/{name}" for name in names))


def test_background_deletes_the_owner_then_the_dependents(kubectl: Kubectl) -> None:
    _family(kubectl, "bg")
    out = kubectl("delete", "cm", "bg", "--cascade=background", "--timeout=30s").stdout
    assert 'configmap "bg" deleted' in out
    assert not _exists(kubectl, "bg")
    _wait_gone(kubectl, "bg-child-0", "bg-child-1")


def test_foreground_waits_for_the_dependents(kubectl: Kubectl) -> None:
    _family(kubectl, "fg")
    kubectl("delete", "cm", "fg", "--cascade=foreground", "--timeout=30s")
    _wait_gone(kubectl, "fg")
    assert not _exists(kubectl, "fg-child-0")
    assert not _exists(kubectl, "fg-child-1")


def test_orphan_keeps_the_dependents_and_drops_their_owner_reference(kubectl: Kubectl) -> None:
    _family(kubectl, "orph")
    kubectl("delete", "cm", "orph", "--cascade=orphan", "--timeout=30s")
    _wait_gone(kubectl, "orph")
    for index in range(2):
        child = kubectl.get_json("cm", f"orph-child-{index}")
        assert not child["metadata"].get("ownerReferences")


def test_delete_missing_object_fails_unless_ignored(kubectl: Kubectl) -> None:
    result = kubectl.run("delete", "cm", "never-was", "--timeout=10s")
    assert result.returncode != 0
    assert 'configmaps "never-was" not found' in result.stderr
    kubectl("delete", "cm", "never-was", "--ignore-not-found", "--timeout=10s")
