"""Zero values as Go clients send them are defaulted as kube-apiserver defaults them.

client-go serializes every field without `omitempty`, so optional fields
arrive as `0`, `""`, `false`, `{}` or `null`. kube-apiserver's defaulters
read the zero of a value field as unset (a Service port's `targetPort: 0`
becomes the port), the null of a pointer field too, and validate afterwards.
These tests drive the store in process: one row per default of the table in
docs/embedded-cluster.md, and a property: adding zero-valued optional fields
to a valid body never turns a create into a 4xx.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.cluster.apiserver.admission.pod_defaults import image_pull_policy, pod_defaults
from engine.cluster.apiserver.core import Core
from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.registry.builtins import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    CONFIGMAPS,
    CONTROLLER_REVISIONS,
    CRDS,
    EVENTS,
    LEASES,
    NAMESPACES,
    NODES,
    PODS,
    PRIORITY_CLASSES,
    ROLE_BINDINGS,
    ROLES,
    SECRETS,
    SERVICE_ACCOUNTS,
    SERVICES,
)
from engine.cluster.apiserver.registry.deletion import DeleteOptions, delete
from engine.cluster.apiserver.registry.node_ports import NODE_PORTS
from engine.cluster.apiserver.registry.resources import ResourceType
from engine.cluster.apiserver.validation.builtin_validation import validate_immutable
from engine.cluster.quantities import milli_rounded
from tests.unit.cluster.store_support import ManualReactor, make_core

Body = dict[str, Any]
Path = tuple[str | int, ...]
_NAMES = itertools.count()


@pytest.fixture
def core() -> Core:
    return make_core(ManualReactor())


def _pod(**spec: Any) -> Body:
    container = {"name": "main", "image": "busybox:1.36", **spec.pop("container", {})}
    return {"metadata": {"name": "p"}, "spec": {"containers": [container], **spec}}


def _service(**spec: Any) -> Body:
    port = {"name": "http", "port": 80, **spec.pop("port", {})}
    return {"metadata": {"name": "s"}, "spec": {"selector": {"app": "a"}, "ports": [port],
                                                  **spec}}


def _volume(**source: Any) -> Body:
    return _pod(volumes=[{"name": "v", **source}])


def _crd(**names: Any) -> Body:
    return {
        "metadata": {"name": "gizmos.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "gizmos", "kind": "Gizmo", **names},
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                "openAPIV3Schema": {"type": "object",
                                    "x-kubernetes-preserve-unknown-fields": True}}}],
        },
    }


def _binding(**ref: Any) -> Body:
    return {"metadata": {"name": "b"}, "roleRef": {"kind": "Role", "name": "r", **ref},
            "subjects": [{"kind": "User", "name": "alice", "apiGroup": ""}]}


_C = ("spec", "containers", 0)
# (type, body, path, stored value): one row per default of the docs' table.
_DEFAULTS: list[tuple[ResourceType, Body, Path, Any]] = [
    (PODS, _pod(restartPolicy=""), ("spec", "restartPolicy"), "Always"),
    (PODS, _pod(restartPolicy=None), ("spec", "restartPolicy"), "Always"),
    (PODS, _pod(dnsPolicy=""), ("spec", "dnsPolicy"), "ClusterFirst"),
    (PODS, _pod(schedulerName=""), ("spec", "schedulerName"), "default-scheduler"),
    (PODS, _pod(securityContext=None), ("spec", "securityContext"), {}),
    (PODS, _pod(terminationGracePeriodSeconds=None), ("spec", "terminationGracePeriodSeconds"),
     30),
    (PODS, _pod(terminationGracePeriodSeconds=0), ("spec", "terminationGracePeriodSeconds"), 0),
    (PODS, _pod(enableServiceLinks=None), ("spec", "enableServiceLinks"), True),
    (PODS, _pod(enableServiceLinks=False), ("spec", "enableServiceLinks"), False),
    (PODS, _pod(container={"imagePullPolicy": ""}), (*_C, "imagePullPolicy"), "IfNotPresent"),
    (PODS, _pod(container={"image": "busybox", "imagePullPolicy": ""}),
     (*_C, "imagePullPolicy"), "Always"),
    (PODS, _pod(container={"terminationMessagePath": ""}), (*_C, "terminationMessagePath"),
     "/dev/termination-log"),
    (PODS, _pod(container={"terminationMessagePolicy": ""}), (*_C, "terminationMessagePolicy"),
     "File"),
    (PODS, _pod(container={"resources": None}), (*_C, "resources"), {}),
    (PODS, _pod(container={"ports": [{"containerPort": 80, "protocol": ""}]}),
     (*_C, "ports", 0, "protocol"), "TCP"),
    (PODS, _pod(hostNetwork=True, container={"ports": [{"containerPort": 80, "hostPort": 0}]}),
     (*_C, "ports", 0, "hostPort"), 80),
    (PODS, _pod(container={"ports": [{"containerPort": 80, "hostPort": 0}]}),
     (*_C, "ports", 0, "hostPort"), 0),
    (PODS, _pod(container={"env": [{"name": "N", "valueFrom": {
        "fieldRef": {"apiVersion": "", "fieldPath": "metadata.name"}}}]}),
     (*_C, "env", 0, "valueFrom", "fieldRef", "apiVersion"), "v1"),
    (PODS, _pod(container={"livenessProbe": {"exec": {"command": ["true"]}, "timeoutSeconds": 0,
                                             "periodSeconds": 0, "successThreshold": 0,
                                             "failureThreshold": 0, "initialDelaySeconds": 0}}),
     (*_C, "livenessProbe"),
     {"exec": {"command": ["true"]}, "timeoutSeconds": 1, "periodSeconds": 10,
      "successThreshold": 1, "failureThreshold": 3, "initialDelaySeconds": 0}),
    (PODS, _pod(container={"readinessProbe": {"httpGet": {"port": 80, "path": "",
                                                          "scheme": ""}}}),
     (*_C, "readinessProbe", "httpGet"), {"port": 80, "path": "/", "scheme": "HTTP"}),
    (PODS, _pod(container={"startupProbe": {"grpc": {"port": 9000}}}),
     (*_C, "startupProbe", "grpc"), {"port": 9000, "service": ""}),
    (PODS, _pod(container={"lifecycle": {"preStop": {"httpGet": {"port": 80}}}}),
     (*_C, "lifecycle", "preStop", "httpGet"), {"port": 80, "path": "/", "scheme": "HTTP"}),
    (PODS, _pod(initContainers=[{"name": "init", "image": "busybox", "imagePullPolicy": ""}]),
     ("spec", "initContainers", 0, "imagePullPolicy"), "Always"),
    (PODS, _volume(), ("spec", "volumes", 0), {"name": "v", "emptyDir": {}}),
    (PODS, _volume(secret={"secretName": "s"}), ("spec", "volumes", 0, "secret", "defaultMode"),
     420),
    (PODS, _volume(secret={"secretName": "s", "defaultMode": 0}),
     ("spec", "volumes", 0, "secret", "defaultMode"), 0),
    (PODS, _volume(configMap={"name": "c"}), ("spec", "volumes", 0, "configMap", "defaultMode"),
     420),
    (PODS, _volume(downwardAPI={"items": [{"path": "n", "fieldRef": {"fieldPath": "x"}}]}),
     ("spec", "volumes", 0, "downwardAPI"),
     {"defaultMode": 420, "items": [{"path": "n", "fieldRef": {"fieldPath": "x",
                                                                "apiVersion": "v1"}}]}),
    (PODS, _volume(projected={"sources": [{"serviceAccountToken": {"path": "t"}}]}),
     ("spec", "volumes", 0, "projected"),
     {"defaultMode": 420, "sources": [{"serviceAccountToken": {"path": "t",
                                                                "expirationSeconds": 3600}}]}),
    (PODS, _volume(hostPath={"path": "/tmp"}), ("spec", "volumes", 0, "hostPath", "type"), ""),
    (PODS, _volume(ephemeral={"volumeClaimTemplate": {"spec": {"accessModes": ["RWO"]}}}),
     ("spec", "volumes", 0, "ephemeral", "volumeClaimTemplate", "spec", "volumeMode"),
     "Filesystem"),
    (SERVICES, _service(port={"targetPort": 0}), ("spec", "ports", 0, "targetPort"), 80),
    (SERVICES, _service(port={"targetPort": ""}), ("spec", "ports", 0, "targetPort"), 80),
    (SERVICES, _service(port={"targetPort": "web"}), ("spec", "ports", 0, "targetPort"), "web"),
    (SERVICES, _service(port={"protocol": ""}), ("spec", "ports", 0, "protocol"), "TCP"),
    (SERVICES, _service(type=""), ("spec", "type"), "ClusterIP"),
    (SERVICES, _service(sessionAffinity=""), ("spec", "sessionAffinity"), "None"),
    (SERVICES, _service(sessionAffinity="ClientIP"), ("spec", "sessionAffinityConfig"),
     {"clientIP": {"timeoutSeconds": 10800}}),
    (SERVICES, _service(type="NodePort", externalTrafficPolicy=""),
     ("spec", "externalTrafficPolicy"), "Cluster"),
    (SERVICES, _service(type="LoadBalancer"), ("spec", "allocateLoadBalancerNodePorts"), True),
    (SERVICES, _service(internalTrafficPolicy=None), ("spec", "internalTrafficPolicy"),
     "Cluster"),
    (SERVICES, _service(clusterIP="None", port={"targetPort": 0}), ("spec", "clusterIPs"),
     ["None"]),
    (SECRETS, {"metadata": {"name": "s"}, "type": ""}, ("type",), "Opaque"),
    (NAMESPACES, {"metadata": {"name": "n"}, "spec": {}, "status": {"phase": ""}},
     ("status", "phase"), "Active"),
    (NODES, {"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "2"}}},
     ("status", "allocatable"), {"cpu": "2"}),
    (PODS, _pod(container={"resources": {"limits": {"cpu": "0.0001", "memory": "1Gi"}}}),
     (*_C, "resources"), {"limits": {"cpu": "1m", "memory": "1Gi"},
                          "requests": {"cpu": "1m", "memory": "1Gi"}}),
    (PODS, _pod(initContainers=[{"name": "i", "image": "busybox",
                                 "resources": {"requests": {"cpu": "1.0001"}}}]),
     ("spec", "initContainers", 0, "resources", "requests", "cpu"), "1001m"),
    (PODS, _pod(overhead={"cpu": "10u"}), ("spec", "overhead", "cpu"), "1m"),
    (PODS, _pod(resources={"limits": {"memory": "0.0015"}}), ("spec", "resources", "limits"),
     {"memory": "2m"}),
    (PODS, _volume(ephemeral={"volumeClaimTemplate": {"spec": {
        "accessModes": ["RWO"], "resources": {"requests": {"storage": "1e-4"}}}}}),
     ("spec", "volumes", 0, "ephemeral", "volumeClaimTemplate", "spec", "resources",
      "requests", "storage"), "1e-3"),
    (NODES, {"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "0.0001", "pods": "110"},
                                                   "allocatable": {"cpu": "0.00001"}}},
     ("status",), {"capacity": {"cpu": "1m", "pods": "110"}, "allocatable": {"cpu": "1m"}}),
    (PRIORITY_CLASSES, {"metadata": {"name": "p"}, "value": 0, "preemptionPolicy": None},
     ("preemptionPolicy",), "PreemptLowerPriority"),
    (ROLE_BINDINGS, _binding(apiGroup=""), ("roleRef", "apiGroup"), "rbac.authorization.k8s.io"),
    (ROLE_BINDINGS, _binding(), ("subjects", 0, "apiGroup"), "rbac.authorization.k8s.io"),
    (CRDS, _crd(singular="", listKind=""), ("spec", "names"),
     {"plural": "gizmos", "kind": "Gizmo", "singular": "gizmo", "listKind": "GizmoList"}),
    (CRDS, _crd(), ("spec", "conversion"), {"strategy": "None"}),
]


def _at(obj: Any, path: Path) -> Any:
    for step in path:
        obj = obj[step]
    return obj


def _namespace_of(rt: ResourceType) -> str:
    return "default" if rt.namespaced else ""


@pytest.mark.parametrize(("rt", "body", "path", "expected"), _DEFAULTS,
                         ids=[f"{rt.kind}:{'.'.join(map(str, path))}"
                              for rt, _, path, _ in _DEFAULTS])
def test_a_zero_value_is_stored_as_kube_apiserver_defaults_it(
        core: Core, rt: ResourceType, body: Body, path: Path, expected: Any) -> None:
    stored = core.store.create(rt, _namespace_of(rt), copy.deepcopy(body)).entry.obj
    assert _at(stored, path) == expected


# What the ServiceAccount admission sets on create, sent again: kube-apiserver too refuses a
# PUT of the bare create body, as it lacks the admitted account and token volume.
_ADMITTED = {"serviceAccountName": "default", "automountServiceAccountToken": False}
_UPDATES: list[tuple[ResourceType, Body, Path, Any]] = [
    (PODS, _pod(restartPolicy="", dnsPolicy="", **_ADMITTED), ("spec", "restartPolicy"),
     "Always"),
    (PODS, _pod(container={"imagePullPolicy": "", "terminationMessagePolicy": ""},
                **_ADMITTED), (*_C, "imagePullPolicy"), "IfNotPresent"),
    (SERVICES, _service(type="", port={"targetPort": 0, "protocol": ""}), ("spec", "ports", 0),
     {"name": "http", "port": 80, "targetPort": 80, "protocol": "TCP"}),
    (SECRETS, {"metadata": {"name": "s"}, "type": ""}, ("type",), "Opaque"),
    (ROLE_BINDINGS, _binding(apiGroup=""), ("roleRef", "apiGroup"), "rbac.authorization.k8s.io"),
]


@pytest.mark.parametrize(("rt", "body", "path", "expected"), _UPDATES,
                         ids=[rt.kind for rt, *_ in _UPDATES])
def test_an_update_and_a_merge_patch_are_defaulted_the_same_way(
        core: Core, rt: ResourceType, body: Body, path: Path, expected: Any) -> None:
    """A Go client's GET, change, PUT keeps its zero values: the update is defaulted (and for a
    pod, whose spec is immutable, so is the stored spec it is compared with)."""
    ns = _namespace_of(rt)
    created = core.store.create(rt, ns, copy.deepcopy(body)).entry.obj
    name = created["metadata"]["name"]
    updated = core.store.update(rt, ns, name, copy.deepcopy(body)).entry.obj
    assert _at(updated, path) == expected
    patched = core.store.patch(rt, ns, name, "application/merge-patch+json",
                               b'{"metadata": {"labels": {"patched": "yes"}}}').entry.obj
    assert _at(patched, path) == expected


def test_a_strategic_merge_patch_to_a_zero_target_port_targets_the_port(core: Core) -> None:
    core.store.create(SERVICES, "default", _service(port={"targetPort": 8080}))
    patch = b'{"spec": {"ports": [{"port": 80, "targetPort": 0, "protocol": ""}]}}'
    stored = core.store.patch(SERVICES, "default", "s", "application/strategic-merge-patch+json",
                              patch).entry.obj
    assert stored["spec"]["ports"] == [
        {"name": "http", "port": 80, "targetPort": 80, "protocol": "TCP"}
    ]


def test_a_pod_patched_with_zero_values_is_not_a_forbidden_spec_change(core: Core) -> None:
    core.store.create(PODS, "default", _pod())
    patch = (b'{"spec": {"restartPolicy": "", "dnsPolicy": "", "containers": '
             b'[{"name": "main", "imagePullPolicy": "", "terminationMessagePath": ""}]}}')
    stored = core.store.patch(PODS, "default", "p", "application/strategic-merge-patch+json",
                              patch).entry.obj
    assert stored["spec"]["restartPolicy"] == "Always"
    assert stored["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"


def test_validation_runs_after_defaulting(core: Core) -> None:
    """A zero that no defaulter reads as unset still meets validation, as upstream."""
    with pytest.raises(ApiError) as caught:
        core.store.create(SERVICES, "default", _service(port={"port": 0, "targetPort": 0}))
    assert caught.value.code == 422
    assert [cause.field for cause in caught.value.causes] == [
        "spec.ports[0].port", "spec.ports[0].targetPort"
    ]
    with pytest.raises(ApiError) as caught:
        core.store.create(PRIORITY_CLASSES, "", {"metadata": {"name": "p"},
                                                 "preemptionPolicy": ""})
    assert caught.value.code == 422


def test_a_pod_stored_before_a_default_existed_may_still_be_updated() -> None:
    """kube-apiserver defaults what it reads from storage, so the update rule compares the
    new spec with the stored one as defaulted today."""
    old = _volume(secret={"secretName": "s"})
    new = pod_defaults(copy.deepcopy(old), creating=False)
    assert new["spec"]["volumes"][0]["secret"]["defaultMode"] == 420
    assert validate_immutable("Pod", new, old) == []


@pytest.mark.parametrize(("image", "policy"), [
    ("busybox", "Always"),
    ("busybox:latest", "Always"),
    ("busybox:1.36", "IfNotPresent"),
    ("registry.local:5000/team/app", "Always"),
    ("registry.local:5000/team/app:v2", "IfNotPresent"),
    ("busybox@sha256:" + "a" * 64, "IfNotPresent"),
    ("busybox:latest@sha256:" + "a" * 64, "Always"),
    ("Busybox", "IfNotPresent"),  # not a reference: the tag is unknown
    ("", "IfNotPresent"),
])
def test_the_image_pull_policy_follows_the_tag_as_upstream_parses_it(image: str,
                                                                      policy: str) -> None:
    assert image_pull_policy(image) == policy


# The property: valid bodies of every served kind, and optional fields each may carry at the
# zero value Go's encoder writes for it (value fields) or null (pointer fields).
_VALID: dict[str, tuple[ResourceType, Callable[[], Body]]] = {
    "Pod": (PODS, _pod),
    "Service": (SERVICES, _service),
    "ConfigMap": (CONFIGMAPS, lambda: {"metadata": {"name": "c"}, "data": {"k": "v"}}),
    "Secret": (SECRETS, lambda: {"metadata": {"name": "s"}, "data": {"k": "dg=="}}),
    "Namespace": (NAMESPACES, lambda: {"metadata": {"name": "n"}}),
    "Event": (EVENTS, lambda: {"metadata": {"name": "e"}, "reason": "R", "message": "m",
                               "involvedObject": {"kind": "Pod", "name": "p"}}),
    "Node": (NODES, lambda: {"metadata": {"name": "n"}}),
    "ControllerRevision": (CONTROLLER_REVISIONS,
                           lambda: {"metadata": {"name": "r"}, "data": {"a": 1}, "revision": 1}),
    "Lease": (LEASES, lambda: {"metadata": {"name": "l"}, "spec": {"holderIdentity": "me"}}),
    "PriorityClass": (PRIORITY_CLASSES, lambda: {"metadata": {"name": "p"}, "value": 10}),
    "ServiceAccount": (SERVICE_ACCOUNTS, lambda: {"metadata": {"name": "sa"}}),
    "Role": (ROLES, lambda: {"metadata": {"name": "r"}, "rules": [
        {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]}),
    "ClusterRole": (CLUSTER_ROLES, lambda: {"metadata": {"name": "r"}, "rules": [
        {"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]}),
    "RoleBinding": (ROLE_BINDINGS, _binding),
    "ClusterRoleBinding": (CLUSTER_ROLE_BINDINGS, lambda: {
        "metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "default"}]}),
    "CustomResourceDefinition": (CRDS, _crd),
}
_META: list[tuple[Path, Any]] = [
    (("metadata", key), zero) for key, zero in (
        ("creationTimestamp", None), ("deletionTimestamp", None), ("uid", ""),
        ("resourceVersion", ""), ("generation", 0), ("generateName", ""), ("namespace", ""),
        ("selfLink", ""), ("labels", None), ("annotations", None), ("finalizers", None),
        ("ownerReferences", None), ("managedFields", None), ("deletionGracePeriodSeconds", None),
    )
]
_POD_SPEC = {
    **dict.fromkeys(("restartPolicy", "dnsPolicy", "schedulerName", "serviceAccountName",
                     "serviceAccount", "nodeName", "hostname", "subdomain",
                     "priorityClassName"), ""),
    **dict.fromkeys(("hostNetwork", "hostPID", "hostIPC"), False),
    **dict.fromkeys(("volumes", "initContainers", "ephemeralContainers", "nodeSelector",
                     "tolerations", "securityContext", "terminationGracePeriodSeconds",
                     "activeDeadlineSeconds", "affinity", "runtimeClassName",
                     "enableServiceLinks", "preemptionPolicy", "priority", "setHostnameAsFQDN",
                     "os", "hostUsers", "schedulingGates", "overhead", "readinessGates",
                     "imagePullSecrets", "dnsConfig", "hostAliases", "resources",
                     "topologySpreadConstraints", "automountServiceAccountToken",
                     "shareProcessNamespace", "resourceClaims"), None),
}
_CONTAINER = {
    **dict.fromkeys(("imagePullPolicy", "terminationMessagePath", "terminationMessagePolicy",
                     "workingDir"), ""),
    **dict.fromkeys(("stdin", "stdinOnce", "tty"), False),
    "resources": {},
    **dict.fromkeys(("command", "args", "env", "envFrom", "ports", "volumeMounts",
                     "volumeDevices", "livenessProbe", "readinessProbe", "startupProbe",
                     "lifecycle", "securityContext", "restartPolicy", "resizePolicy"), None),
}
_SERVICE_SPEC = {
    **dict.fromkeys(("type", "sessionAffinity", "clusterIP", "externalName",
                     "externalTrafficPolicy", "loadBalancerIP"), ""),
    "publishNotReadyAddresses": False, "healthCheckNodePort": 0,
    **dict.fromkeys(("ipFamilyPolicy", "internalTrafficPolicy", "allocateLoadBalancerNodePorts",
                     "loadBalancerClass", "sessionAffinityConfig", "clusterIPs", "externalIPs",
                     "ipFamilies", "loadBalancerSourceRanges", "trafficDistribution"), None),
}
_NODE_INFO = dict.fromkeys(("machineID", "systemUUID", "bootID", "kernelVersion", "osImage",
                            "containerRuntimeVersion", "kubeletVersion", "kubeProxyVersion",
                            "operatingSystem", "architecture"), "")
_OPTIONAL: dict[str, list[tuple[Path, Any]]] = {
    "Pod": [(("status",), {}), *((("spec", k), v) for k, v in _POD_SPEC.items()),
            *(((*_C, k), v) for k, v in _CONTAINER.items())],
    "Service": [(("status",), {"loadBalancer": {}}),
                *((("spec", k), v) for k, v in _SERVICE_SPEC.items()),
                *((("spec", "ports", 0, k), v) for k, v in (
                    ("protocol", ""), ("targetPort", 0), ("nodePort", 0), ("appProtocol", None)))],
    "ConfigMap": [(("binaryData",), None), (("immutable",), None)],
    "Secret": [(("type",), ""), (("stringData",), None), (("immutable",), None)],
    "Namespace": [(("spec",), {}), (("status",), {}), (("spec", "finalizers"), None),
                  (("status", "phase"), "")],
    "Event": [(("source",), {}), (("firstTimestamp",), None), (("lastTimestamp",), None),
              (("eventTime",), None), (("count",), 0), (("type",), ""), (("action",), ""),
              (("related",), None), (("series",), None), (("reportingComponent",), ""),
              (("reportingInstance",), ""), (("involvedObject", "uid"), ""),
              (("involvedObject", "apiVersion"), ""), (("involvedObject", "fieldPath"), "")],
    "Node": [(("spec",), {}), (("spec", "unschedulable"), False), (("spec", "podCIDR"), ""),
             (("spec", "providerID"), ""), (("spec", "taints"), None),
             (("status",), {"daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
                            "nodeInfo": _NODE_INFO})],
    "ControllerRevision": [],
    "Lease": [(("spec", key), None) for key in (
        "leaseDurationSeconds", "acquireTime", "renewTime", "leaseTransitions", "strategy",
        "preferredHolder")],
    "PriorityClass": [(("globalDefault",), False), (("description",), ""),
                      (("preemptionPolicy",), None)],
    "ServiceAccount": [(("secrets",), None), (("imagePullSecrets",), None),
                       (("automountServiceAccountToken",), None)],
    "Role": [(("rules", 0, "resourceNames"), None), (("rules", 0, "nonResourceURLs"), None)],
    "ClusterRole": [(("aggregationRule",), None), (("rules", 0, "apiGroups"), None),
                    (("rules", 0, "resources"), None)],
    "RoleBinding": [(("roleRef", "apiGroup"), ""), (("subjects", 0, "namespace"), "")],
    "ClusterRoleBinding": [(("roleRef", "apiGroup"), ""), (("subjects", 0, "apiGroup"), "")],
    "CustomResourceDefinition": [
        (("status",), {"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": None}),
        (("spec", "names", "singular"), ""), (("spec", "names", "listKind"), ""),
        (("spec", "names", "shortNames"), None), (("spec", "names", "categories"), None),
        (("spec", "conversion"), None), (("spec", "preserveUnknownFields"), False),
        (("spec", "versions", 0, "deprecated"), False),
        (("spec", "versions", 0, "deprecationWarning"), None),
        (("spec", "versions", 0, "subresources"), None),
        (("spec", "versions", 0, "additionalPrinterColumns"), None),
    ],
}


def _with_zero(body: Body, path: Path, zero: Any) -> None:
    """Set `path` to `zero` unless the valid body has a value there (only added fields)."""
    parent: Any = body
    for step in path[:-1]:
        parent = parent[step] if isinstance(step, int) else parent.setdefault(step, {})
    if path[-1] not in parent:
        parent[path[-1]] = copy.deepcopy(zero)


_ZERO_BODIES = st.sampled_from(sorted(_VALID)).flatmap(lambda kind: st.tuples(
    st.just(kind),
    st.lists(st.sampled_from(_META + _OPTIONAL[kind]), unique_by=lambda pair: pair[0]),
))
_SHARED: list[Core] = []


def _shared_core() -> Core:
    """One store for every example (creating it per example would dominate the run); each
    example's object gets a name of its own."""
    if not _SHARED:
        _SHARED.append(make_core(ManualReactor()))
    return _SHARED[0]


