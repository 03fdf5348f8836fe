"""ControllerRevisions (apps/v1) with the real kubectl: apply, get, explain."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Kubectl

pytestmark = pytest.mark.e2e


def _revision(name: str, number: int, owner_uid: str) -> str:
    return f"""\
apiVersion: apps/v1
kind: ControllerRevision
metadata:
  name: {name}
  labels: {{app: web}}
  ownerReferences:
  - {{apiVersion: v1, kind: ConfigMap, name: web, uid: {owner_uid}, controller: true}}
data:
  spec:
    template: {{spec: {{containers: [{{name: main, image: busybox}}]}}}}
revision: {number}
"""


@pytest.fixture
def owner_uid(kubectl: Kubectl) -> str:
    kubectl("create", "configmap", "web")
    uid: str = kubectl.get_json("configmap", "web")["metadata"]["uid"]
    return uid


def test_apply_and_get(kubectl: Kubectl, owner_uid: str) -> None:
    out = kubectl.apply(_revision("web-1", 1, owner_uid))
    assert "controllerrevision.apps/web-1 created" in out
    kubectl.apply(_revision("web-2", 2, owner_uid))
    assert "unchanged" in kubectl.apply(_revision("web-2", 2, owner_uid))
    lines = kubectl("get", "controllerrevisions", "-l", "app=web").stdout.splitlines()
    assert lines[0].split() == ["NAME", "CONTROLLER", "REVISION", "AGE"]
    assert [line.split()[:3] for line in lines[1:]] == [
        ["web-1", "configmap/web", "1"],
        ["web-2", "configmap/web", "2"],
    ]
    obj = kubectl.get_json("controllerrevision", "web-2")
    assert obj["revision"] == 2
    assert obj["data"]["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox"


def test_strict_apply_refuses_unknown_fields(kubectl: Kubectl, owner_uid: str) -> None:
    manifest = _revision("web-1", 1, owner_uid) + "extra: 1\n"
    result = kubectl.run("apply", "-f", "-", stdin=manifest)
    assert result.returncode != 0
    assert 'strict decoding error: unknown field "extra"' in result.stderr


def test_data_cannot_be_patched(kubectl: Kubectl, owner_uid: str) -> None:
    kubectl.apply(_revision("web-1", 1, owner_uid))
    result = kubectl.run(
        "patch", "controllerrevision", "web-1", "--type=merge", "-p", '{"data": {"x": 1}}'
    )
    assert result.returncode != 0
    assert 'The ControllerRevision "web-1" is invalid: data: Invalid value' in result.stderr
    kubectl("patch", "controllerrevision", "web-1", "--type=merge", "-p", '{"revision": 4}')
    assert kubectl.get_json("controllerrevision", "web-1")["revision"] == 4


def test_explain(kubectl: Kubectl) -> None:
    out = kubectl("explain", "controllerrevision").stdout
    assert "GROUP:      apps" in out
    assert "KIND:       ControllerRevision" in out
    assert "ControllerRevision implements an immutable snapshot of state data." in out
    assert "data\t<Object>" in out
    assert "revision\t<integer> -required-" in out
    field = kubectl("explain", "controllerrevision.revision").stdout
    assert "Revision indicates the revision of the state represented by Data." in field
