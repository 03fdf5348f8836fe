"""Bodies as client-go serializes typed objects, over HTTP: stored as kube-apiserver stores them.

A Go client sends every field without `omitempty` (`targetPort: 0`,
`creationTimestamp: null`, `status: {}`, `reportingComponent: ""`...) and
the zero value of whatever its code left unset. Each case below is such a
body for one served kind (one of them a PodGroup, a custom resource), and
the object kube-apiserver v1.32 would store for it: defaulted, validated,
with the server's own metadata (uid, resourceVersion, timestamps, generation,
managedFields) left out of the comparison. Admission plugins this server does
not run (ServiceAccount, DefaultTolerationSeconds) are not part of it. The
same body is then sent again as an update, and as merge and strategic merge
patches that carry zero values, and must leave the stored object as it was.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from tests.integration.apiserver.conftest import raw

Body = dict[str, Any]
_SERVER_METADATA = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")
_MERGE = "application/merge-patch+json"
_STRATEGIC = "application/strategic-merge-patch+json"
_PODGROUP_CRD = (Path(__file__).parents[3] / "crds" / "podgroups"
                 / "podgroups.scheduling.x-k8s.io.yaml")
_NULL_META = {"creationTimestamp": None}
_RBAC = "rbac.authorization.k8s.io"


@dataclass(frozen=True)
class GoCase:
    """One kind: where it lives, the body a Go client sends, what kube-apiserver stores."""

    kind: str
    collection: str
    body: Body
    stored: Body
    patch: Body = field(default_factory=dict)
    strategic: bool = True  # custom resources take no strategic merge patch (415)

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])


def _meta(name: str, namespace: str | None = "default", **extra: Any) -> Body:
    meta: Body = {"name": name, **extra}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


_GO_CONTAINER = {"name": "main", "image": "busybox:1.36", "imagePullPolicy": "",
                 "terminationMessagePath": "", "terminationMessagePolicy": "",
                 "ports": [{"containerPort": 8080, "protocol": ""}], "resources": {}}
_POD_SPEC_STORED = {
    "containers": [{"name": "main", "image": "busybox:1.36", "imagePullPolicy": "IfNotPresent",
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}], "resources": {}}],
    "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
    "dnsPolicy": "ClusterFirst", "securityContext": {}, "schedulerName": "default-scheduler",
    "enableServiceLinks": True, "priority": 0, "preemptionPolicy": "PreemptLowerPriority",
}
# The account the ServiceAccount admission would give, and no token volume (its name is
# random), so that the same body sent again as an update is no spec change.
_POD_ACCOUNT = {"serviceAccountName": "default", "automountServiceAccountToken": False}
_NODE_INFO = dict.fromkeys(("machineID", "systemUUID", "bootID", "kernelVersion", "osImage",
                            "containerRuntimeVersion", "kubeletVersion", "kubeProxyVersion",
                            "operatingSystem", "architecture"), "")
_NODE_STATUS = {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}}, "nodeInfo": _NODE_INFO}
_EVENT = {
    "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web", "apiVersion": "v1"},
    "reason": "Started", "message": "started", "source": {}, "firstTimestamp": None,
    "lastTimestamp": None, "eventTime": None, "reportingComponent": "", "reportingInstance": "",
}
_CRD_VERSION = {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
    "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}

GO_CASES: tuple[GoCase, ...] = (
    GoCase(
        "Pod", "/api/v1/namespaces/default/pods",
        {"kind": "Pod", "apiVersion": "v1", "metadata": _meta("web", None, **_NULL_META),
         "spec": {"containers": [_GO_CONTAINER], "restartPolicy": "", "dnsPolicy": "",
                  "schedulerName": "", **_POD_ACCOUNT},
         "status": {}},
        {"kind": "Pod", "apiVersion": "v1", "metadata": _meta("web"),
         "spec": {**_POD_SPEC_STORED, **_POD_ACCOUNT, "serviceAccount": "default"},
         "status": {"phase": "Pending", "qosClass": "BestEffort"}},
        {"spec": {"restartPolicy": "", "dnsPolicy": "", "containers": [_GO_CONTAINER]}},
    ),
    GoCase(
        "Service", "/api/v1/namespaces/default/services",
        {"metadata": _meta("headless", None, **_NULL_META),
         "spec": {"ports": [{"name": "http", "protocol": "", "port": 80, "targetPort": 0}],
                  "selector": {"app": "web"}, "clusterIP": "None", "type": "",
                  "sessionAffinity": ""},
         "status": {"loadBalancer": {}}},
        {"kind": "Service", "apiVersion": "v1", "metadata": _meta("headless"),
         "spec": {"ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 80}],
                  "selector": {"app": "web"}, "clusterIP": "None", "clusterIPs": ["None"],
                  "type": "ClusterIP", "sessionAffinity": "None", "ipFamilies": ["IPv4"],
                  "ipFamilyPolicy": "SingleStack", "internalTrafficPolicy": "Cluster"},
         "status": {"loadBalancer": {}}},
        {"spec": {"type": "", "sessionAffinity": "",
                  "ports": [{"name": "http", "protocol": "", "port": 80, "targetPort": 0}]}},
    ),
    GoCase(
        "ConfigMap", "/api/v1/namespaces/default/configmaps",
        {"metadata": _meta("settings", None, **_NULL_META), "data": {"mode": "fast"}},
        {"kind": "ConfigMap", "apiVersion": "v1", "metadata": _meta("settings"),
         "data": {"mode": "fast"}},
        {"metadata": _NULL_META, "data": {"mode": "fast"}},
    ),
    GoCase(
        "Secret", "/api/v1/namespaces/default/secrets",
        {"metadata": _meta("creds", None, **_NULL_META), "data": {"token": "c2VjcmV0"},
         "type": ""},
        {"kind": "Secret", "apiVersion": "v1", "metadata": _meta("creds"),
         "data": {"token": "c2VjcmV0"}, "type": "Opaque"},
        {"type": ""},
    ),
    GoCase(
        "Namespace", "/api/v1/namespaces",
        {"metadata": _meta("team", None, **_NULL_META), "spec": {}, "status": {}},
        {"kind": "Namespace", "apiVersion": "v1",
         "metadata": _meta("team", None, labels={"kubernetes.io/metadata.name": "team"}),
         "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}},
        {"metadata": _NULL_META, "status": {"phase": ""}},
    ),
    GoCase(
        "Event", "/api/v1/namespaces/default/events",
        {"metadata": _meta("web.1", "default", **_NULL_META), **_EVENT},
        {"kind": "Event", "apiVersion": "v1", "metadata": _meta("web.1"), **_EVENT},
        {"reportingComponent": "", "source": {}},
    ),
    GoCase(
        "Node", "/api/v1/nodes",
        {"metadata": _meta("worker", None, **_NULL_META), "spec": {}, "status": _NODE_STATUS},
        {"kind": "Node", "apiVersion": "v1", "metadata": _meta("worker", None), "spec": {},
         "status": {**_NODE_STATUS, "allocatable": _NODE_STATUS["capacity"]}},
        {"metadata": _NULL_META, "spec": {}},
    ),
    GoCase(
        "ControllerRevision", "/apis/apps/v1/namespaces/default/controllerrevisions",
        {"metadata": _meta("web-1", None, **_NULL_META), "data": {"spec": {"replicas": 1}},
         "revision": 0},
        {"kind": "ControllerRevision", "apiVersion": "apps/v1", "metadata": _meta("web-1"),
         "data": {"spec": {"replicas": 1}}, "revision": 0},
        {"revision": 0},
    ),
    GoCase(
        "Lease", "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        {"metadata": _meta("leader", None, **_NULL_META),
         "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}},
        {"kind": "Lease", "apiVersion": "coordination.k8s.io/v1", "metadata": _meta("leader"),
         "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}},
        {"spec": {"holderIdentity": "me"}},
    ),
    GoCase(
        "PriorityClass", "/apis/scheduling.k8s.io/v1/priorityclasses",
        {"metadata": _meta("batch", None, **_NULL_META), "value": 0},
        {"kind": "PriorityClass", "apiVersion": "scheduling.k8s.io/v1",
         "metadata": _meta("batch", None), "value": 0, "preemptionPolicy": "PreemptLowerPriority"},
        {"value": 0, "preemptionPolicy": None},
    ),
    GoCase(
        "ServiceAccount", "/api/v1/namespaces/default/serviceaccounts",
        {"metadata": _meta("robot", None, **_NULL_META)},
        {"kind": "ServiceAccount", "apiVersion": "v1", "metadata": _meta("robot")},
        {"metadata": _NULL_META},
    ),
    GoCase(
        "Role", f"/apis/{_RBAC}/v1/namespaces/default/roles",
        {"metadata": _meta("reader", None, **_NULL_META),
         "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]},
        {"kind": "Role", "apiVersion": f"{_RBAC}/v1", "metadata": _meta("reader"),
         "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]},
        {"rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]},
    ),
    GoCase(
        "ClusterRole", f"/apis/{_RBAC}/v1/clusterroles",
        {"metadata": _meta("nothing", None, **_NULL_META), "rules": None},
        {"kind": "ClusterRole", "apiVersion": f"{_RBAC}/v1", "metadata": _meta("nothing", None),
         "rules": None},
        {"aggregationRule": None},
    ),
    GoCase(
        "RoleBinding", f"/apis/{_RBAC}/v1/namespaces/default/rolebindings",
        {"metadata": _meta("readers", None, **_NULL_META),
         "subjects": [{"kind": "User", "name": "alice"}],
         "roleRef": {"apiGroup": "", "kind": "Role", "name": "reader"}},
        {"kind": "RoleBinding", "apiVersion": f"{_RBAC}/v1", "metadata": _meta("readers"),
         "subjects": [{"kind": "User", "name": "alice", "apiGroup": _RBAC}],
         "roleRef": {"apiGroup": _RBAC, "kind": "Role", "name": "reader"}},
        {"roleRef": {"apiGroup": ""}},
    ),
    GoCase(
        "ClusterRoleBinding", f"/apis/{_RBAC}/v1/clusterrolebindings",
        {"metadata": _meta("robots", None, **_NULL_META),
         "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "default"}],
         "roleRef": {"apiGroup": "", "kind": "ClusterRole", "name": "view"}},
        {"kind": "ClusterRoleBinding", "apiVersion": f"{_RBAC}/v1",
         "metadata": _meta("robots", None),
         "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "default"}],
         "roleRef": {"apiGroup": _RBAC, "kind": "ClusterRole", "name": "view"}},
        {"roleRef": {"apiGroup": ""}},
    ),
    GoCase(
        "CustomResourceDefinition", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        {"metadata": _meta("gizmos.example.com", None, **_NULL_META),
         "spec": {"group": "example.com", "names": {"plural": "gizmos", "kind": "Gizmo"},
                  "scope": "Namespaced", "versions": [_CRD_VERSION]},
         "status": {"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": None}},
        {"kind": "CustomResourceDefinition", "apiVersion": "apiextensions.k8s.io/v1",
         "metadata": _meta("gizmos.example.com", None,
                           finalizers=["customresourcecleanup.apiextensions.k8s.io"]),
         "spec": {"group": "example.com",
                  "names": {"plural": "gizmos", "kind": "Gizmo", "singular": "gizmo",
                            "listKind": "GizmoList"},
                  "scope": "Namespaced", "versions": [_CRD_VERSION],
                  "conversion": {"strategy": "None"}},
         "status": {"acceptedNames": {"plural": "gizmos", "kind": "Gizmo", "singular": "gizmo",
                                      "listKind": "GizmoList"},
                    "storedVersions": ["v1"]}},
        {"spec": {"names": {"singular": "", "listKind": ""}}},
    ),
)
PODGROUP = GoCase(
    "PodGroup", "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups",
    {"kind": "PodGroup", "apiVersion": "scheduling.x-k8s.io/v1alpha1",
     "metadata": _meta("gang", None, **_NULL_META), "spec": {"minMember": 2},
     "status": {"scheduleStartTime": None}},
    {"kind": "PodGroup", "apiVersion": "scheduling.x-k8s.io/v1alpha1", "metadata": _meta("gang"),
     "spec": {"minMember": 2}},
    {"metadata": _NULL_META, "spec": {"minMember": 2}},
    strategic=False,
)
ALL_CASES = (*GO_CASES, PODGROUP)


def comparable(obj: Body) -> Body:
    """`obj` without what the server alone decides: its metadata and a CRD's conditions."""
    result = copy.deepcopy(obj)
    for key in _SERVER_METADATA:
        result["metadata"].pop(key, None)
    if result["kind"] == "CustomResourceDefinition":
        result["status"].pop("conditions", None)
    return result