@settings(max_examples=300, deadline=None)
@given(_ZERO_BODIES)
def test_zero_valued_optional_fields_never_turn_a_create_into_a_client_error(
        case: tuple[str, list[tuple[Path, Any]]]) -> None:
    kind, zeros = case
    rt, valid = _VALID[kind]
    body = valid()
    suffix = str(next(_NAMES))
    if rt is CRDS:
        body["spec"]["names"]["plural"] = plural = f"gizmos{suffix}"
        body["metadata"]["name"] = f"{plural}.example.com"
        body["spec"]["names"]["kind"] = f"Gizmo{suffix}"
    else:
        body["metadata"]["name"] += suffix
    for path, zero in zeros:
        _with_zero(body, path, zero)
    try:
        _shared_core().store.create(rt, _namespace_of(rt), body)
    except ApiError as error:
        pytest.fail(f"{kind} with {zeros}: {error} {error.causes}")


@pytest.mark.parametrize(("value", "rounded"), [
    ("0.0001", "1m"), ("10u", "1m"), ("1n", "1m"), (0.0001, "1m"), ("-0.0001", "-1m"),
    ("1.0001", "1001m"), ("999.9999", "1k"), ("1e-4", "1e-3"), ("1.0000001Ki", "1024001m"),
    ("1m", None), ("0.5", None), ("2", None), (2, None), ("1Gi", None), ("0", None),
    ("many", None),
])
def test_quantities_finer_than_milli_units_round_up_as_quantity_round_up_does(
        value: object, rounded: str | None) -> None:
    """Quantity.RoundUp(-3), written canonically: away from zero, the largest SI suffix that
    keeps the number whole, an exponent kept an exponent; what needs no rounding (or is no
    quantity) is left as sent."""
    assert milli_rounded(value) == rounded


