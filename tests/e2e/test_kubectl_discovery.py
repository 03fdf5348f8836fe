"""kubectl version and api-resources against the embedded API server."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Kubectl

pytestmark = pytest.mark.e2e

BUILTIN = {
    # name: (short names, apiVersion, namespaced, kind)
    "namespaces": ("ns", "v1", "false", "Namespace"),
    "pods": ("po", "v1", "true", "Pod"),
    "services": ("svc", "v1", "true", "Service"),
    "events": ("ev", "v1", "true", "Event"),
    "configmaps": ("cm", "v1", "true", "ConfigMap"),
    "secrets": ("", "v1", "true", "Secret"),
    "nodes": ("no", "v1", "false", "Node"),
    "controllerrevisions": ("", "apps/v1", "true", "ControllerRevision"),
    "leases": ("", "coordination.k8s.io/v1", "true", "Lease"),
    "customresourcedefinitions": (
        "crd,crds",
        "apiextensions.k8s.io/v1",
        "false",
        "CustomResourceDefinition",
    ),
}


def _api_resources(kubectl: Kubectl) -> dict[str, tuple[str, ...]]:
    lines = kubectl("api-resources", "--no-headers").stdout.splitlines()
    rows: dict[str, tuple[str, ...]] = {}
    for line in lines:
        fields = line.split()
        if len(fields) == 4:  # no short names
            fields.insert(1, "")
        rows[fields[0]] = tuple(fields[1:])
    return rows


def test_server_version_is_a_kubernetes_release(kubectl: Kubectl) -> None:
    output = kubectl("version", "-o", "json").stdout
    assert '"gitVersion": "v1.32.' in output
    assert '"serverVersion"' in output


def test_api_resources_lists_every_builtin_with_short_names(kubectl: Kubectl) -> None:
    rows = _api_resources(kubectl)
    for name, expected in BUILTIN.items():
        assert rows.get(name) == expected, name


def test_a_new_crd_shows_up_in_api_resources(kubectl: Kubectl, widget_crd: str) -> None:
    rows = _api_resources(kubectl)
    assert rows["widgets"] == ("wd", "e2e.jobmachine.dev/v1", "true", "Widget")


def test_short_names_and_categories_resolve(kubectl: Kubectl, widget_crd: str) -> None:
    kubectl("get", "cm,po,svc,ev,wd")
    kubectl("get", "all")
    kubectl("get", "ns,no,crd", "-o", "name")


def test_explain_reads_the_openapi_schemas(kubectl: Kubectl, widget_crd: str) -> None:
    widget_spec = kubectl("explain", "widgets.spec").stdout
    assert "KIND:       Widget" in widget_spec
    assert "size\t<integer>" in widget_spec
    assert "color\t<string>" in widget_spec
    pods = kubectl("explain", "pods").stdout
    assert "Pod is a collection of containers" in pods
    assert "metadata\t<ObjectMeta>" in pods
