"""kubectl apply with default flags: strict server-side field validation, create then patch."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import Kubectl
from tests.e2e.manifests import configmap, pod, widget

pytestmark = pytest.mark.e2e


def test_apply_creates_then_configures_a_configmap(kubectl: Kubectl) -> None:
    assert "configmap/settings created" in kubectl.apply(configmap("settings", {"a": "1"}))
    out = kubectl.apply(configmap("settings", {"a": "2", "b": "3"}))
    assert "configmap/settings configured" in out
    data = kubectl.get_json("configmap", "settings")["data"]
    assert data == {"a": "2", "b": "3"}
    assert "configmap/settings unchanged" in kubectl.apply(
        configmap("settings", {"a": "2", "b": "3"})
    )
    # A key dropped from the manifest is removed (three-way merge with last-applied).
    kubectl.apply(configmap("settings", {"b": "3"}))
    assert kubectl.get_json("configmap", "settings")["data"] == {"b": "3"}


def test_apply_a_pod_twice(kubectl: Kubectl) -> None:
    assert "pod/sleeper created" in kubectl.apply(pod("sleeper"))
    out = kubectl.apply(pod("sleeper").replace("app: sleeper", "app: sleeper\n    tier: batch"))
    assert "pod/sleeper configured" in out
    labels = kubectl.get_json("pod", "sleeper")["metadata"]["labels"]
    assert labels == {"app": "sleeper", "tier": "batch"}


def test_apply_keeps_the_manifest_in_last_applied(kubectl: Kubectl) -> None:
    kubectl.apply(configmap("remembered", {"k": "v"}))
    annotations = kubectl.get_json("configmap", "remembered")["metadata"]["annotations"]
    last = json.loads(annotations["kubectl.kubernetes.io/last-applied-configuration"])
    assert last["data"] == {"k": "v"}


def test_apply_a_custom_resource_then_change_it(kubectl: Kubectl, widget_crd: str) -> None:
    assert "widget.e2e.jobmachine.dev/gear created" in kubectl.apply(widget("gear", size=2))
    assert "configured" in kubectl.apply(widget("gear", size=5))
    assert kubectl.get_json("widget", "gear")["spec"] == {"size": 5}


def test_unknown_field_in_a_custom_resource_is_rejected(kubectl: Kubectl, widget_crd: str) -> None:
    result = kubectl.run("apply", "-f", "-", stdin=widget("odd", extra_spec="  flavour: mint\n"))
    assert result.returncode != 0
    assert 'strict decoding error: unknown field "spec.flavour"' in result.stderr
    assert kubectl.run("get", "widget", "odd").returncode != 0


def test_unknown_field_in_a_builtin_is_rejected(kubectl: Kubectl) -> None:
    manifest = configmap("typo", {"a": "1"}) + "dta:\n  b: '2'\n"
    result = kubectl.run("apply", "-f", "-", stdin=manifest)
    assert result.returncode != 0
    assert 'unknown field "dta"' in result.stderr


def test_validate_false_prunes_silently(kubectl: Kubectl, widget_crd: str) -> None:
    manifest = widget("lenient", extra_spec="  flavour: mint\n")
    kubectl("apply", "--validate=false", "-f", "-", stdin=manifest)
    assert kubectl.get_json("widget", "lenient")["spec"] == {"size": 1}