def _status_write(core: Core, rt: ResourceType, name: str, status: Body, how: str) -> Body:
    ns = _namespace_of(rt)
    if how == "update":
        live = copy.deepcopy(core.store.get(rt, ns, name).obj)
        live["status"] = status
        return core.store.update(rt, ns, name, live, subresource="status").entry.obj
    patch = json.dumps({"status": status}).encode()
    return core.store.patch(rt, ns, name, "application/merge-patch+json", patch,
                            subresource="status").entry.obj


@pytest.mark.parametrize("how", ["update", "patch"])
def test_a_status_write_is_defaulted_as_the_whole_object_is(core: Core, how: str) -> None:
    """kube-apiserver decodes, and so defaults, the whole object on a `/status` write."""
    core.store.create(NODES, "", {"metadata": {"name": "n"}})
    node = _status_write(core, NODES, "n", {"capacity": {"cpu": "0.0001", "pods": "110"}}, how)
    assert node["status"]["capacity"] == {"cpu": "1m", "pods": "110"}
    assert node["status"]["allocatable"] == {"cpu": "1m", "pods": "110"}
    core.store.create(PODS, "default", _pod())
    status = {"phase": "Running", "containerStatuses": [
        {"name": "main", "allocatedResources": {"memory": "0.0001"},
         "resources": {"limits": {"cpu": "1.0001"}, "requests": {"cpu": "1m"}}}]}
    pod = _status_write(core, PODS, "p", status, how)
    assert pod["status"]["containerStatuses"][0] == {
        "name": "main", "allocatedResources": {"memory": "1m"},
        "resources": {"limits": {"cpu": "1001m"}, "requests": {"cpu": "1m"}}}
    assert pod["spec"]["restartPolicy"] == "Always"


