"""Which job kinds the engine may govern, read from the CRDs the API server has: the
built-in kinds always, a CRD's served versions once it is Established (not before, and
not a version it stops serving), its scope, and what the engine keeps of a CRD it
watches."""

from __future__ import annotations

from typing import Any

from engine.controller.machines.served import (
    BUILT_IN_JOB_KINDS,
    project_crd,
    resource_of_crd,
    served_resources,
)
from engine.kube.resources import Resource

ESTABLISHED = {"conditions": [{"type": "NamesAccepted", "status": "True"},
                              {"type": "Established", "status": "True"}]}


def crd(*versions: tuple[str, bool, bool], scope: str = "Namespaced",
        status: dict[str, Any] | None = None, kind: str = "DemoJob") -> dict[str, Any]:
    """A CRD of group example.com with these (name, served, storage) versions."""
    return {
        "metadata": {"name": "demojobs.example.com", "resourceVersion": "7", "uid": "x",
                     "annotations": {"a": "b"}},
        "spec": {
            "group": "example.com", "scope": scope,
            "names": {"kind": kind, "plural": "demojobs", "singular": "demojob"},
            "versions": [{"name": n, "served": served, "storage": storage,
                          "schema": {"openAPIV3Schema": {"type": "object"}}}
                         for n, served, storage in versions],
        },
        "status": ESTABLISHED if status is None else status,
    }


def test_the_built_in_kinds_are_always_served() -> None:
    assert served_resources([]) == dict(BUILT_IN_JOB_KINDS)
    assert served_resources([])[("batch/v1", "Job")] == Resource("batch", "v1", "jobs", "Job")


def test_each_served_version_of_an_established_crd_is_a_resource() -> None:
    found = served_resources([crd(("v1", True, True), ("v1beta1", True, False),
                                  ("v1alpha1", False, False))])
    assert found[("example.com/v1", "DemoJob")] == Resource("example.com", "v1", "demojobs",
                                                            "DemoJob", namespaced=True)
    assert ("example.com/v1beta1", "DemoJob") in found
    assert ("example.com/v1alpha1", "DemoJob") not in found


def test_a_crd_not_yet_established_serves_nothing() -> None:
    pending = {"conditions": [{"type": "Established", "status": "False"}]}
    for status in (pending, {}):
        assert served_resources([crd(("v1", True, True), status=status)]) == dict(
            BUILT_IN_JOB_KINDS)


def test_a_crd_without_a_kind_serves_nothing() -> None:
    assert served_resources([crd(("v1", True, True), kind="")]) == dict(BUILT_IN_JOB_KINDS)


def test_a_cluster_scoped_crd_serves_a_cluster_scoped_resource() -> None:
    found = served_resources([crd(("v1", True, True), scope="Cluster")])
    assert found[("example.com/v1", "DemoJob")].namespaced is False


def test_the_storage_version_names_a_crd_the_engine_installs() -> None:
    assert resource_of_crd(crd(("v1beta1", True, False), ("v1", True, True))) == Resource(
        "example.com", "v1", "demojobs", "DemoJob")


def test_the_engine_keeps_only_what_serving_and_typing_a_kind_need() -> None:
    assert project_crd(crd(("v1", True, True))) == {
        "metadata": {"name": "demojobs.example.com", "resourceVersion": "7"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"kind": "DemoJob", "plural": "demojobs", "singular": "demojob"},
                 "versions": [{"name": "v1", "served": True,
                               "schema": {"openAPIV3Schema": {"type": "object"}}}]},
        "status": {"conditions": ESTABLISHED["conditions"]},
    }
