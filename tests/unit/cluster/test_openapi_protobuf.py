"""The OpenAPI v2 protobuf document, read back with the protobuf runtime and a descriptor of
the gnostic-models OpenAPIv2.proto messages kubectl needs (field numbers as upstream's)."""

from __future__ import annotations

from typing import Any

import yaml
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from engine.cluster.apiserver.endpoints.openapi import openapi_v2
from engine.cluster.apiserver.endpoints.openapi_protobuf import document_bytes, wants_protobuf
from engine.cluster.apiserver.registry.builtins import BUILTIN_TYPES, PODS

_STRING = descriptor_pb2.FieldDescriptorProto.TYPE_STRING
_BOOL = descriptor_pb2.FieldDescriptorProto.TYPE_BOOL
_MESSAGE = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE
_REPEATED = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
_OPTIONAL = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL

# message -> [(name, number, type, message type or "", repeated)]
_MESSAGES: dict[str, list[tuple[str, int, int, str, bool]]] = {
    "Document": [
        ("swagger", 1, _STRING, "", False), ("info", 2, _MESSAGE, "Info", False),
        ("paths", 8, _MESSAGE, "Paths", False),
        ("definitions", 9, _MESSAGE, "Definitions", False),
    ],
    "Info": [("title", 1, _STRING, "", False), ("version", 2, _STRING, "", False)],
    "Paths": [("path", 2, _MESSAGE, "NamedPathItem", True)],
    "NamedPathItem": [("name", 1, _STRING, "", False), ("value", 2, _MESSAGE, "PathItem", False)],
    "PathItem": [("get", 2, _MESSAGE, "Operation", False),
                 ("patch", 8, _MESSAGE, "Operation", False)],
    "Operation": [
        ("operation_id", 5, _STRING, "", False), ("consumes", 7, _STRING, "", True),
        ("parameters", 8, _MESSAGE, "ParametersItem", True),
        ("vendor_extension", 13, _MESSAGE, "NamedAny", True),
    ],
    "ParametersItem": [("parameter", 1, _MESSAGE, "Parameter", False)],
    "Parameter": [("non_body_parameter", 2, _MESSAGE, "NonBodyParameter", False)],
    "NonBodyParameter": [("query", 3, _MESSAGE, "QueryParameterSubSchema", False)],
    "QueryParameterSubSchema": [("in", 2, _STRING, "", False), ("name", 4, _STRING, "", False)],
    "Definitions": [("additional_properties", 1, _MESSAGE, "NamedSchema", True)],
    "NamedSchema": [("name", 1, _STRING, "", False), ("value", 2, _MESSAGE, "Schema", False)],
    "Schema": [
        ("_ref", 1, _STRING, "", False), ("description", 4, _STRING, "", False),
        ("required", 19, _STRING, "", True), ("type", 22, _MESSAGE, "TypeItem", False),
        ("properties", 25, _MESSAGE, "Properties", False),
        ("all_of", 24, _MESSAGE, "Schema", True),
        ("vendor_extension", 31, _MESSAGE, "NamedAny", True),
    ],
    "TypeItem": [("value", 1, _STRING, "", True)],
    "Properties": [("additional_properties", 1, _MESSAGE, "NamedSchema", True)],
    "NamedAny": [("name", 1, _STRING, "", False), ("value", 2, _MESSAGE, "Any", False)],
    "Any": [("yaml", 2, _STRING, "", False)],
}


def _document_class() -> Any:
    proto = descriptor_pb2.FileDescriptorProto(name="openapiv2_subset.proto", package="v2")
    for name, fields in _MESSAGES.items():
        message = proto.message_type.add(name=name)
        for field_name, number, kind, type_name, repeated in fields:
            added = message.field.add(
                name=field_name, number=number, type=kind,
                label=_REPEATED if repeated else _OPTIONAL,
            )
            if type_name:
                added.type_name = f".v2.{type_name}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("v2.Document"))


def _decoded() -> Any:
    document = _document_class()()
    document.ParseFromString(document_bytes(openapi_v2(BUILTIN_TYPES)))
    return document


def test_the_document_parses_as_gnostic_openapi_v2() -> None:
    document = _decoded()
    assert document.swagger == "2.0"
    assert document.info.title == "Kubernetes"


def test_definitions_carry_their_group_version_kind() -> None:
    definitions = {d.name: d.value for d in _decoded().definitions.additional_properties}
    pod = definitions["io.k8s.api.core.v1.Pod"]
    assert list(pod.type.value) == ["object"]
    [gvk] = [e for e in pod.vendor_extension if e.name == "x-kubernetes-group-version-kind"]
    assert yaml.safe_load(gvk.value.yaml) == [{"group": "", "version": "v1", "kind": "Pod"}]
    properties = {p.name for p in pod.properties.additional_properties}
    assert {"apiVersion", "kind", "metadata", "spec", "status"} <= properties


def test_patch_operations_name_the_field_validation_parameter() -> None:
    paths = {p.name: p.value for p in _decoded().paths.path}
    patch = paths["/api/v1/namespaces/{namespace}/pods/{name}"].patch
    assert patch.operation_id == "patchCoreV1NamespacedPod"
    query = {p.parameter.non_body_parameter.query.name for p in patch.parameters}
    assert "fieldValidation" in query
    assert "application/apply-patch+yaml" in patch.consumes
    assert PODS.kind in {yaml.safe_load(e.value.yaml)["kind"] for e in patch.vendor_extension
                         if e.name == "x-kubernetes-group-version-kind"}


def test_only_the_protobuf_media_types_select_protobuf() -> None:
    assert wants_protobuf("application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
    assert wants_protobuf("application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
    assert not wants_protobuf("application/json")