def _node_ports(service: Body) -> list[int]:
    return [port["nodePort"] for port in service["spec"]["ports"]]


def _nodeport_service(name: str, *ports: Body, **spec: Any) -> Body:
    return {"metadata": {"name": name},
            "spec": {"type": "NodePort", "selector": {"app": "a"}, "ports": list(ports), **spec}}


def test_a_node_port_service_gets_free_node_ports(core: Core) -> None:
    body = _nodeport_service("s", {"name": "dns", "port": 53, "nodePort": 0},
                             {"name": "dns-udp", "port": 53, "protocol": "UDP"},
                             {"name": "web", "port": 80})
    stored = core.store.create(SERVICES, "default", body).entry.obj
    dns, dns_udp, web = _node_ports(stored)
    assert dns in NODE_PORTS and web in NODE_PORTS
    assert dns_udp == dns != web  # one port number, one node port (initNodePorts)
    balancer = core.store.create(SERVICES, "default", _nodeport_service(
        "lb", {"port": 80}, type="LoadBalancer", externalTrafficPolicy="Local",
        healthCheckNodePort=0)).entry.obj
    ports = {*_node_ports(balancer), balancer["spec"]["healthCheckNodePort"]}
    assert len(ports) == 2 and ports <= set(NODE_PORTS) and not ports & {dns, web}