def install(server: RunningApiServer, case: GoCase) -> None:
    """What a case needs beforehand: the PodGroup CRD for PodGroups."""
    if case is PODGROUP:
        crd = yaml.safe_load(_PODGROUP_CRD.read_text())
        response = raw(server, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                       crd)
        assert response.status == 201, response.body


def created(server: RunningApiServer, case: GoCase) -> Body:
    install(server, case)
    response = raw(server, "POST", case.collection, case.body)
    assert response.status == 201, response.body
    answer: Body = response.json()
    return answer


def _ids(cases: tuple[GoCase, ...]) -> list[str]:
    return [case.kind for case in cases]


@pytest.mark.parametrize("case", ALL_CASES, ids=_ids(ALL_CASES))
def test_a_go_body_is_created_and_stored_as_kube_apiserver_stores_it(
        server: RunningApiServer, case: GoCase) -> None:
    answer = created(server, case)
    assert comparable(answer) == case.stored
    stored = raw(server, "GET", f"{case.collection}/{case.name}").json()
    assert comparable(stored) == case.stored


@pytest.mark.parametrize("case", ALL_CASES, ids=_ids(ALL_CASES))
def test_the_go_body_sent_again_as_an_update_changes_nothing(
        server: RunningApiServer, case: GoCase) -> None:
    """A controller that rebuilds its desired object and updates with the live
    resourceVersion sends the same zero values again."""
    answer = created(server, case)
    body = copy.deepcopy(case.body)
    body["metadata"]["resourceVersion"] = answer["metadata"]["resourceVersion"]
    if "finalizers" in answer["metadata"]:  # the server's (a CRD's cleanup), kept as live
        body["metadata"]["finalizers"] = answer["metadata"]["finalizers"]
    response = raw(server, "PUT", f"{case.collection}/{case.name}", body)
    assert response.status == 200, response.body
    assert comparable(response.json()) == case.stored
    assert response.json()["metadata"]["resourceVersion"] == answer["metadata"]["resourceVersion"]


