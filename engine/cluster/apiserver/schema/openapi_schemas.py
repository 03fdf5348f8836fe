"""The schemas the OpenAPI documents publish: object metadata, built-in kinds, CRD kinds.

Custom resources publish their CRD's openAPIV3Schema (what `kubectl explain`
shows). Built-in kinds publish their real top-level fields but leave the
contents open (`x-kubernetes-preserve-unknown-fields`): the server, not
kubectl, validates them (kubectl sends `fieldValidation=Strict`), and a schema
that is loose but never wrong beats a hand-copied one that drifts. Jobs and
CronJobs publish their specs and statuses field by field (`batch_schemas.py`),
so `kubectl explain` can describe them, with the pod template left open; so do
Deployments, ReplicaSets and ReplicationControllers (`apps_schemas.py`).
"""

from __future__ import annotations

import copy
from typing import Any

from engine.cluster.apiserver.registry.resources import ResourceType
from engine.cluster.apiserver.schema.apps_schemas import APPS_DESCRIPTIONS, APPS_FIELDS
from engine.cluster.apiserver.schema.batch_schemas import BATCH_DESCRIPTIONS, BATCH_FIELDS

Schema = dict[str, Any]

META = "io.k8s.apimachinery.pkg.apis.meta.v1"
OBJECT_META = f"{META}.ObjectMeta"
LIST_META = f"{META}.ListMeta"
STATUS = f"{META}.Status"
SCALE = "io.k8s.api.autoscaling.v1.Scale"
_SCALE_SPEC = f"{SCALE}Spec"
_SCALE_STATUS = f"{SCALE}Status"
DELETE_OPTIONS = f"{META}.DeleteOptions"
_OWNER_REFERENCE = f"{META}.OwnerReference"
_MANAGED_FIELDS = f"{META}.ManagedFieldsEntry"

_OPEN: Schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
_STRING: Schema = {"type": "string"}
_STRING_MAP: Schema = {"type": "object", "additionalProperties": {"type": "string"}}
_TIME: Schema = {"type": "string", "format": "date-time"}
# A field doc the ControllerRevision printer shows too, as upstream's reads SwaggerDoc.
REVISION_DESCRIPTION = "Revision indicates the revision of the state represented by Data."
# PriorityClass field docs, shared with its Table columns for the same reason.
PRIORITY_VALUE_DESCRIPTION = (
    "value is the priority, a 32-bit integer, that pods naming this class receive."
)
GLOBAL_DEFAULT_DESCRIPTION = (
    "globalDefault marks the class whose value pods without a priority class get; at most one "
    "class may be marked."
)
PREEMPTION_POLICY_DESCRIPTION = (
    "preemptionPolicy says whether pods of this class may preempt pods of lower priority: "
    "PreemptLowerPriority (the default) or Never."
)