def test_no_node_ports_for_other_types_or_a_balancer_that_allocates_none(core: Core) -> None:
    plain = core.store.create(SERVICES, "default", _service()).entry.obj
    balancer = core.store.create(SERVICES, "default", _nodeport_service(
        "lb", {"port": 80, "nodePort": 0}, type="LoadBalancer",
        allocateLoadBalancerNodePorts=False)).entry.obj
    assert "nodePort" not in plain["spec"]["ports"][0]
    assert balancer["spec"]["ports"][0]["nodePort"] == 0
    assert "healthCheckNodePort" not in balancer["spec"]


def test_a_node_port_in_use_or_out_of_range_is_refused(core: Core) -> None:
    core.store.create(SERVICES, "default", _nodeport_service("a", {"port": 80,
                                                                   "nodePort": 30080}))
    for port, reason in ((30080, "provided port is already allocated"),
                         (8080, "provided port is not in the valid range. The range of valid "
                                "ports is 30000-32767")):
        with pytest.raises(ApiError) as caught:
            core.store.create(SERVICES, "default", _nodeport_service(
                "b", {"name": "x", "port": 81}, {"name": "y", "port": 82, "nodePort": port}))
        assert caught.value.code == 422
        assert caught.value.message == (f'Service "b" is invalid: spec.ports[1].nodePort: '
                                        f"Invalid value: {port}: {reason}")
    with pytest.raises(ApiError) as caught:
        core.store.create(SERVICES, "default", _nodeport_service(
            "c", {"port": 80}, type="LoadBalancer", externalTrafficPolicy="Local",
            healthCheckNodePort=30080))
    assert caught.value.code == 500
    assert caught.value.message == ("Internal error occurred: failed to allocate requested "
                                    "HealthCheck NodePort 30080: provided port is already "
                                    "allocated")