@pytest.mark.parametrize("content_type", [_MERGE, _STRATEGIC])
@pytest.mark.parametrize("case", ALL_CASES, ids=_ids(ALL_CASES))
def test_a_patch_carrying_zero_values_changes_nothing(
        server: RunningApiServer, case: GoCase, content_type: str) -> None:
    if content_type == _STRATEGIC and not case.strategic:
        pytest.skip("custom resources take no strategic merge patch")
    answer = created(server, case)
    response = raw(server, "PATCH", f"{case.collection}/{case.name}",
                   json.dumps(case.patch).encode(), headers={"Content-Type": content_type})
    assert response.status == 200, response.body
    assert comparable(response.json()) == case.stored
    assert response.json()["metadata"]["resourceVersion"] == answer["metadata"]["resourceVersion"]


def test_the_headless_service_of_a_go_operator_targets_its_port(server: RunningApiServer) -> None:
    """The issue as reported: `ports[].targetPort: 0` was a 422 ("must be between 1 and
    65535"); kube-apiserver sets it to the port."""
    body = {"metadata": {"name": "workers", "creationTimestamp": None},
            "spec": {"ports": [{"name": "rpc", "port": 2222, "targetPort": 0}],
                     "clusterIP": "None", "selector": {"job": "train"}},
            "status": {"loadBalancer": {}}}
    response = raw(server, "POST", "/api/v1/namespaces/default/services", body)
    assert response.status == 201, response.body
    assert response.json()["spec"]["ports"] == [
        {"name": "rpc", "port": 2222, "targetPort": 2222, "protocol": "TCP"}
    ]


