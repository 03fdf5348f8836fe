"""The etcd key a failed precondition names, and the 409 itself, as kube-apiserver words them.

Controllers match `StorageError: invalid object, Code: 4` to tell that the object they
wrote to was deleted and made again under them, so the text is part of the API.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine.cluster.apiserver.core import Core
from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.registry import builtins
from engine.cluster.apiserver.registry.deletion import DeleteOptions, delete
from engine.cluster.apiserver.registry.resources import ResourceType
from engine.cluster.apiserver.registry.storage_keys import storage_key

WIDGETS = ResourceType("example.com", "v1", "Widget", "widgets", "widget", namespaced=True,
                       schema={"type": "object"}, strategic_merge=False)


@pytest.mark.parametrize(("rt", "key"), [
    (builtins.PODS, "/registry/pods/ns/x"),
    (builtins.JOBS, "/registry/jobs/ns/x"),
    (builtins.LEASES, "/registry/leases/ns/x"),
    (builtins.SERVICES, "/registry/services/specs/ns/x"),
    (builtins.REPLICATION_CONTROLLERS, "/registry/controllers/ns/x"),
    (builtins.NODES, "/registry/minions/x"),
    (builtins.NAMESPACES, "/registry/namespaces/x"),
    (builtins.CLUSTER_ROLES, "/registry/clusterroles/x"),
    (builtins.CRDS, "/registry/apiextensions.k8s.io/customresourcedefinitions/x"),
    (WIDGETS, "/registry/example.com/widgets/ns/x"),
], ids=lambda value: value.plural if isinstance(value, ResourceType) else "")
def test_the_key_follows_kube_apiservers_storage_layout(rt: ResourceType, key: str) -> None:
    assert storage_key(rt, "ns", "x") == key


def _refused(call: Any) -> dict[str, Any]:
    with pytest.raises(ApiError) as error:
        call()
    return error.value.to_status()


@pytest.mark.parametrize("field", ["UID", "ResourceVersion"])
def test_a_delete_whose_precondition_fails_is_a_storage_conflict(core: Core, field: str) -> None:
    body = {"metadata": {"name": "c"}, "data": {"a": "b"}}
    created = core.store.create(builtins.CONFIGMAPS, "default", body).entry.obj["metadata"]
    actual = created["uid"] if field == "UID" else created["resourceVersion"]
    options = DeleteOptions(uid="other") if field == "UID" else DeleteOptions(
        resource_version="1")
    wanted = "other" if field == "UID" else "1"
    assert _refused(lambda: delete(core.store, builtins.CONFIGMAPS, "default", "c", options)) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'Operation cannot be fulfilled on configmaps "c": StorageError: invalid '
                   "object, Code: 4, Key: /registry/configmaps/default/c, ResourceVersion: 0, "
                   f"AdditionalErrorMsg: Precondition failed: {field} in precondition: {wanted}, "
                   f"{field} in object meta: {actual}",
        "reason": "Conflict",
        "details": {"name": "c", "kind": "configmaps"},
        "code": 409,
    }
    assert core.store.table.get(builtins.CONFIGMAPS.key, "default", "c") is not None