# Top-level fields of the built-in kinds besides apiVersion, kind and metadata.
_BUILTIN_FIELDS: dict[tuple[str, str], dict[str, Schema]] = {
    ("", "Pod"): {"spec": _OPEN, "status": _OPEN},
    ("", "Service"): {"spec": _OPEN, "status": _OPEN},
    ("", "Namespace"): {"spec": _OPEN, "status": _OPEN},
    ("", "Node"): {"spec": _OPEN, "status": _OPEN},
    ("", "ConfigMap"): {
        "data": _STRING_MAP,
        "binaryData": {
            "type": "object",
            "additionalProperties": {"type": "string", "format": "byte"},
        },
        "immutable": {"type": "boolean"},
    },
    ("", "Secret"): {
        "data": {"type": "object", "additionalProperties": {"type": "string", "format": "byte"}},
        "stringData": _STRING_MAP,
        "type": _STRING,
        "immutable": {"type": "boolean"},
    },
    ("", "Event"): {
        "action": _STRING,
        "count": {"type": "integer", "format": "int32"},
        "eventTime": {"type": "string", "format": "date-time"},
        "firstTimestamp": _TIME,
        "involvedObject": _OPEN,
        "lastTimestamp": _TIME,
        "message": _STRING,
        "reason": _STRING,
        "related": _OPEN,
        "reportingComponent": _STRING,
        "reportingInstance": _STRING,
        "series": _OPEN,
        "source": _OPEN,
        "type": _STRING,
    },
    ("apps", "ControllerRevision"): {
        "data": {**_OPEN, "description": "Data is the serialized representation of the state."},
        "revision": {
            "type": "integer",
            "format": "int64",
            "description": REVISION_DESCRIPTION,
        },
    },
    ("coordination.k8s.io", "Lease"): {"spec": _OPEN},
    ("scheduling.k8s.io", "PriorityClass"): {
        "value": {"type": "integer", "format": "int32", "description": PRIORITY_VALUE_DESCRIPTION},
        "globalDefault": {"type": "boolean", "description": GLOBAL_DEFAULT_DESCRIPTION},
        "description": {
            "type": "string",
            "description": "description says when this priority class should be used.",
        },
        "preemptionPolicy": {
            "type": "string",
            "enum": ["Never", "PreemptLowerPriority"],
            "description": PREEMPTION_POLICY_DESCRIPTION,
        },
    },
    ("apiextensions.k8s.io", "CustomResourceDefinition"): {"spec": _OPEN, "status": _OPEN},
}

_BUILTIN_DESCRIPTIONS: dict[tuple[str, str], str] = {
    ("", "Pod"): "Pod is a collection of containers that can run on a host.",
    ("", "Service"): "Service is a named abstraction of software service (for example, mysql) "
    "consisting of local port (for example 3306) that the proxy listens on, and the selector "
    "that determines which pods will answer requests sent through the proxy.",
    ("", "Namespace"): "Namespace provides a scope for Names.",
    ("", "Node"): "Node is a worker node in Kubernetes.",
    ("", "ConfigMap"): "ConfigMap holds configuration data for pods to consume.",
    ("", "Secret"): "Secret holds secret data of a certain type.",
    ("", "Event"): "Event is a report of an event somewhere in the cluster.",
    ("apps", "ControllerRevision"): "ControllerRevision implements an immutable snapshot of "
    "state data. Clients are responsible for serializing and deserializing the objects that "
    "contain their internal state. Once a ControllerRevision has been successfully created, it "
    "can not be updated. The API Server will fail validation of all requests that attempt to "
    "mutate the Data field. ControllerRevisions may, however, be deleted.",
    ("coordination.k8s.io", "Lease"): "Lease defines a lease concept.",
    ("scheduling.k8s.io", "PriorityClass"): "PriorityClass maps a priority class name to the "
    "integer priority of the pods that name it.",
    ("apiextensions.k8s.io", "CustomResourceDefinition"): "CustomResourceDefinition represents "
    "a resource that should be exposed on the API server.",
}


# Fields the Go types carry without omitempty, which `kubectl explain` marks -required-.
_BUILTIN_REQUIRED: dict[tuple[str, str], list[str]] = {
    ("apps", "ControllerRevision"): ["revision"],
    ("scheduling.k8s.io", "PriorityClass"): ["value"],
}


def schema_name(rt: ResourceType, kind: str | None = None) -> str:
    """The component name of a kind, as the real server names it (io.k8s.api.core.v1.Pod).

    Groups without a dot are k8s.io/api's legacy groups (apps, batch...): a
    CRD's group always has one.
    """
    kind = kind or rt.kind
    if rt.group == "":
        prefix = "io.k8s.api.core"
    elif "." not in rt.group:
        prefix = f"io.k8s.api.{rt.group}"
    elif rt.group.endswith(".k8s.io"):
        prefix = f"io.k8s.api.{rt.group.removesuffix('.k8s.io').split('.')[0]}"
        if rt.group == "apiextensions.k8s.io":
            prefix = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions"
    else:
        prefix = ".".join(reversed(rt.group.split(".")))
    return f"{prefix}.{rt.version}.{kind}"


