"""Server-side Tables: the columns and cells kubectl get prints, as a real server fills them."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from engine.cluster.apiserver.printing.tables import (
    human_duration,
    table_api_version,
    to_table,
    wants_table,
)
from engine.cluster.apiserver.registry.builtins import (
    CONFIGMAPS,
    CRDS,
    EVENTS,
    LEASES,
    NAMESPACES,
    NODES,
    PODS,
    SERVICES,
)
from engine.cluster.apiserver.registry.resources import ResourceType

NOW = datetime.datetime(2025, 6, 1, 12, 0, 0, tzinfo=datetime.UTC)


def ago(**delta: float) -> str:
    return (NOW - datetime.timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


def rt(group: str, kind: str, plural: str, **extra: Any) -> ResourceType:
    return ResourceType(group, "v1", kind, plural, kind.lower(), True, **extra)


def table(resource: ResourceType, *objects: dict[str, Any], **options: Any) -> dict[str, Any]:
    options.setdefault("list_metadata", {"resourceVersion": "7"})
    return to_table(resource, list(objects), now=NOW, **options)


def headers(resource: ResourceType, *, wide: bool = False) -> list[str]:
    columns = table(resource)["columnDefinitions"]
    return [c["name"] for c in columns if wide or c["priority"] == 0]


def cells(resource: ResourceType, obj: dict[str, Any]) -> list[Any]:
    row: list[Any] = table(resource, obj)["rows"][0]["cells"]
    return row


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (5, "5s"),
        (119, "119s"),
        (120, "2m"),
        (182, "3m2s"),
        (600, "10m"),
        (179 * 60 + 59, "179m"),
        (3 * 3600, "3h"),
        (5 * 3600 + 3 * 60, "5h3m"),
        (8 * 3600, "8h"),
        (47 * 3600, "47h"),
        (51 * 3600, "2d3h"),
        (72 * 3600, "3d"),
        (40 * 86400, "40d"),
        (3 * 365 * 86400 + 30 * 86400, "3y30d"),
        (9 * 365 * 86400, "9y"),
    ],
)
def test_human_duration_matches_kubectl(seconds: int, text: str) -> None:
    assert human_duration(datetime.timedelta(seconds=seconds)) == text


def test_accept_headers_kubectl_sends_are_recognised() -> None:
    kubectl = (
        "application/json;as=Table;v=v1;g=meta.k8s.io,"
        "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
    )
    assert wants_table(kubectl)
    assert table_api_version(kubectl) == "meta.k8s.io/v1"
    assert table_api_version("application/json;as=Table;v=v1beta1;g=meta.k8s.io") == (
        "meta.k8s.io/v1beta1"
    )
    assert not wants_table("application/json")
    assert not wants_table("application/json;as=Table;v=v2;g=meta.k8s.io")
    assert not wants_table("application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io")


def test_table_envelope_and_include_object_modes() -> None:
    pod = {"metadata": {"name": "p", "creationTimestamp": ago(seconds=5), "uid": "u"}}
    doc = table(PODS, pod)
    assert (doc["kind"], doc["apiVersion"], doc["metadata"]) == (
        "Table",
        "meta.k8s.io/v1",
        {"resourceVersion": "7"},
    )
    assert doc["rows"][0]["object"] == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": pod["metadata"],
    }
    assert table(PODS, pod, include_object="None")["rows"][0]["object"] is None
    assert table(PODS, pod, include_object="Object")["rows"][0]["object"] == pod
    with pytest.raises(ValueError, match="includeObject"):
        table(PODS, pod, include_object="Everything")
    for column in doc["columnDefinitions"]:
        assert set(column) == {"name", "type", "format", "description", "priority"}


def test_column_sets_of_the_builtin_kinds() -> None:
    assert headers(PODS) == ["Name", "Ready", "Status", "Restarts", "Age"]
    assert headers(PODS, wide=True)[5:] == ["IP", "Node", "Nominated Node", "Readiness Gates"]
    assert headers(SERVICES) == ["Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age"]
    assert headers(EVENTS) == ["Last Seen", "Type", "Reason", "Object", "Message"]
    assert headers(NAMESPACES) == ["Name", "Status", "Age"]
    assert headers(NODES) == ["Name", "Status", "Roles", "Age", "Version"]
    assert headers(CONFIGMAPS) == ["Name", "Data", "Age"]
    assert headers(LEASES) == ["Name", "Holder", "Age"]
    assert headers(CRDS) == ["Name", "Created At"]


def _pod(**status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "worker-0", "creationTimestamp": ago(minutes=3, seconds=2)},
        "spec": {"containers": [{"name": "main"}], "nodeName": "node-1"},
        "status": status,
    }


def _container(
    state: dict[str, Any], *, ready: bool = False, restarts: int = 0, **more: Any
) -> dict[str, Any]:
    return {"name": "main", "state": state, "ready": ready, "restartCount": restarts, **more}


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ({"phase": "Pending"}, "Pending"),
        (
            {
                "phase": "Pending",
                "containerStatuses": [_container({"waiting": {"reason": "ContainerCreating"}})],
            },
            "ContainerCreating",
        ),
        (
            {"phase": "Running", "containerStatuses": [_container({"running": {}}, ready=True)]},
            "Running",
        ),
        (
            {
                "phase": "Succeeded",
                "containerStatuses": [
                    _container({"terminated": {"exitCode": 0, "reason": "Completed"}})
                ],
            },
            "Completed",
        ),
        (
            {
                "phase": "Failed",
                "containerStatuses": [
                    _container({"terminated": {"exitCode": 1, "reason": "Error"}})
                ],
            },
            "Error",
        ),
        (
            {
                "phase": "Failed",
                "containerStatuses": [
                    _container({"terminated": {"exitCode": 137, "reason": "OOMKilled"}})
                ],
            },
            "OOMKilled",
        ),
        (
            {"phase": "Failed", "containerStatuses": [_container({"terminated": {"exitCode": 3}})]},
            "ExitCode:3",
        ),
        (
            {
                "phase": "Failed",
                "containerStatuses": [_container({"terminated": {"exitCode": 143, "signal": 15}})],
            },
            "Signal:15",
        ),
        (
            {
                "phase": "Running",
                "containerStatuses": [
                    _container({"waiting": {"reason": "CrashLoopBackOff"}}, restarts=4)
                ],
            },
            "CrashLoopBackOff",
        ),
        ({"phase": "Failed", "reason": "Evicted"}, "Evicted"),
    ],
)
def test_pod_status_column(status: dict[str, Any], expected: str) -> None:
    assert cells(PODS, _pod(**status))[2] == expected


def test_running_pod_row() -> None:
    pod = _pod(
        phase="Running",
        podIP="10.0.0.5",
        containerStatuses=[_container({"running": {}}, ready=True)],
    )
    assert cells(PODS, pod) == [
        "worker-0",
        "1/1",
        "Running",
        "0",
        "3m2s",
        "10.0.0.5",
        "node-1",
        "<none>",
        "<none>",
    ]


def test_deleted_pod_is_terminating_unless_finished() -> None:
    pod = _pod(phase="Running", containerStatuses=[_container({"running": {}}, ready=True)])
    pod["metadata"]["deletionTimestamp"] = ago(seconds=1)
    assert cells(PODS, pod)[2] == "Terminating"
    done = _pod(
        phase="Succeeded",
        containerStatuses=[_container({"terminated": {"exitCode": 0, "reason": "Completed"}})],
    )
    done["metadata"]["deletionTimestamp"] = ago(seconds=1)
    assert cells(PODS, done)[2] == "Completed"


def test_restarts_show_when_the_last_one_happened() -> None:
    last = {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": ago(minutes=5)}}
    pod = _pod(
        phase="Running",
        containerStatuses=[_container({"running": {}}, ready=True, restarts=2, lastState=last)],
    )
    assert cells(PODS, pod)[3] == "2 (5m ago)"


def test_init_containers_show_progress() -> None:
    pod = _pod(
        phase="Pending",
        initContainerStatuses=[
            {"name": "setup", "state": {"terminated": {"exitCode": 0}}, "restartCount": 0},
            {"name": "fetch", "state": {"running": {}}, "restartCount": 0},
        ],
    )
    pod["spec"]["initContainers"] = [{"name": "setup"}, {"name": "fetch"}]
    assert cells(PODS, pod)[:3] == ["worker-0", "0/1", "Init:1/2"]
    pod["status"]["initContainerStatuses"][1]["state"] = {
        "terminated": {"exitCode": 2, "reason": "Error"}
    }
    assert cells(PODS, pod)[2] == "Init:Error"


def test_finished_pods_carry_a_completed_row_condition() -> None:
    pod = _pod(phase="Succeeded")
    row = table(PODS, pod)["rows"][0]
    assert row["conditions"] == [
        {
            "type": "Completed",
            "status": "True",
            "reason": "Succeeded",
            "message": "The pod has completed successfully.",
        }
    ]
    assert "conditions" not in table(PODS, _pod(phase="Running"))["rows"][0]


def test_service_row() -> None:
    service = {
        "metadata": {"name": "job-master-0", "creationTimestamp": ago(hours=5, minutes=3)},
        "spec": {
            "type": "ClusterIP",
            "clusterIP": "None",
            "ports": [{"port": 23456, "protocol": "TCP"}, {"port": 80, "nodePort": 30080}],
            "selector": {"b": "2", "a": "1"},
        },
    }
    assert cells(SERVICES, service) == [
        "job-master-0",
        "ClusterIP",
        "None",
        "<none>",
        "23456/TCP,80:30080/TCP",
        "5h3m",
        "a=1,b=2",
    ]


def test_event_row_names_the_involved_object() -> None:
    event = {
        "metadata": {"name": "worker-0.1", "creationTimestamp": ago(seconds=30)},
        "involvedObject": {"kind": "Pod", "name": "worker-0", "fieldPath": "spec.containers{main}"},
        "reason": "Started",
        "message": " Started container main \n",
        "type": "Normal",
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": ago(minutes=2),
        "lastTimestamp": ago(seconds=30),
        "count": 3,
    }
    assert cells(EVENTS, event) == [
        "30s",
        "Normal",
        "Started",
        "pod/worker-0",
        "spec.containers{main}",
        "kubelet, node-1",
        "Started container main",
        "2m",
        3,
        "worker-0.1",
    ]
    series = {
        **event,
        "lastTimestamp": None,
        "count": 0,
        "series": {"count": 9, "lastObservedTime": ago(seconds=4)},
    }
    assert cells(EVENTS, series)[0] == "4s"
    assert cells(EVENTS, series)[8] == 9
    new_style = {
        "metadata": {"name": "e"},
        "eventTime": ago(seconds=9),
        "involvedObject": {"kind": "Node"},
    }
    assert cells(EVENTS, new_style)[:4] == ["9s", "", "", "node"]
    assert cells(EVENTS, new_style)[8] == 1


def test_namespace_node_configmap_lease_rows() -> None:
    namespace = {
        "metadata": {"name": "default", "creationTimestamp": ago(days=2, hours=3)},
        "status": {"phase": "Active"},
    }
    assert cells(NAMESPACES, namespace) == ["default", "Active", "2d3h"]
    node = {
        "metadata": {
            "name": "node-1",
            "creationTimestamp": ago(days=40),
            "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "worker"},
        },
        "spec": {"unschedulable": True},
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "nodeInfo": {"kubeletVersion": "v1.32.4"},
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
        },
    }
    assert cells(NODES, node) == [
        "node-1",
        "Ready,SchedulingDisabled",
        "control-plane,worker",
        "40d",
        "v1.32.4",
        "127.0.0.1",
        "<none>",
        "<unknown>",
        "<unknown>",
        "<unknown>",
    ]
    assert cells(NODES, {"metadata": {"name": "n"}})[1:3] == ["Unknown", "<none>"]
    configmap = {
        "metadata": {"name": "cm", "creationTimestamp": ago(seconds=5)},
        "data": {"a": "1"},
        "binaryData": {"b": "AA=="},
    }
    assert cells(CONFIGMAPS, configmap) == ["cm", 2, "5s"]
    lease = {
        "metadata": {"name": "leader", "creationTimestamp": ago(seconds=7)},
        "spec": {"holderIdentity": "manager-1"},
    }
    assert cells(LEASES, lease) == ["leader", "manager-1", "7s"]


def test_kinds_without_a_printer_show_name_and_rfc3339_creation() -> None:
    crd = {
        "metadata": {
            "name": "machinejobs.jobmachine.dev",
            "creationTimestamp": "2025-05-31T10:00:00Z",
        }
    }
    assert cells(CRDS, crd) == ["machinejobs.jobmachine.dev", "2025-05-31T10:00:00Z"]
    assert table(CRDS)["columnDefinitions"][1]["type"] == "date"


JOBS = ResourceType(
    "jobmachine.dev",
    "v1alpha1",
    "MachineJob",
    "machinejobs",
    "machinejob",
    True,
    schema={"type": "object"},
    strategic_merge=False,
    printer_columns=(
        {"name": "State", "type": "string", "jsonPath": ".status.phase"},
        {
            "name": "Ready",
            "type": "string",
            "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
        },
        {"name": "Workers", "type": "integer", "jsonPath": ".spec.replicaSpecs.Worker.replicas"},
        {"name": "First", "type": "string", "jsonPath": ".spec.images[0]", "priority": 1},
        {"name": "Started", "type": "date", "jsonPath": ".status.startTime"},
        {
            "name": "Suspended",
            "type": "boolean",
            "jsonPath": ".spec.suspend",
            "description": "paused",
        },
    ),
)


def test_custom_resource_printer_columns() -> None:
    job = {
        "metadata": {"name": "train", "creationTimestamp": ago(minutes=1)},
        "spec": {
            "replicaSpecs": {"Worker": {"replicas": 3}},
            "images": ["a", "b"],
            "suspend": False,
        },
        "status": {
            "phase": "Running",
            "startTime": ago(seconds=50),
            "conditions": [
                {"type": "Created", "status": "True"},
                {"type": "Ready", "status": "False"},
            ],
        },
    }
    doc = table(JOBS, job)
    assert [(c["name"], c["type"], c["priority"]) for c in doc["columnDefinitions"]] == [
        ("Name", "string", 0),
        ("State", "string", 0),
        ("Ready", "string", 0),
        ("Workers", "integer", 0),
        ("First", "string", 1),
        ("Started", "date", 0),
        ("Suspended", "boolean", 0),
    ]
    assert doc["columnDefinitions"][1]["description"] == (
        "Custom resource definition column (in JSONPath format): .status.phase"
    )
    assert doc["columnDefinitions"][6]["description"] == "paused"
    assert doc["rows"][0]["cells"] == ["train", "Running", "False", 3, "a", "50s", False]


def test_custom_resource_missing_or_mistyped_values_are_empty_cells() -> None:
    job = {"metadata": {"name": "j"}, "spec": {"replicaSpecs": {"Worker": {"replicas": "three"}}}}
    assert cells(JOBS, job) == ["j", None, None, None, None, None, None]


def test_custom_resource_without_columns_shows_name_and_age() -> None:
    plain = ResourceType(
        "x.dev",
        "v1",
        "Thing",
        "things",
        "thing",
        True,
        schema={"type": "object"},
        strategic_merge=False,
    )
    doc = table(plain, {"metadata": {"name": "t", "creationTimestamp": ago(hours=30)}})
    assert [c["name"] for c in doc["columnDefinitions"]] == ["Name", "Age"]
    assert doc["rows"][0]["cells"] == ["t", "30h"]