def test_a_merge_patch_that_zeroes_a_target_port_targets_the_port(
        server: RunningApiServer) -> None:
    case = GO_CASES[1]
    created(server, case)
    patch = {"spec": {"ports": [{"name": "http", "port": 8080, "targetPort": 0}]}}
    response = raw(server, "PATCH", f"{case.collection}/{case.name}",
                   json.dumps(patch).encode(), headers={"Content-Type": _MERGE})
    assert response.status == 200, response.body
    assert response.json()["spec"]["ports"] == [
        {"name": "http", "port": 8080, "targetPort": 8080, "protocol": "TCP"}
    ]


@pytest.mark.parametrize("method", ["PUT", "PATCH"])
def test_a_status_write_with_zero_values_is_defaulted(
        server: RunningApiServer, method: str) -> None:
    """A node agent written in Go reports its status with `allocatable` unset (null) and a
    capacity finer than milli units: kube-apiserver defaults the whole object on `/status`
    writes too."""
    node = {"kind": "Node", "apiVersion": "v1", "metadata": _meta("worker", None, **_NULL_META),
            "spec": {}, "status": {}}
    response = raw(server, "POST", "/api/v1/nodes", node)
    assert response.status == 201, response.body
    status = {**_NODE_STATUS, "capacity": {"cpu": "0.0001", "pods": "110"},
              "allocatable": None}
    if method == "PUT":
        sent: Any = {**response.json(), "status": status}
        headers = None
    else:
        sent = json.dumps({"status": status}).encode()
        headers = {"Content-Type": _MERGE}
    response = raw(server, method, "/api/v1/nodes/worker/status", sent, headers=headers)
    assert response.status == 200, response.body
    for answer in (response.json(), raw(server, "GET", "/api/v1/nodes/worker").json()):
        assert answer["status"]["capacity"] == {"cpu": "1m", "pods": "110"}
        assert answer["status"]["allocatable"] == {"cpu": "1m", "pods": "110"}