def gvk_extension(rt: ResourceType, kind: str | None = None) -> dict[str, str]:
    return {"group": rt.group, "version": rt.version, "kind": kind or rt.kind}


def ref(name: str, prefix: str) -> Schema:
    return {"$ref": f"{prefix}{name}"}


def builtin_fields(group: str, kind: str) -> frozenset[str] | None:
    """The top-level fields of a built-in kind (apiVersion, kind, metadata included).

    None for a kind this module has no field list for. Strict field validation
    of built-in objects can reject any other top-level field, as the real
    server's strict decoder does.
    """
    fields = _BUILTIN_FIELDS.get((group, kind))
    if fields is None:
        return None
    return frozenset({"apiVersion", "kind", "metadata", *fields})


def kind_schema(rt: ResourceType, prefix: str) -> Schema:
    """The schema of one kind: the CRD's schema, or the open top-level fields of a built-in."""
    if rt.schema is not None:
        schema = copy.deepcopy(rt.schema)
        schema.setdefault("type", "object")
    else:
        fields = _BUILTIN_FIELDS.get((rt.group, rt.kind))
        detailed = (BATCH_FIELDS | APPS_FIELDS).get((rt.group, rt.kind))
        if detailed is not None:
            fields = detailed(ref(OBJECT_META, prefix))
        schema = {"type": "object"}
        description = (_BUILTIN_DESCRIPTIONS | BATCH_DESCRIPTIONS | APPS_DESCRIPTIONS).get(
            (rt.group, rt.kind))
        if description:
            schema["description"] = description
        if fields is None:
            schema["x-kubernetes-preserve-unknown-fields"] = True
        else:
            schema["properties"] = copy.deepcopy(fields)
        required = _BUILTIN_REQUIRED.get((rt.group, rt.kind))
        if required:
            schema["required"] = list(required)
    properties = schema.setdefault("properties", {})
    properties["apiVersion"] = {
        "type": "string",
        "description": (
            "APIVersion defines the versioned schema of this representation of an object."
        ),
    }
    properties["kind"] = {
        "type": "string",
        "description": (
            "Kind is a string value representing the REST resource this object represents."
        ),
    }
    properties["metadata"] = {
        "allOf": [ref(OBJECT_META, prefix)],
        "description": "Standard object's metadata.",
    }
    schema["x-kubernetes-group-version-kind"] = [gvk_extension(rt)]
    return schema


def list_schema(rt: ResourceType, prefix: str) -> Schema:
    return {
        "type": "object",
        "required": ["items"],
        "description": f"{rt.list_kind} is a list of {rt.kind}",
        "properties": {
            "apiVersion": _STRING,
            "kind": _STRING,
            "items": {"type": "array", "items": ref(schema_name(rt), prefix)},
            "metadata": {"allOf": [ref(LIST_META, prefix)]},
        },
        "x-kubernetes-group-version-kind": [gvk_extension(rt, rt.list_kind)],
    }


