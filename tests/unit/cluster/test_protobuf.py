"""Decoding Kubernetes protobuf request bodies into the JSON objects they encode.

The files under protobuf_samples/ are the exact bytes kubectl 1.32 sent to
the embedded server (captured through a recording proxy) for the commands in
their names; the hand-built cases cover what those commands never send.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.cluster.apiserver.encoding.protobuf import (
    PROTOBUF_CONTENT_TYPE,
    ProtobufError,
    UnsupportedKindError,
    decode_request,
)

SAMPLES = Path(__file__).parent / "protobuf_samples"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def sample(name: str) -> dict[str, Any]:
    return decode_request((SAMPLES / f"{name}.bin").read_bytes())


# A minimal protobuf writer, so hand-built bodies read as field number -> value.
def varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def num(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def ld(number: int, value: bytes | str) -> bytes:
    data = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(data)) + data


def entry(number: int, key: str, value: bytes | str) -> bytes:
    return ld(number, ld(1, key) + ld(2, value))


def envelope(api_version: str, kind: str, raw: bytes, *, extra: bytes = b"") -> bytes:
    type_meta = ld(1, api_version) + ld(2, kind)
    return b"k8s\x00" + ld(1, type_meta) + ld(2, raw) + ld(3, "") + ld(4, "") + extra


# kubectl's own captured bodies


def test_content_type_is_the_kubernetes_protobuf_media_type() -> None:
    assert PROTOBUF_CONTENT_TYPE == "application/vnd.kubernetes.protobuf"


def test_kubectl_create_namespace() -> None:
    assert sample("create-namespace") == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "team"},
        "spec": {},
        "status": {},
    }


def test_kubectl_create_configmap_from_literals() -> None:
    assert sample("create-configmap-from-literal") == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "team"},
        "data": {"b": "2", "mode": "fast"},
    }


def test_kubectl_create_configmap_with_hash_suffix() -> None:
    assert sample("create-configmap-append-hash") == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "hashed-kffmg8fm6h"},
        "data": {"x": "y"},
    }


def test_kubectl_create_configmap_from_files_keeps_binary_data_as_base64() -> None:
    obj = sample("create-configmap-from-files-save-config")
    annotations = obj["metadata"].pop("annotations")
    assert obj == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "files"},
        "data": {"greeting.txt": "hello\nworld\n"},
        "binaryData": {"blob.bin": "AAH//mJpbmFyeQ=="},
    }
    assert list(annotations) == [LAST_APPLIED]


@pytest.mark.parametrize(
    "name",
    [
        "create-namespace-save-config",
        "create-configmap-from-files-save-config",
        "create-configmap-from-env-file-save-config",
    ],
)
def test_decoded_object_equals_the_json_go_wrote_for_it(name: str) -> None:
    # With --save-config kubectl stores Go's own JSON encoding of the object it
    # then sends as protobuf; the two must agree (Go writes the zero time as null).
    obj = sample(name)
    go_json = json.loads(obj["metadata"]["annotations"].pop(LAST_APPLIED))
    assert go_json["metadata"].pop("creationTimestamp") is None
    if not obj["metadata"]["annotations"]:
        del obj["metadata"]["annotations"]
    assert obj == go_json


def _service(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"selector": {"app": name}, **spec},
        "status": {"loadBalancer": {}},
    }


def test_kubectl_create_service_clusterip() -> None:
    port = {"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080}
    assert sample("create-service-clusterip") == _service(
        "web", {"ports": [port], "type": "ClusterIP"}
    )


def test_kubectl_create_service_headless() -> None:
    assert sample("create-service-clusterip-headless") == _service(
        "headless", {"clusterIP": "None", "type": "ClusterIP"}
    )


def test_kubectl_create_service_nodeport_with_named_target_port() -> None:
    ports = [
        {"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080, "nodePort": 30080},
        {
            "name": "443-https",
            "protocol": "TCP",
            "port": 443,
            "targetPort": "https",
            "nodePort": 30080,
        },
    ]
    assert sample("create-service-nodeport") == _service("np", {"ports": ports, "type": "NodePort"})


def test_kubectl_create_service_loadbalancer() -> None:
    port = {"name": "5678-8080", "protocol": "TCP", "port": 5678, "targetPort": 8080}
    assert sample("create-service-loadbalancer") == _service(
        "lb", {"ports": [port], "type": "LoadBalancer"}
    )


def test_kubectl_create_service_externalname() -> None:
    port = {"name": "80", "protocol": "TCP", "port": 80, "targetPort": 80}
    assert sample("create-service-externalname") == _service(
        "ext", {"ports": [port], "type": "ExternalName", "externalName": "example.com"}
    )


def test_kubectl_drain_delete_options() -> None:
    assert sample("drain-delete-pod-options") == {
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "gracePeriodSeconds": 5,
    }


# hand-built bodies


def test_object_meta_with_every_field() -> None:
    owner = ld(5, "batch/v1") + ld(1, "Job") + ld(3, "j") + ld(4, "u-1") + num(6, 1) + num(7, 0)
    managed = (
        ld(1, "kubectl")
        + ld(2, "Update")
        + ld(3, "v1")
        + ld(4, num(1, 1_700_000_000))
        + ld(6, "FieldsV1")
        + ld(7, ld(1, b'{"f:data":{".":{}}}'))
    )
    meta = (
        ld(1, "cm")
        + ld(2, "cm-")
        + ld(3, "ns")
        + ld(4, "")
        + ld(5, "uid-9")
        + ld(6, "42")
        + num(7, 3)
        + ld(8, num(1, 1_700_000_000) + num(2, 999_999_999))
        + ld(9, num(1, 1_700_000_060))
        + num(10, 0)
        + entry(11, "app", "web")
        + entry(11, "tier", "")
        + entry(12, "note", "hi")
        + ld(13, owner)
        + ld(14, "a/b")
        + ld(14, "c/d")
        + ld(17, managed)
        + num(99, 7)
    )
    obj = decode_request(envelope("v1", "ConfigMap", ld(1, meta)))
    assert obj == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "cm",
            "generateName": "cm-",
            "namespace": "ns",
            "uid": "uid-9",
            "resourceVersion": "42",
            "generation": 3,
            "creationTimestamp": "2023-11-14T22:13:20Z",
            "deletionTimestamp": "2023-11-14T22:14:20Z",
            "deletionGracePeriodSeconds": 0,
            "labels": {"app": "web", "tier": ""},
            "annotations": {"note": "hi"},
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": "j",
                    "uid": "u-1",
                    "controller": True,
                    "blockOwnerDeletion": False,
                }
            ],
            "finalizers": ["a/b", "c/d"],
            "managedFields": [
                {
                    "manager": "kubectl",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": "2023-11-14T22:13:20Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {".": {}}},
                }
            ],
        },
    }


def test_configmap_immutable_false_is_kept_as_go_writes_a_set_pointer() -> None:
    raw = ld(1, ld(1, "c")) + entry(3, "k", b"\x00\xff") + num(4, 0)
    assert decode_request(envelope("v1", "ConfigMap", raw)) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c"},
        "binaryData": {"k": "AP8="},
        "immutable": False,
    }


def test_namespace_status_conditions_and_finalizers() -> None:
    condition = ld(1, "NamespaceDeletionContentFailure") + ld(2, "False") + ld(4, num(1, 0))
    raw = (
        ld(1, ld(1, "gone"))
        + ld(2, ld(1, "kubernetes"))
        + ld(3, ld(1, "Terminating") + ld(2, condition))
    )
    assert decode_request(envelope("v1", "Namespace", raw)) == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "gone"},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {
            "phase": "Terminating",
            "conditions": [
                {
                    "type": "NamespaceDeletionContentFailure",
                    "status": "False",
                    "lastTransitionTime": "1970-01-01T00:00:00Z",
                }
            ],
        },
    }


def test_service_spec_pointer_fields_int_or_string_and_status() -> None:
    unset_target = ld(1, "a") + ld(2, "UDP") + num(3, 53) + ld(4, num(1, 0) + num(2, 0) + ld(3, ""))
    named_target = num(3, 443) + ld(4, num(1, 1) + ld(3, "https")) + ld(6, "kubernetes.io/h2c")
    spec = (
        ld(1, unset_target)
        + ld(1, named_target)
        + ld(3, "10.0.0.9")
        + ld(18, "10.0.0.9")
        + ld(18, "fd00::9")
        + ld(4, "LoadBalancer")
        + ld(5, "192.0.2.1")
        + ld(7, "ClientIP")
        + ld(9, "10.0.0.0/8")
        + ld(11, "Local")
        + num(12, 31000)
        + num(13, 1)
        + ld(14, ld(1, num(1, 600)))
        + ld(19, "IPv4")
        + ld(19, "IPv6")
        + ld(17, "PreferDualStack")
        + num(20, 0)
        + ld(21, "example.com/lb")
        + ld(22, "Cluster")
        + ld(23, "PreferClose")
    )
    ingress = ld(1, "203.0.113.7") + ld(3, "VIP") + ld(4, num(1, 443) + ld(2, "TCP") + ld(3, ""))
    condition = ld(1, "Ready") + ld(2, "True") + num(3, 2) + ld(4, b"") + ld(5, "Ok") + ld(6, "")
    status = ld(1, ld(1, ingress)) + ld(2, condition)
    raw = ld(1, ld(1, "svc")) + ld(2, spec) + ld(3, status)
    assert decode_request(envelope("v1", "Service", raw)) == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "svc"},
        "spec": {
            "ports": [
                {"name": "a", "protocol": "UDP", "port": 53},
                {"port": 443, "targetPort": "https", "appProtocol": "kubernetes.io/h2c"},
            ],
            "clusterIP": "10.0.0.9",
            "clusterIPs": ["10.0.0.9", "fd00::9"],
            "type": "LoadBalancer",
            "externalIPs": ["192.0.2.1"],
            "sessionAffinity": "ClientIP",
            "loadBalancerSourceRanges": ["10.0.0.0/8"],
            "externalTrafficPolicy": "Local",
            "healthCheckNodePort": 31000,
            "publishNotReadyAddresses": True,
            "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 600}},
            "ipFamilies": ["IPv4", "IPv6"],
            "ipFamilyPolicy": "PreferDualStack",
            "allocateLoadBalancerNodePorts": False,
            "loadBalancerClass": "example.com/lb",
            "internalTrafficPolicy": "Cluster",
            "trafficDistribution": "PreferClose",
        },
        "status": {
            "loadBalancer": {
                "ingress": [
                    {
                        "ip": "203.0.113.7",
                        "ipMode": "VIP",
                        "ports": [{"port": 443, "protocol": "TCP", "error": ""}],
                    }
                ]
            },
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "observedGeneration": 2,
                    "reason": "Ok",
                    "message": "",
                }
            ],
        },
    }


def test_event_with_micro_times_and_references() -> None:
    involved = ld(1, "Pod") + ld(2, "default") + ld(3, "p") + ld(4, "u") + ld(5, "v1")
    raw = (
        ld(1, ld(1, "p.1") + ld(3, "default"))
        + ld(2, involved)
        + ld(3, "Started")
        + ld(4, "started container")
        + ld(5, ld(1, "kubelet") + ld(2, "node-1"))
        + ld(6, num(1, 1_700_000_000))
        + ld(7, b"")
        + num(8, 2)
        + ld(9, "Normal")
        + ld(10, num(1, 1_700_000_000) + num(2, 123_456_789))
        + ld(11, num(1, 2) + ld(2, num(1, 1_700_000_001)))
        + ld(12, "Start")
        + ld(14, "")
        + ld(15, "")
    )
    assert decode_request(envelope("v1", "Event", raw)) == {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "p.1", "namespace": "default"},
        "involvedObject": {
            "kind": "Pod",
            "namespace": "default",
            "name": "p",
            "uid": "u",
            "apiVersion": "v1",
        },
        "reason": "Started",
        "message": "started container",
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": "2023-11-14T22:13:20Z",
        "count": 2,
        "type": "Normal",
        "eventTime": "2023-11-14T22:13:20.123456Z",
        "series": {"count": 2, "lastObservedTime": "2023-11-14T22:13:21.000000Z"},
        "action": "Start",
        "reportingComponent": "",
        "reportingInstance": "",
    }


def test_lease_keeps_zero_transitions_and_micro_times() -> None:
    spec = (
        ld(1, "holder-a")
        + num(2, 15)
        + ld(3, num(1, 1_700_000_000))
        + ld(4, num(1, 1_700_000_000) + num(2, 5_000))
        + num(5, 0)
    )
    raw = ld(1, ld(1, "leader") + ld(3, "kube-system")) + ld(2, spec)
    assert decode_request(envelope("coordination.k8s.io/v1", "Lease", raw)) == {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "leader", "namespace": "kube-system"},
        "spec": {
            "holderIdentity": "holder-a",
            "leaseDurationSeconds": 15,
            "acquireTime": "2023-11-14T22:13:20.000000Z",
            "renewTime": "2023-11-14T22:13:20.000005Z",
            "leaseTransitions": 0,
        },
    }


def test_negative_integers_and_preconditions() -> None:
    raw = num(1, -1) + ld(2, ld(1, "u-1")) + ld(4, "Foreground") + ld(5, "All")
    assert decode_request(envelope("meta.k8s.io/v1", "DeleteOptions", raw)) == {
        "apiVersion": "meta.k8s.io/v1",
        "kind": "DeleteOptions",
        "gracePeriodSeconds": -1,
        "preconditions": {"uid": "u-1"},
        "propagationPolicy": "Foreground",
        "dryRun": ["All"],
    }


def test_unknown_fields_of_every_wire_type_are_skipped_and_last_value_wins() -> None:
    fixed64 = varint(40 << 3 | 1) + bytes(8)
    fixed32 = varint(41 << 3 | 5) + bytes(4)
    raw = ld(1, ld(1, "first") + ld(1, "second") + fixed64 + fixed32 + ld(42, b"\x01\x02"))
    assert decode_request(envelope("v1", "Namespace", raw)) == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "second"},
    }


# refusals


def test_unsupported_kind_names_the_kind_and_the_way_out() -> None:
    body = envelope("apps/v1", "StatefulSet", ld(1, ld(1, "d")))
    with pytest.raises(UnsupportedKindError) as caught:
        decode_request(body)
    assert caught.value.kind == "StatefulSet"
    assert caught.value.api_version == "apps/v1"
    assert "kind StatefulSet (apps/v1)" in str(caught.value)
    assert "-f" in str(caught.value)
    assert "YAML or JSON" in str(caught.value)


def test_a_kind_is_only_known_in_its_own_group_version() -> None:
    with pytest.raises(UnsupportedKindError, match="kind Lease \\(v1\\)"):
        decode_request(envelope("v1", "Lease", b""))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"kind": "Namespace"}', "magic"),
        (b"k8s\x00\x0a", "truncated inside a varint"),
        (b"k8s\x00" + b"\xff" * 11, "longer than 10 bytes"),
        (b"k8s\x00\x0a\x05ab", "runs past the end"),
        (b"k8s\x00\x0b", "wire type 3"),
        (b"k8s\x00\x00\x00", "field number 0"),
        (b"k8s\x00" + num(1, 7), "typeMeta: expected a length-delimited field"),
        (envelope("v1", "Namespace", ld(1, num(1, 5))), "Namespace.metadata.name: wire type 0"),
        (envelope("v1", "Namespace", ld(1, ld(1, b"\xff\xfe"))), "not valid UTF-8"),
        (envelope("v1", "ConfigMap", b"", extra=ld(3, "gzip")), "contentEncoding 'gzip'"),
        (envelope("v1", "ConfigMap", b"", extra=ld(4, "application/json")), "not protobuf"),
        (
            envelope("v1", "Service", ld(2, ld(1, ld(4, num(1, 2))))),
            "ports.targetPort: malformed IntOrString",
        ),
        (
            envelope("v1", "ConfigMap", ld(1, ld(17, ld(7, ld(1, b"{nope"))))),
            "managedFields.fieldsV1: not JSON",
        ),
        (
            envelope("v1", "ConfigMap", ld(1, ld(8, num(1, 1 << 62)))),
            "creationTimestamp: timestamp .* out of range",
        ),
    ],
)
def test_malformed_bodies_are_refused_with_the_reason(body: bytes, message: str) -> None:
    with pytest.raises(ProtobufError, match=message) as caught:
        decode_request(body)
    assert not isinstance(caught.value, UnsupportedKindError)