def test_an_update_keeps_the_node_ports_a_client_leaves_out(core: Core) -> None:
    created = core.store.create(SERVICES, "default", _nodeport_service(
        "s", {"name": "web", "port": 80})).entry.obj
    body = _nodeport_service("s", {"name": "web", "port": 80, "nodePort": 0},
                             {"name": "new", "port": 81})
    updated = core.store.update(SERVICES, "default", "s", body).entry.obj
    kept, added = _node_ports(updated)
    assert kept == _node_ports(created)[0] and added in NODE_PORTS and added != kept


def test_node_ports_are_released_on_delete_and_on_a_change_of_type(core: Core) -> None:
    def taken(name: str, port: int) -> bool:
        try:
            core.store.create(SERVICES, "default", _nodeport_service(
                name, {"port": 80, "nodePort": port}), dry_run=True)
        except ApiError:
            return True
        return False

    core.store.create(SERVICES, "default", _nodeport_service("a", {"port": 80,
                                                                   "nodePort": 30001}))
    core.store.create(SERVICES, "default", _nodeport_service(
        "b", {"port": 80, "nodePort": 30002}, type="LoadBalancer",
        externalTrafficPolicy="Local", healthCheckNodePort=30003))
    assert taken("x", 30001) and taken("x", 30002) and taken("x", 30003)
    delete(core.store, SERVICES, "default", "a", DeleteOptions())
    assert not taken("x", 30001)
    patch = b'{"spec": {"type": "ClusterIP", "externalTrafficPolicy": null}}'
    stored = core.store.patch(SERVICES, "default", "b", "application/merge-patch+json",
                              patch).entry.obj
    assert "nodePort" not in stored["spec"]["ports"][0]
    assert "healthCheckNodePort" not in stored["spec"]
    assert not taken("x", 30002) and not taken("x", 30003)
