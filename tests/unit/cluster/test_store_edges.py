"""Store writes at their edges, without HTTP: a patch that drops a CustomResourceDefinition's
resourceVersion is judged by the CRD strategy (no unconditional update: 422), as a PUT
without one is, whichever patch type removes it; and a Binding that names the pod's own
namespace binds it (only another namespace than the URL's is refused)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from engine.cluster.apiserver.core import Core
from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.patch.patch_types import JSON_PATCH, MERGE
from engine.cluster.apiserver.registry import builtins as kinds
from tests.unit.cluster.test_crd_lifecycle import CRD
from tests.unit.cluster.test_crd_lifecycle import NAME as CRD_NAME


@pytest.mark.parametrize(
    ("content_type", "patch"),
    [
        (MERGE, {"metadata": {"resourceVersion": None, "labels": {"a": "1"}}}),
        (JSON_PATCH, [{"op": "remove", "path": "/metadata/resourceVersion"},
                      {"op": "add", "path": "/metadata/labels", "value": {"a": "1"}}]),
    ],
    ids=["merge patch", "json patch"],
)
def test_a_patch_that_removes_a_definitions_resource_version_is_invalid(
    core: Core, content_type: str, patch: Any
) -> None:
    """kube-apiserver's store refuses an update at resourceVersion 0 when the strategy allows
    no unconditional update; a patch is applied to the stored object and then stored as an
    update, so one that removes the resourceVersion meets the same 422."""
    stored = core.store.create(kinds.CRDS, "", CRD).entry.obj
    with pytest.raises(ApiError) as error:
        core.store.patch(kinds.CRDS, "", CRD_NAME, content_type, orjson.dumps(patch))
    assert (error.value.code, error.value.reason) == (422, "Invalid")
    assert error.value.message.startswith(
        f'CustomResourceDefinition.apiextensions.k8s.io "{CRD_NAME}" is invalid: '
        "metadata.resourceVersion"
    )
    assert [(c.field, c.message) for c in error.value.causes] == [
        ("metadata.resourceVersion", "must be specified for an update")
    ]
    assert core.store.get(kinds.CRDS, "", CRD_NAME).obj is stored


def test_a_patch_that_keeps_a_definitions_resource_version_updates_it(core: Core) -> None:
    core.store.create(kinds.CRDS, "", CRD)
    patch = orjson.dumps({"metadata": {"labels": {"a": "1"}}})
    patched = core.store.patch(kinds.CRDS, "", CRD_NAME, MERGE, patch).entry.obj
    assert patched["metadata"]["labels"] == {"a": "1"}


def test_a_binding_that_names_the_pods_own_namespace_binds_it(core: Core) -> None:
    """A scheduler's Binding carries the pod's namespace in its metadata (kube-scheduler's
    DefaultBinder sets it): the same namespace as the URL's is no mismatch."""
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    core.store.create(kinds.PODS, "default", pod)
    binding = {"apiVersion": "v1", "kind": "Binding",
               "metadata": {"name": "p", "namespace": "default"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}}
    bound = core.store.bind(kinds.PODS, "default", "p", binding, dry_run=False).obj
    assert bound["spec"]["nodeName"] == "node-1"
    assert core.store.get(kinds.PODS, "default", "p").obj["spec"]["nodeName"] == "node-1"
