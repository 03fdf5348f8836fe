"""What `kubectl get deployments`, `replicasets` and `replicationcontrollers` show, cell by
cell, as kube-apiserver's printers fill them: READY as ready against desired for a
Deployment, DESIRED/CURRENT/READY counts for the other two, and the `-o wide` selector each
kind formats its own way (selector text or `<invalid>`, FormatLabelSelector's `<none>`, a
label map)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from engine.cluster.apiserver.printing.apps_printers import (
    DEPLOYMENT_PRINTER,
    REPLICA_SET_PRINTER,
    REPLICATION_CONTROLLER_PRINTER,
)

NOW = datetime.datetime(2026, 11, 30, 12, 0, 0, tzinfo=datetime.UTC)
TEMPLATE = {"spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}
IN_TIERS = {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]}


def workload(selector: Any = None, *, replicas: Any = 3, **status: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"replicas": replicas, "template": TEMPLATE}
    if selector is not None:
        spec["selector"] = selector
    return {"metadata": {"name": "web", "creationTimestamp": "2026-11-30T11:57:00Z"},
            "spec": spec, "status": status}


def test_the_columns_are_kubectls() -> None:
    wide = [("Containers", "string", 1), ("Images", "string", 1), ("Selector", "string", 1)]
    assert [(c.name, c.type, c.priority) for c in DEPLOYMENT_PRINTER.columns] == [
        ("Name", "string", 0), ("Ready", "string", 0), ("Up-to-date", "string", 0),
        ("Available", "string", 0), ("Age", "string", 0), *wide]
    for printer in (REPLICA_SET_PRINTER, REPLICATION_CONTROLLER_PRINTER):
        assert [(c.name, c.type, c.priority) for c in printer.columns] == [
            ("Name", "string", 0), ("Desired", "integer", 0), ("Current", "integer", 0),
            ("Ready", "integer", 0), ("Age", "string", 0), *wide]


def test_a_deployment_reads_ready_against_desired_then_updated_and_available() -> None:
    rolling = workload({"matchLabels": {"app": "web"}}, readyReplicas=2, updatedReplicas=1,
                       availableReplicas=2)
    assert DEPLOYMENT_PRINTER.cells(rolling, NOW) == [
        "web", "2/3", 1, 2, "3m", "web", "nginx:1.27", "app=web"]


def test_a_new_deployment_counts_zero_for_what_its_status_lacks() -> None:
    assert DEPLOYMENT_PRINTER.cells(workload(), NOW)[1:4] == ["0/3", 0, 0]
    assert DEPLOYMENT_PRINTER.cells(workload(replicas=None, readyReplicas=True), NOW)[1] == "0/0"


@pytest.mark.parametrize(("selector", "shown"), [
    (None, ""),
    ({}, ""),
    (IN_TIERS, "tier in (a,b)"),
    ({"matchExpressions": [{"key": "tier", "operator": "In", "values": []}]}, "<invalid>"),
])
def test_a_deployments_wide_selector_is_its_selector_text(selector: Any, shown: str) -> None:
    assert DEPLOYMENT_PRINTER.cells(workload(selector), NOW)[-1] == shown


def test_a_replica_set_counts_desired_current_and_ready() -> None:
    scaling = workload(IN_TIERS, replicas=5)
    scaling["status"] = {"replicas": 4, "readyReplicas": 2}
    assert REPLICA_SET_PRINTER.cells(scaling, NOW) == [
        "web", 5, 4, 2, "3m", "web", "nginx:1.27", "tier in (a,b)"]
    assert REPLICA_SET_PRINTER.cells(workload({}), NOW)[-1] == "<none>"


def test_a_replication_controller_prints_its_selector_map() -> None:
    controller = workload({"tier": "a", "app": "web"}, replicas=2)
    controller["status"] = {"replicas": 2}
    assert REPLICATION_CONTROLLER_PRINTER.cells(controller, NOW) == [
        "web", 2, 2, 0, "3m", "web", "nginx:1.27", "app=web,tier=a"]
    assert REPLICATION_CONTROLLER_PRINTER.cells(workload({}), NOW)[-1] == "<none>"
