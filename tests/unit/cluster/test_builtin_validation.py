"""Built-in kinds: metadata, per-kind fields and the fields an update may not change."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from engine.cluster.apiserver.validation.builtin_validation import (
    validate_builtin,
    validate_immutable,
)


def _pod(**spec: Any) -> dict[str, Any]:
    base = {"containers": [{"name": "main", "image": "busybox"}]}
    return {"metadata": {"name": "web-0", "namespace": "default"}, "spec": {**base, **spec}}


def _crd(**spec: Any) -> dict[str, Any]:
    base = {
        "group": "stable.example.com",
        "scope": "Namespaced",
        "names": {
            "plural": "widgets",
            "singular": "widget",
            "kind": "Widget",
            "listKind": "WidgetList",
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object"}},
            }
        ],
    }
    return {"metadata": {"name": "widgets.stable.example.com"}, "spec": {**base, **spec}}


def _fields(kind: str, obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    return [f"{c.field}: {c.message}" for c in validate_builtin(kind, obj, old)]


def _has(messages: list[str], fragment: str) -> bool:
    return any(fragment in m for m in messages)


@pytest.mark.parametrize(
    ("kind", "obj"),
    [
        ("Pod", _pod(restartPolicy="Never")),
        (
            "Service",
            {"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80, "targetPort": "http"}]}},
        ),
        ("Service", {"metadata": {"name": "web"}, "spec": {"clusterIP": "None"}}),
        ("Namespace", {"metadata": {"name": "team-a"}}),
        ("ConfigMap", {"metadata": {"name": "cfg"}, "data": {"app.yaml": "x", "KEY_1": "y"}}),
        (
            "Event",
            {
                "metadata": {"name": "web-0.1", "namespace": "default"},
                "involvedObject": {"kind": "Pod", "name": "web-0"},
            },
        ),
        ("Lease", {"metadata": {"name": "leader"}, "spec": {"leaseDurationSeconds": 15}}),
        ("Node", {"metadata": {"name": "node-1"}, "spec": {"podCIDRs": ["10.0.0.0/24"]}}),
        ("CustomResourceDefinition", _crd()),
        (
            "Pod",
            {
                "metadata": {"generateName": "web-"},
                "spec": {"containers": [{"name": "a", "image": "i"}]},
            },
        ),
    ],
)
def test_valid_objects(kind: str, obj: dict[str, Any]) -> None:
    assert _fields(kind, obj) == []


@pytest.mark.parametrize(
    ("meta", "fragment"),
    [
        ({}, "metadata.name: Required value: name or generateName is required"),
        (
            {"name": "Web_0"},
            'metadata.name: Invalid value: "Web_0": a lowercase RFC 1123 subdomain',
        ),
        ({"generateName": "Web-"}, "metadata.generateName: Invalid value"),
        ({"name": "a", "namespace": "Bad"}, "metadata.namespace: Invalid value"),
        (
            {"name": "a", "labels": {"k@y": "v"}},
            'metadata.labels: Invalid value: "k@y": name part must consist',
        ),
        (
            {"name": "a", "labels": {"k": "v v"}},
            'metadata.labels: Invalid value: "v v": a valid label must',
        ),
        ({"name": "a", "annotations": {"a/b/c": "x"}}, "metadata.annotations: Invalid value"),
        ({"name": "a", "annotations": {"big": "x" * 300_000}}, "metadata.annotations: Too long"),
        ({"name": "a", "finalizers": ["a b"]}, "metadata.finalizers[0]: Invalid value"),
        (
            {"name": "a", "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "x"}]},
            "metadata.ownerReferences[0].uid: Required value",
        ),
    ],
)
def test_metadata_errors(meta: dict[str, Any], fragment: str) -> None:
    assert _has(_fields("ConfigMap", {"metadata": meta}), fragment)


def test_namespace_and_service_name_rules() -> None:
    assert _has(_fields("Namespace", {"metadata": {"name": "a.b"}}), "RFC 1123 label")
    service = {"metadata": {"name": "1web"}, "spec": {"clusterIP": "None"}}
    assert _has(_fields("Service", service), "DNS-1035 label")
    assert _fields("ConfigMap", {"metadata": {"name": "a.b"}}) == []


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ({"containers": []}, "spec.containers: Required value"),
        ({"containers": [{"image": "i"}]}, "spec.containers[0].name: Required value"),
        (
            {"containers": [{"name": "Main", "image": "i"}]},
            'spec.containers[0].name: Invalid value: "Main"',
        ),
        ({"containers": [{"name": "a"}]}, "spec.containers[0].image: Required value"),
        (
            {"containers": [{"name": "a", "image": "i"}, {"name": "a", "image": "i"}]},
            'spec.containers[1].name: Duplicate value: "a"',
        ),
        (
            {"initContainers": [{"name": "main", "image": "i"}]},
            'spec.containers[0].name: Duplicate value: "main"',
        ),
        (
            {"restartPolicy": "Sometimes"},
            'spec.restartPolicy: Unsupported value: "Sometimes": supported values: '
            '"Always", "OnFailure", "Never"',
        ),
        (
            {"containers": [{"name": "a", "image": "i", "ports": [{"containerPort": 70000}]}]},
            "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must "
            "be between 1 and 65535, inclusive",
        ),
        (
            {
                "containers": [
                    {
                        "name": "a",
                        "image": "i",
                        "ports": [{"containerPort": 80, "protocol": "HTTP"}],
                    }
                ]
            },
            "ports[0].protocol: Unsupported value",
        ),
        (
            {
                "containers": [
                    {
                        "name": "a",
                        "image": "i",
                        "ports": [{"containerPort": 80, "name": "Http_Port"}],
                    }
                ]
            },
            "ports[0].name: Invalid value",
        ),
        (
            {"containers": [{"name": "a", "image": "i", "env": [{"value": "x"}]}]},
            "spec.containers[0].env[0].name: Required value",
        ),
        ({"volumes": [{"name": "v"}, {"name": "v"}]}, 'spec.volumes[1].name: Duplicate value: "v"'),
    ],
)
def test_pod_errors(spec: dict[str, Any], fragment: str) -> None:
    pod = _pod()
    pod["spec"].update(spec)
    assert _has(_fields("Pod", pod), fragment), _fields("Pod", pod)


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ({}, "spec.ports: Required value"),
        (
            {"ports": [{"port": 0}]},
            "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535",
        ),
        ({"ports": [{"port": 80}, {"port": 81}]}, "spec.ports[0].name: Required value"),
        (
            {"ports": [{"port": 80, "name": "a"}, {"port": 81, "name": "a"}]},
            'spec.ports[1].name: Duplicate value: "a"',
        ),
        ({"ports": [{"port": 80, "targetPort": 0}]}, "spec.ports[0].targetPort: Invalid value: 0"),
        (
            {"ports": [{"port": 80}], "clusterIP": "abc"},
            "must be empty, 'None', or a valid IP address",
        ),
        ({"ports": [{"port": 80}], "type": "Magic"}, 'spec.type: Unsupported value: "Magic"'),
    ],
)
def test_service_errors(spec: dict[str, Any], fragment: str) -> None:
    assert _has(_fields("Service", {"metadata": {"name": "web"}, "spec": spec}), fragment)


def test_configmap_event_lease_node_errors() -> None:
    assert _has(
        _fields("ConfigMap", {"metadata": {"name": "c"}, "data": {"a b": "x"}}),
        "data[a b]: Invalid value",
    )
    assert _has(
        _fields("ConfigMap", {"metadata": {"name": "c"}, "data": {"..x": "1"}}),
        "must not start with '..'",
    )
    assert _has(
        _fields(
            "ConfigMap",
            {"metadata": {"name": "c"}, "data": {"k": "1"}, "binaryData": {"k": "MQ=="}},
        ),
        "duplicate of key present in binaryData",
    )
    assert _has(_fields("Event", {"metadata": {"name": "e"}}), "involvedObject: Required value")
    mismatch = {"metadata": {"name": "e", "namespace": "a"}, "involvedObject": {"namespace": "b"}}
    assert _has(_fields("Event", mismatch), "does not match event.namespace")
    assert _has(
        _fields("Lease", {"metadata": {"name": "l"}, "spec": {"leaseDurationSeconds": 0}}),
        "must be greater than 0",
    )
    assert _has(
        _fields("Node", {"metadata": {"name": "n"}, "spec": {"podCIDRs": ["nope"]}}), "valid CIDR"
    )
    assert _has(
        _fields(
            "Node", {"metadata": {"name": "n"}, "spec": {"taints": [{"key": "k", "effect": "Bad"}]}}
        ),
        "effect: Unsupported",
    )


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"group": ""}, "spec.group: Required value"),
        ({"group": "nodots"}, "should be a domain with at least one dot"),
        ({"scope": "Galaxy"}, 'spec.scope: Unsupported value: "Galaxy"'),
        ({"scope": None}, "spec.scope: Required value"),
        ({"names": {"kind": "Widget"}}, "spec.names.plural: Required value"),
        ({"names": {"plural": "widgets"}}, "spec.names.kind: Required value"),
        (
            {"names": {"plural": "widgets", "kind": "W", "listKind": "W"}},
            "kind and listKind may not be the same",
        ),
        (
            {"names": {"plural": "gadgets", "kind": "G"}},
            'metadata.name: Invalid value: "widgets.stable.example.com": must be '
            'spec.names.plural+"."+spec.group',
        ),
        ({"versions": []}, "spec.versions: Required value: must have at least one version"),
        (
            {
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": False,
                        "schema": {"openAPIV3Schema": {"type": "object"}},
                    }
                ]
            },
            "must have exactly one version marked as storage version",
        ),
        (
            {"versions": [{"name": "v1", "served": True, "storage": True}]},
            "spec.versions[0].schema.openAPIV3Schema: Required value",
        ),
        (
            {
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "schema": {
                            "openAPIV3Schema": {"type": "object", "properties": {"spec": {}}}
                        },
                    }
                ]
            },
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value",
        ),
        (
            {
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "schema": {"openAPIV3Schema": {"type": "object"}},
                    },
                    {
                        "name": "v1",
                        "served": True,
                        "storage": False,
                        "schema": {"openAPIV3Schema": {"type": "object"}},
                    },
                ]
            },
            'spec.versions[1].name: Duplicate value: "v1"',
        ),
    ],
)
def test_crd_errors(change: dict[str, Any], fragment: str) -> None:
    crd = _crd()
    crd["spec"].update(change)
    assert _has(_fields("CustomResourceDefinition", crd), fragment), _fields(
        "CustomResourceDefinition", crd
    )


def test_pod_updates() -> None:
    old = _pod(tolerations=[{"key": "a", "operator": "Exists"}])
    new = copy.deepcopy(old)
    new["spec"]["containers"][0]["image"] = "busybox:2"
    new["spec"]["activeDeadlineSeconds"] = 30
    new["spec"]["tolerations"].append({"key": "b", "operator": "Exists"})
    assert validate_immutable("Pod", new, old) == []
    new["spec"]["restartPolicy"] = "Never"
    assert _has(
        _fields("Pod", new, old), "spec: Forbidden: pod updates may not change fields other than"
    )
    dropped = copy.deepcopy(old)
    dropped["spec"]["tolerations"] = []
    assert validate_immutable("Pod", dropped, old) != []


def test_service_configmap_crd_updates() -> None:
    old = {"metadata": {"name": "web"}, "spec": {"clusterIP": "10.0.0.1", "ports": [{"port": 80}]}}
    new = copy.deepcopy(old)
    assert validate_immutable("Service", new, old) == []
    new["spec"]["clusterIP"] = "10.0.0.2"
    assert _has(
        _fields("Service", new, old),
        'spec.clusterIP: Invalid value: "10.0.0.2": field is immutable',
    )
    cm = {"metadata": {"name": "c"}, "data": {"a": "1"}, "immutable": True}
    changed = {**cm, "data": {"a": "2"}}
    assert _has(
        _fields("ConfigMap", changed, cm),
        "data: Forbidden: field is immutable when `immutable` is set",
    )
    assert _has(_fields("ConfigMap", {**cm, "immutable": False}, cm), "immutable: Forbidden")
    crd = _crd()
    regrouped = copy.deepcopy(crd)
    regrouped["spec"]["group"] = "other.example.com"
    assert _has(
        [c.message for c in validate_immutable("CustomResourceDefinition", regrouped, crd)],
        "field is immutable",
    )
    assert (
        validate_immutable("Namespace", {"metadata": {"name": "a"}}, {"metadata": {"name": "a"}})
        == []
    )
