"""Secrets with the real kubectl: create generic, apply with stringData, get, describe, delete."""

from __future__ import annotations

import base64

import pytest
import yaml

from tests.e2e.conftest import Kubectl

pytestmark = pytest.mark.e2e

MANIFEST = """\
apiVersion: v1
kind: Secret
metadata:
  name: db
stringData:
  password: {password}
data:
  user: YWRtaW4=
  password: b3Zlcndyb3R0ZW4=
"""


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_create_secret_generic_from_literals(kubectl: Kubectl) -> None:
    out = kubectl(
        "create", "secret", "generic", "creds", "--from-literal=user=admin", "--from-literal=pw=s=1"
    ).stdout
    assert "secret/creds created" in out
    created = kubectl.get_json("secret", "creds")
    assert created["data"] == {"user": b64("admin"), "pw": b64("s=1")}
    assert created["type"] == "Opaque"


def test_apply_with_string_data_shows_only_base64_data(kubectl: Kubectl) -> None:
    assert "secret/db created" in kubectl.apply(MANIFEST.format(password="first"))
    document = yaml.safe_load(kubectl("get", "secret", "db", "-o", "yaml").stdout)
    assert document["data"] == {"user": b64("admin"), "password": b64("first")}
    assert "stringData" not in document
    assert "secret/db configured" in kubectl.apply(MANIFEST.format(password="second"))
    second = kubectl.get_json("secret", "db")
    assert second["data"]["password"] == b64("second")
    # The live object never holds stringData, so kubectl always sends it again (and
    # says "configured", as against a real cluster); the server sees nothing changed.
    kubectl.apply(MANIFEST.format(password="second"))
    again = kubectl.get_json("secret", "db")["metadata"]["resourceVersion"]
    assert again == second["metadata"]["resourceVersion"]


def test_get_prints_name_type_data_age(kubectl: Kubectl) -> None:
    kubectl("create", "secret", "generic", "one", "--from-literal=a=1", "--from-literal=b=2")
    kubectl.apply(MANIFEST.format(password="x"))
    lines = kubectl("get", "secrets").stdout.splitlines()
    assert lines[0].split() == ["NAME", "TYPE", "DATA", "AGE"]
    assert [line.split()[:3] for line in lines[1:]] == [
        ["db", "Opaque", "2"],
        ["one", "Opaque", "2"],
    ]


def test_describe_shows_sizes_not_values(kubectl: Kubectl) -> None:
    kubectl("create", "secret", "generic", "creds", "--from-literal=token=hunter22")
    out = kubectl("describe", "secret", "creds").stdout
    assert "Type:  Opaque" in out
    assert "token:  8 bytes" in out
    assert "hunter22" not in out and b64("hunter22") not in out


def test_invalid_base64_is_refused_by_the_server(kubectl: Kubectl) -> None:
    manifest = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: bad\ndata:\n  k: not-base64\n"
    result = kubectl.run("apply", "-f", "-", stdin=manifest)
    assert result.returncode != 0
    assert "Error from server (BadRequest)" in result.stderr
    assert "data[k]: illegal base64 data at input byte 3" in result.stderr


def test_delete(kubectl: Kubectl) -> None:
    kubectl("create", "secret", "generic", "gone", "--from-literal=a=1")
    assert 'secret "gone" deleted' in kubectl("delete", "secret", "gone", "--timeout=30s").stdout
    missing = kubectl.run("get", "secret", "gone")
    assert missing.returncode != 0
    assert 'secrets "gone" not found' in missing.stderr