def meta_schemas(prefix: str) -> dict[str, Schema]:
    """ObjectMeta and the few apimachinery types every document refers to."""
    owner_reference: Schema = {
        "type": "object",
        "required": ["apiVersion", "kind", "name", "uid"],
        "properties": {
            "apiVersion": _STRING,
            "kind": _STRING,
            "name": _STRING,
            "uid": _STRING,
            "controller": {"type": "boolean"},
            "blockOwnerDeletion": {"type": "boolean"},
        },
        "x-kubernetes-map-type": "atomic",
    }
    object_meta: Schema = {
        "type": "object",
        "description": "ObjectMeta is metadata that all persisted resources must have.",
        "properties": {
            "name": _STRING,
            "generateName": _STRING,
            "namespace": _STRING,
            "uid": _STRING,
            "resourceVersion": _STRING,
            "generation": {"type": "integer", "format": "int64"},
            "creationTimestamp": _TIME,
            "deletionTimestamp": _TIME,
            "deletionGracePeriodSeconds": {"type": "integer", "format": "int64"},
            "labels": _STRING_MAP,
            "annotations": _STRING_MAP,
            "finalizers": {
                "type": "array",
                "items": _STRING,
                "x-kubernetes-list-type": "set",
                "x-kubernetes-patch-strategy": "merge",
            },
            "ownerReferences": {
                "type": "array",
                "items": ref(_OWNER_REFERENCE, prefix),
                "x-kubernetes-list-map-keys": ["uid"],
                "x-kubernetes-list-type": "map",
                "x-kubernetes-patch-merge-key": "uid",
                "x-kubernetes-patch-strategy": "merge",
            },
            "managedFields": {"type": "array", "items": ref(_MANAGED_FIELDS, prefix)},
        },
    }
    return {
        OBJECT_META: object_meta,
        _OWNER_REFERENCE: owner_reference,
        _MANAGED_FIELDS: {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        LIST_META: {
            "type": "object",
            "properties": {
                "continue": _STRING,
                "remainingItemCount": {"type": "integer", "format": "int64"},
                "resourceVersion": _STRING,
            },
        },
        STATUS: {
            "type": "object",
            "properties": {
                "apiVersion": _STRING,
                "kind": _STRING,
                "code": {"type": "integer", "format": "int32"},
                "details": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "message": _STRING,
                "metadata": {"allOf": [ref(LIST_META, prefix)]},
                "reason": _STRING,
                "status": _STRING,
            },
            "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "Status"}],
        },
        DELETE_OPTIONS: {
            "type": "object",
            "properties": {
                "apiVersion": _STRING,
                "kind": _STRING,
                "dryRun": {"type": "array", "items": _STRING},
                "gracePeriodSeconds": {"type": "integer", "format": "int64"},
                "orphanDependents": {"type": "boolean"},
                "preconditions": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "propagationPolicy": _STRING,
            },
        },
    }


def scale_schemas(prefix: str) -> dict[str, Schema]:
    """autoscaling/v1 Scale and its parts, which a custom resource's /scale reads and writes."""
    return {
        SCALE: {
            "type": "object",
            "description": "A request to scale a resource, and how far it is scaled now.",
            "properties": {
                "apiVersion": _STRING,
                "kind": _STRING,
                "metadata": {"allOf": [ref(OBJECT_META, prefix)], "default": {}},
                "spec": {"allOf": [ref(_SCALE_SPEC, prefix)], "default": {}},
                "status": {"allOf": [ref(_SCALE_STATUS, prefix)], "default": {}},
            },
            "x-kubernetes-group-version-kind": [
                {"group": "autoscaling", "version": "v1", "kind": "Scale"}
            ],
        },
        _SCALE_SPEC: {
            "type": "object",
            "properties": {
                "replicas": {
                    "type": "integer",
                    "format": "int32",
                    "description": "How many instances the scaled resource should have.",
                },
            },
        },
        _SCALE_STATUS: {
            "type": "object",
            "required": ["replicas"],
            "properties": {
                "replicas": {
                    "type": "integer",
                    "format": "int32",
                    "default": 0,
                    "description": "How many instances the scaled resource has now.",
                },
                "selector": {
                    "type": "string",
                    "description": "The label selector of those instances, in query-string "
                    "form.",
                },
            },
        },
    }


_V2_UNSUPPORTED = frozenset({"nullable", "anyOf", "oneOf", "not"})
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "definitions"})


def to_swagger2(schema: Schema) -> Schema:
    """An OpenAPI 3 schema made acceptable to Swagger 2.0 (drops what 2.0 cannot say)."""
    converted: Schema = {}
    for key, value in schema.items():
        if key in _V2_UNSUPPORTED:
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            converted[key] = {name: to_swagger2(sub) for name, sub in value.items()}
        elif isinstance(value, dict) and key in ("items", "additionalProperties"):
            converted[key] = to_swagger2(value)
        elif key == "allOf" and isinstance(value, list):
            converted[key] = [to_swagger2(sub) for sub in value]
        else:
            converted[key] = copy.deepcopy(value)
    return converted
