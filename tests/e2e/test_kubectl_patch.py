"""kubectl patch (merge, json, strategic), label and annotate."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Kubectl
from tests.e2e.manifests import configmap, pod, widget

pytestmark = pytest.mark.e2e


def test_merge_patch(kubectl: Kubectl) -> None:
    kubectl.apply(configmap("merged", {"a": "1", "b": "2"}))
    out = kubectl(
        "patch", "cm", "merged", "--type=merge", "-p", '{"data":{"a":null,"c":"3"}}'
    ).stdout
    assert "configmap/merged patched" in out
    assert kubectl.get_json("cm", "merged")["data"] == {"b": "2", "c": "3"}


def test_json_patch(kubectl: Kubectl) -> None:
    kubectl.apply(configmap("jsonpatched", {"a": "1"}))
    ops = (
        '[{"op":"replace","path":"/data/a","value":"9"},{"op":"add","path":"/data/z","value":"0"}]'
    )
    kubectl("patch", "cm", "jsonpatched", "--type=json", "-p", ops)
    assert kubectl.get_json("cm", "jsonpatched")["data"] == {"a": "9", "z": "0"}
    failing = kubectl.run(
        "patch",
        "cm",
        "jsonpatched",
        "--type=json",
        "-p",
        '[{"op":"test","path":"/data/a","value":"1"}]',
    )
    assert failing.returncode != 0


def test_strategic_merge_patch_merges_containers_by_name(kubectl: Kubectl) -> None:
    kubectl.apply(pod("strategic"))
    patch = '{"spec":{"containers":[{"name":"main","image":"busybox:1.37"}]}}'
    kubectl("patch", "pod", "strategic", "--type=strategic", "-p", patch)
    containers = kubectl.get_json("pod", "strategic")["spec"]["containers"]
    assert len(containers) == 1
    assert containers[0]["image"] == "busybox:1.37"
    assert containers[0]["command"] == ["sleep", "3600"]


def test_strategic_merge_is_refused_for_custom_resources(kubectl: Kubectl, widget_crd: str) -> None:
    kubectl.apply(widget("stiff"))
    result = kubectl.run(
        "patch", "widget", "stiff", "--type=strategic", "-p", '{"spec":{"size":2}}'
    )
    assert result.returncode != 0
    assert "application/strategic-merge-patch+json is not supported" in result.stderr


def test_label_and_annotate(kubectl: Kubectl, widget_crd: str) -> None:
    kubectl.apply(configmap("tagged", {"a": "1"}))
    kubectl("label", "cm", "tagged", "team=ml", "tier=gold")
    kubectl("annotate", "cm", "tagged", "owner=alice")
    metadata = kubectl.get_json("cm", "tagged")["metadata"]
    assert metadata["labels"] == {"team": "ml", "tier": "gold"}
    assert metadata["annotations"]["owner"] == "alice"
    assert kubectl.run("label", "cm", "tagged", "team=infra").returncode != 0  # needs --overwrite
    kubectl("label", "cm", "tagged", "team=infra", "--overwrite")
    kubectl("label", "cm", "tagged", "tier-")
    assert kubectl.get_json("cm", "tagged")["metadata"]["labels"] == {"team": "infra"}
    selected = kubectl("get", "cm", "-l", "team=infra", "-o", "name").stdout.split()
    assert selected == ["configmap/tagged"]
    kubectl.apply(widget("labelled"))
    kubectl("label", "widget", "labelled", "color=red")
    assert kubectl.get_json("widget", "labelled")["metadata"]["labels"] == {"color": "red"}
