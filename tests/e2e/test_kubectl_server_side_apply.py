"""`kubectl apply --server-side` against the embedded server: create then update, conflicts
between field managers and `--force-conflicts`, managed fields, custom resources, the upgrade
from client-side apply, and the answer for a kind the server does not serve."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import Kubectl
from tests.e2e.manifests import GROUP, configmap, widget

pytestmark = pytest.mark.e2e

UNSERVED = """
apiVersion: nowhere.example.com/v1
kind: Gizmo
metadata:
  name: g
spec: {}
"""


@pytest.fixture
def ssa(kubectl: Kubectl) -> Iterator[Kubectl]:
    """kubectl in a fresh namespace, deleted (with everything in it) after the test."""
    yield kubectl
    kubectl("delete", "namespace", kubectl.namespace, "--timeout=60s", timeout=90)


def server_side(kubectl: Kubectl, manifest: str, *flags: str) -> str:
    return kubectl("apply", "--server-side", *flags, "-f", "-", stdin=manifest).stdout


def managed_fields(kubectl: Kubectl, *target: str) -> dict[str, dict[str, Any]]:
    document = yaml.safe_load(
        kubectl("get", *target, "-o", "yaml", "--show-managed-fields").stdout
    )
    return {entry["manager"]: entry for entry in document["metadata"]["managedFields"]}


def test_a_configmap_is_created_then_updated(ssa: Kubectl) -> None:
    assert server_side(ssa, configmap("ssa", {"a": "1"})).strip() == (
        "configmap/ssa serverside-applied"
    )
    assert ssa.get_json("cm", "ssa")["data"] == {"a": "1"}
    server_side(ssa, configmap("ssa", {"a": "2", "b": "3"}))
    assert ssa.get_json("cm", "ssa")["data"] == {"a": "2", "b": "3"}
    server_side(ssa, configmap("ssa", {"b": "3"}))
    assert ssa.get_json("cm", "ssa")["data"] == {"b": "3"}
    entry = managed_fields(ssa, "cm", "ssa")["kubectl"]
    assert (entry["operation"], entry["apiVersion"]) == ("Apply", "v1")
    assert entry["fieldsV1"] == {"f:data": {"f:b": {}}}


def test_a_custom_resource_is_created_then_updated(ssa: Kubectl, widget_crd: str) -> None:
    server_side(ssa, widget("gear", size=2))
    assert ssa.get_json("widget", "gear")["spec"] == {"size": 2}
    server_side(ssa, widget("gear", size=5, extra_spec="  color: red\n"))
    assert ssa.get_json("widget", "gear")["spec"] == {"size": 5, "color": "red"}
    entry = managed_fields(ssa, "widget", "gear")["kubectl"]
    assert entry["apiVersion"] == f"{GROUP}/v1"
    assert entry["fieldsV1"] == {"f:spec": {"f:color": {}, "f:size": {}}}


def test_a_conflict_between_managers_is_shown_and_forcing_resolves_it(ssa: Kubectl) -> None:
    server_side(ssa, configmap("owned", {"a": "1"}), "--field-manager=first")
    refused = ssa.run(
        "apply", "--server-side", "--field-manager=second", "-f", "-",
        stdin=configmap("owned", {"a": "2"}),
    )
    assert refused.returncode != 0
    assert refused.stderr.startswith(
        'error: Apply failed with 1 conflict: conflict with "first": .data.a\n'
        "Please review the fields above--they currently have other managers."
    )
    assert "--force-conflicts" in refused.stderr
    assert ssa.get_json("cm", "owned")["data"] == {"a": "1"}
    server_side(ssa, configmap("owned", {"a": "2"}), "--field-manager=second",
                "--force-conflicts")
    assert ssa.get_json("cm", "owned")["data"] == {"a": "2"}
    assert set(managed_fields(ssa, "cm", "owned")) == {"second"}


def test_show_managed_fields_lists_every_manager(ssa: Kubectl) -> None:
    ssa("create", "configmap", "mixed", "--from-literal=a=1")
    server_side(ssa, configmap("mixed", {"b": "2"}), "--field-manager=applier")
    ssa("label", "cm", "mixed", "team=ml")
    entries = managed_fields(ssa, "cm", "mixed")
    assert {m: e["operation"] for m, e in entries.items()} == {
        "kubectl-create": "Update", "applier": "Apply", "kubectl-label": "Update",
    }
    assert entries["kubectl-create"]["fieldsV1"] == {"f:data": {".": {}, "f:a": {}}}
    assert entries["kubectl-label"]["fieldsV1"] == {
        "f:metadata": {"f:labels": {".": {}, "f:team": {}}}
    }
    plain = yaml.safe_load(ssa("get", "cm", "mixed", "-o", "yaml").stdout)
    assert "managedFields" not in plain["metadata"]


def test_server_side_apply_takes_over_from_client_side_apply(ssa: Kubectl) -> None:
    ssa.apply(configmap("migrated", {"a": "1"}))
    server_side(ssa, configmap("migrated", {"a": "2"}))
    assert ssa.get_json("cm", "migrated")["data"] == {"a": "2"}
    assert managed_fields(ssa, "cm", "migrated")["kubectl"]["operation"] == "Apply"


@pytest.mark.parametrize("flags", [(), ("--server-side",)])
def test_an_unserved_kind_asks_for_its_crd(ssa: Kubectl, flags: tuple[str, ...]) -> None:
    result = ssa.run("apply", *flags, "-f", "-", stdin=UNSERVED)
    assert result.returncode != 0
    assert 'no matches for kind "Gizmo" in version "nowhere.example.com/v1"' in result.stderr
    assert "ensure CRDs are installed first" in result.stderr
