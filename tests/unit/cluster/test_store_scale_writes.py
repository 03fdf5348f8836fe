"""Writes through /scale in the store, without HTTP: the stored resource takes the new spec
replicas as any spec change (validation, generation, a new resourceVersion), keeps the
managedFields the scale change worked out, answers the Scale's warnings with the write's, and
a dry run stores nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from engine.cluster.apiserver.core import Core
from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.registry import builtins as kinds
from engine.cluster.apiserver.registry.resources import ResourceType
from engine.cluster.apiserver.registry.scale import ScaleChange, ScaleWriter, updated
from engine.cluster.apiserver.storage.objects import Obj
from tests.unit.cluster.store_support import ManualReactor, make_core

CRD = {
    "metadata": {"name": "gadgets.example.com"},
    "spec": {
        "group": "example.com", "scope": "Namespaced",
        "names": {"plural": "gadgets", "kind": "Gadget"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "subresources": {"status": {}, "scale": {
                "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
            }},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "replicas": {"type": "integer", "maximum": 10},
                    "color": {"type": "string"},
                }},
                "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
            }}},
        }],
    },
}


@pytest.fixture
def core() -> Core:
    return make_core(ManualReactor())


@pytest.fixture
def gadgets(core: Core) -> ResourceType:
    core.store.create(kinds.CRDS, "", CRD)
    rt = core.registry.lookup("example.com", "v1", "gadgets")
    assert rt is not None
    body = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"},
            "spec": {"replicas": 1, "color": "red"}}
    core.store.create(rt, "default", body, field_manager="creator")
    return rt


def _to(rt: ResourceType, replicas: int, **extra: Any) -> Callable[[Obj], ScaleChange]:
    """The change a PUT of a Scale with `replicas` makes (under fieldValidation=Warn)."""

    def change(old: Obj) -> ScaleChange:
        return updated(rt, old, {"spec": {"replicas": replicas}, **extra}, ScaleWriter("hpa"),
                       field_validation="Warn", uid_precondition=False)

    return change


def test_a_scale_write_stores_the_replicas_as_a_spec_change(
    core: Core, gadgets: ResourceType
) -> None:
    before = core.store.get(gadgets, "default", "g").obj
    written = core.store.write_scale(gadgets, "default", "g", _to(gadgets, 3), manager="hpa")
    stored = core.store.table.get(gadgets.key, "default", "g")
    assert stored is written.entry
    obj = written.entry.obj
    assert obj["spec"] == {"replicas": 3, "color": "red"}
    assert obj["metadata"]["generation"] == before["metadata"]["generation"] + 1
    assert obj["metadata"]["resourceVersion"] == str(core.store.table.rv)
    assert [(e["manager"], e.get("subresource")) for e in obj["metadata"]["managedFields"]] == [
        ("hpa", "scale"), ("creator", None)
    ]
    assert obj["metadata"]["managedFields"][0]["fieldsV1"] == {
        "f:spec": {"f:replicas": {}}
    }
    assert written.warnings == []


def test_a_scale_write_answers_the_scale_warnings(core: Core, gadgets: ResourceType) -> None:
    change = _to(gadgets, 2, extra=1)
    written = core.store.write_scale(gadgets, "default", "g", change, manager="hpa")
    assert written.warnings == ['unknown field "extra"']
    assert written.entry.obj["spec"]["replicas"] == 2


def test_a_scale_write_is_validated_as_the_resource(core: Core, gadgets: ResourceType) -> None:
    with pytest.raises(ApiError) as error:
        core.store.write_scale(gadgets, "default", "g", _to(gadgets, 11), manager="hpa")
    assert error.value.code == 422
    assert error.value.message == (
        'Gadget.example.com "g" is invalid: spec.replicas: Invalid value: 11: '
        "spec.replicas in body should be less than or equal to 10"
    )
    assert core.store.get(gadgets, "default", "g").obj["spec"]["replicas"] == 1


def test_a_dry_run_scale_write_stores_nothing(core: Core, gadgets: ResourceType) -> None:
    before = core.store.get(gadgets, "default", "g")
    rv = core.store.table.rv
    written = core.store.write_scale(
        gadgets, "default", "g", _to(gadgets, 4), manager="hpa", dry_run=True
    )
    assert written.entry.obj["spec"]["replicas"] == 4
    assert core.store.table.rv == rv
    assert core.store.get(gadgets, "default", "g") is before


def test_the_same_replicas_are_no_write(core: Core, gadgets: ResourceType) -> None:
    before = core.store.get(gadgets, "default", "g")
    rv = core.store.table.rv
    written = core.store.write_scale(gadgets, "default", "g", _to(gadgets, 1), manager="hpa")
    assert written.entry is before and core.store.table.rv == rv


def test_scaling_a_missing_resource_is_not_found(core: Core, gadgets: ResourceType) -> None:
    with pytest.raises(ApiError) as error:
        core.store.write_scale(gadgets, "default", "nope", _to(gadgets, 2), manager="hpa")
    assert error.value.to_status()["message"] == 'gadgets.example.com "nope" not found'
    assert error.value.to_status()["details"] == {
        "name": "nope", "group": "example.com", "kind": "gadgets"
    }


def _deployment(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {
        "replicas": 1, "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}},
                     "spec": {"containers": [{"name": "c", "image": "i"}]}},
    }}


def test_a_deployment_scales_through_the_store(core: Core) -> None:
    deployments = kinds.DEPLOYMENTS
    created = core.store.create(deployments, "default", _deployment("d")).entry.obj
    change = _to(deployments, 5)
    written = core.store.write_scale(deployments, "default", "d", change, manager="hpa")
    obj = written.entry.obj
    assert obj["spec"] == {**created["spec"], "replicas": 5}
    assert obj["metadata"]["generation"] == created["metadata"]["generation"] + 1
    assert written.warnings == []


def test_pod_security_does_not_look_at_a_scale_write(core: Core) -> None:
    """The PodSecurity plugin warns about a pod controller's template on its own writes and
    lets subresources by (upstream's ValidatePodController short-circuits on them)."""
    labels = {"pod-security.kubernetes.io/warn": "restricted"}
    core.store.create(kinds.NAMESPACES, "", {"metadata": {"name": "strict", "labels": labels}})
    deployments = kinds.DEPLOYMENTS
    created = core.store.create(deployments, "strict", _deployment("d"))
    assert created.warnings  # the template would violate "restricted"
    written = core.store.write_scale(
        deployments, "strict", "d", _to(deployments, 2), manager="hpa"
    )
    assert written.entry.obj["spec"]["replicas"] == 2
    assert written.warnings == []
