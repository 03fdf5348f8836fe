"""Discovery documents: what kubectl api-resources and the RESTMapper are built from."""

from __future__ import annotations

import pytest

from engine.cluster.apiserver.endpoints import discovery
from engine.cluster.apiserver.registry.builtins import CONFIGMAPS, CRDS, LEASES, PODS
from engine.cluster.apiserver.registry.resources import ResourceType


def _job(version: str) -> ResourceType:
    return ResourceType(
        "jobmachine.dev",
        version,
        "MachineJob",
        "machinejobs",
        "machinejob",
        True,
        ("mjob",),
        subresources=frozenset({"status", "scale"}),
        schema={"type": "object"},
        strategic_merge=False,
    )


TYPES = [PODS, CONFIGMAPS, LEASES, CRDS, _job("v1alpha1"), _job("v1"), _job("v1beta2")]


def test_version_names_a_release_the_kubectl_dispatcher_can_map() -> None:
    info = discovery.version_info()
    assert (info["major"], info["minor"]) == ("1", "32")
    assert info["gitVersion"].startswith("v1.32.")
    assert set(info) >= {"buildDate", "goVersion", "platform", "compiler", "gitTreeState"}


def test_core_group_is_served_as_v1_only() -> None:
    doc = discovery.api_versions(server_address="127.0.0.1:8443")
    assert doc["kind"] == "APIVersions"
    assert doc["versions"] == ["v1"]
    assert doc["serverAddressByClientCIDRs"][0]["serverAddress"] == "127.0.0.1:8443"


def test_group_list_names_each_group_once_with_ga_preferred() -> None:
    doc = discovery.api_group_list(TYPES)
    assert (doc["kind"], doc["apiVersion"]) == ("APIGroupList", "v1")
    assert [g["name"] for g in doc["groups"]] == [
        "coordination.k8s.io",
        "apiextensions.k8s.io",
        "jobmachine.dev",
    ]
    jobs = doc["groups"][2]
    assert [v["version"] for v in jobs["versions"]] == ["v1", "v1beta2", "v1alpha1"]
    assert jobs["preferredVersion"] == {"groupVersion": "jobmachine.dev/v1", "version": "v1"}


def test_single_group_document_and_unknown_group() -> None:
    doc = discovery.api_group("coordination.k8s.io", TYPES)
    assert doc["kind"] == "APIGroup"
    assert doc["versions"] == [{"groupVersion": "coordination.k8s.io/v1", "version": "v1"}]
    with pytest.raises(KeyError):
        discovery.api_group("batch", TYPES)
    with pytest.raises(KeyError):
        discovery.api_group("", TYPES)


def test_version_priority_follows_kubernetes_rules() -> None:
    ordered = sorted(
        ["v1alpha1", "v2", "v1beta1", "v1", "v10beta3", "foo"], key=discovery.version_sort_key
    )
    assert ordered == ["v2", "v1", "v10beta3", "v1beta1", "v1alpha1", "foo"]


def test_core_resource_list_has_every_field_kubectl_reads() -> None:
    doc = discovery.api_resource_list("", "v1", TYPES)
    assert (doc["kind"], doc["groupVersion"]) == ("APIResourceList", "v1")
    by_name = {entry["name"]: entry for entry in doc["resources"]}
    assert list(by_name) == [
        "configmaps", "pods", "pods/binding", "pods/exec", "pods/log", "pods/status"]
    pods = by_name["pods"]
    assert pods["singularName"] == "pod"
    assert pods["namespaced"] is True
    assert pods["kind"] == "Pod"
    assert pods["shortNames"] == ["po"]
    assert pods["categories"] == ["all"]
    assert "watch" in pods["verbs"] and "deletecollection" in pods["verbs"]
    # The values a real kube-apiserver reports for these kinds.
    assert pods["storageVersionHash"] == "xPOwRZ+Yhw8="
    assert by_name["configmaps"]["storageVersionHash"] == "qFsyl6wFWjQ="
    assert "categories" not in by_name["configmaps"]


def test_subresources_have_their_own_kind_and_verbs() -> None:
    by_name = {e["name"]: e for e in discovery.api_resource_list("", "v1", TYPES)["resources"]}
    assert by_name["pods/status"] == {
        "name": "pods/status",
        "singularName": "",
        "namespaced": True,
        "kind": "Pod",
        "verbs": ["get", "patch", "update"],
    }
    assert by_name["pods/log"]["verbs"] == ["get"]
    assert (by_name["pods/binding"]["kind"], by_name["pods/binding"]["verbs"]) == (
        "Binding",
        ["create"],
    )


def test_scale_subresource_names_the_autoscaling_kind() -> None:
    doc = discovery.api_resource_list("jobmachine.dev", "v1", TYPES)
    scale = next(e for e in doc["resources"] if e["name"] == "machinejobs/scale")
    assert (scale["group"], scale["version"], scale["kind"]) == ("autoscaling", "v1", "Scale")


def test_storage_version_hash_follows_the_storage_version() -> None:
    crds = discovery.api_resource_list("apiextensions.k8s.io", "v1", TYPES)["resources"][0]
    assert crds["storageVersionHash"] == "jfWCUB31mvA="  # real servers store CRDs as v1beta1
    served_v1 = discovery.api_resource_list(
        "jobmachine.dev",
        "v1",
        TYPES,
        storage_versions={("jobmachine.dev", "machinejobs"): "v1alpha1"},
    )["resources"][0]
    assert served_v1["storageVersionHash"] == discovery.storage_version_hash(
        "jobmachine.dev", "v1alpha1", "MachineJob"
    )


def test_unknown_group_version_and_subresource_are_errors() -> None:
    with pytest.raises(KeyError):
        discovery.api_resource_list("", "v2", TYPES)
    odd = ResourceType(
        "", "v1", "Thing", "things", "thing", True, subresources=frozenset({"teleport"})
    )
    with pytest.raises(ValueError, match="things/teleport"):
        discovery.api_resource_list("", "v1", [odd])
