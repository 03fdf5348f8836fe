"""kubectl's typed create commands, which send built-in objects as protobuf."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Kubectl

pytestmark = pytest.mark.e2e


def test_create_namespace(kubectl: Kubectl) -> None:
    name = f"{kubectl.namespace}-made"
    assert f"namespace/{name} created" in kubectl("create", "namespace", name).stdout
    assert kubectl.get_json("namespace", name)["status"]["phase"] == "Active"


def test_create_configmap_from_literals(kubectl: Kubectl) -> None:
    out = kubectl(
        "create", "configmap", "literal", "--from-literal=a=1", "--from-literal=b=2"
    ).stdout
    assert "configmap/literal created" in out
    assert kubectl.get_json("configmap", "literal")["data"] == {"a": "1", "b": "2"}
