"""kubectl get: server-side tables, output formats, all namespaces, watch."""

from __future__ import annotations

import re
import subprocess
import time

import pytest
from ruamel.yaml import YAML

from tests.e2e.conftest import Kubectl
from tests.e2e.manifests import configmap, pod, widget

pytestmark = pytest.mark.e2e


def _table(output: str) -> list[list[str]]:
    """Rows of kubectl's column output, split on runs of two or more spaces."""
    return [re.split(r"\s{2,}", line.strip()) for line in output.strip().splitlines()]


def test_get_by_short_name_prints_the_server_columns(kubectl: Kubectl) -> None:
    kubectl.apply(configmap("two-keys", {"a": "1", "b": "2"}))
    header, row = _table(kubectl("get", "cm", "two-keys").stdout)
    assert header == ["NAME", "DATA", "AGE"]
    assert row[:2] == ["two-keys", "2"]
    assert row[2].endswith("s")


def test_pods_show_ready_status_restarts_age(kubectl: Kubectl) -> None:
    kubectl.apply(pod("idle"))
    header, row = _table(kubectl("get", "po", "idle").stdout)
    assert header == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert row[:4] == ["idle", "0/1", "Pending", "0"]
    wide = _table(kubectl("get", "po", "idle", "-o", "wide").stdout)[0]
    assert wide[5:] == ["IP", "NODE", "NOMINATED NODE", "READINESS GATES"]


def test_output_yaml_and_jsonpath(kubectl: Kubectl) -> None:
    kubectl.apply(configmap("formats", {"color": "blue"}))
    document = YAML(typ="safe").load(kubectl("get", "configmap", "formats", "-o", "yaml").stdout)
    assert (document["apiVersion"], document["kind"]) == ("v1", "ConfigMap")
    assert document["metadata"]["namespace"] == kubectl.namespace
    assert document["data"] == {"color": "blue"}
    jsonpath = "-o=jsonpath={.data.color}/{.metadata.name}"
    assert kubectl("get", "configmap", "formats", jsonpath).stdout == "blue/formats"
    names = kubectl("get", "configmaps", "-o", "jsonpath={.items[*].metadata.name}").stdout
    assert "formats" in names.split()


def test_custom_resource_printer_columns(kubectl: Kubectl, widget_crd: str) -> None:
    kubectl.apply(widget("cog", size=3))
    header, row = _table(kubectl("get", "wd", "cog").stdout)
    assert header == ["NAME", "SIZE", "READY", "AGE"]
    assert row[:2] == ["cog", "3"]
    kubectl(
        "patch",
        "widget",
        "cog",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"conditions":[{"type":"Ready","status":"True"}]}}',
    )
    assert _table(kubectl("get", "wd", "cog", "--no-headers").stdout)[0][:3] == ["cog", "3", "True"]


def test_all_namespaces(kubectl: Kubectl, other_namespace: Kubectl) -> None:
    kubectl.apply(configmap("here", {"a": "1"}))
    other_namespace.apply(configmap("there", {"a": "1"}))
    rows = _table(kubectl("get", "configmaps", "-A").stdout)
    assert rows[0][:2] == ["NAMESPACE", "NAME"]
    found = {(row[0], row[1]) for row in rows[1:]}
    assert {(kubectl.namespace, "here"), (other_namespace.namespace, "there")} <= found


def test_watch_prints_changes_until_the_request_timeout(kubectl: Kubectl) -> None:
    kubectl.apply(configmap("watched-a", {"a": "1"}))
    watcher = kubectl.popen("get", "configmaps", "--watch", "--request-timeout=6s")
    try:
        time.sleep(1.5)
        kubectl.apply(configmap("watched-b", {"b": "1"}))
        out, _ = watcher.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        watcher.kill()
        watcher.communicate()
        raise
    names = [row[0] for row in _table(out)[1:]]
    assert "watched-a" in names
    assert "watched-b" in names