def test_container_resources_are_rounded_up_to_milli_units(server: RunningApiServer) -> None:
    container = {**_GO_CONTAINER, "resources": {"limits": {"cpu": "0.0001", "memory": "64Mi"},
                                                "requests": {"cpu": "10u"}}}
    body = {"metadata": _meta("tiny", None, **_NULL_META), "spec": {"containers": [container]}}
    response = raw(server, "POST", "/api/v1/namespaces/default/pods", body)
    assert response.status == 201, response.body
    assert response.json()["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "1m", "memory": "64Mi"}, "requests": {"cpu": "1m", "memory": "64Mi"}}


_SERVICES = "/api/v1/namespaces/default/services"


def _node_port_service(name: str, node_port: int) -> Body:
    """A NodePort service as client-go serializes it: `nodePort: 0` unless one is asked for."""
    return {"metadata": _meta(name, None, **_NULL_META),
            "spec": {"type": "NodePort", "selector": {"app": name},
                     "ports": [{"name": "http", "protocol": "", "port": 80, "targetPort": 0,
                                "nodePort": node_port}]},
            "status": {"loadBalancer": {}}}


def test_a_node_port_service_gets_a_free_node_port_held_until_it_is_deleted(
        server: RunningApiServer) -> None:
    response = raw(server, "POST", _SERVICES, _node_port_service("first", 0))
    assert response.status == 201, response.body
    port = response.json()["spec"]["ports"][0]["nodePort"]
    assert 30000 <= port <= 32767
    response = raw(server, "POST", _SERVICES, _node_port_service("second", port))
    assert response.status == 422, response.body
    assert response.json()["message"] == (
        f'Service "second" is invalid: spec.ports[0].nodePort: Invalid value: {port}: '
        "provided port is already allocated")
    assert response.json()["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "field": "spec.ports[0].nodePort",
         "message": f"Invalid value: {port}: provided port is already allocated"}]
    update = {**_node_port_service("first", 0), "metadata": _meta("first", None)}
    response = raw(server, "PUT", f"{_SERVICES}/first", update)
    assert response.status == 200, response.body
    assert response.json()["spec"]["ports"][0]["nodePort"] == port  # kept, as upstream
    assert raw(server, "DELETE", f"{_SERVICES}/first").status == 200
    response = raw(server, "POST", _SERVICES, _node_port_service("second", port))
    assert response.status == 201, response.body
    assert response.json()["spec"]["ports"][0]["nodePort"] == port
