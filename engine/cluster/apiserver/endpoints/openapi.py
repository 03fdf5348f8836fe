"""The OpenAPI documents: /openapi/v3 (per group version) and /openapi/v2.

kubectl reads them for three things: whether the server validates fields
itself (a PATCH operation of the kind that takes the `fieldValidation` query
parameter; then `kubectl apply` sends `fieldValidation=Strict` and skips its
own validation), how to compute the patch of `kubectl apply`, and what
`kubectl explain` prints. Built-in kinds do not advertise strategic merge
patch here although the server accepts it: their schemas are open, so kubectl
must take patch metadata from its compiled-in types instead of from these.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engine.cluster.apiserver.endpoints.discovery import KUBERNETES_VERSION
from engine.cluster.apiserver.registry.resources import ResourceType
from engine.cluster.apiserver.schema.openapi_schemas import (
    DELETE_OPTIONS,
    SCALE,
    STATUS,
    Schema,
    gvk_extension,
    kind_schema,
    list_schema,
    meta_schemas,
    ref,
    scale_schemas,
    schema_name,
    to_swagger2,
)

_V3_PREFIX = "#/components/schemas/"
_V2_PREFIX = "#/definitions/"
_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
)
_FIELD_VALIDATION = (
    "fieldValidation instructs the server on how to handle objects in the request "
    "(POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: "
    "unknown fields are silently dropped from the object. - Warn: a warning is sent for each "
    "unknown or duplicate field. - Strict: the request fails with a BadRequest error if any "
    "unknown fields would be dropped from the object, or if any duplicate fields are present."
)
_QUERY_PARAMETERS: dict[str, tuple[str, str]] = {
    "dryRun": ("string", "When present, indicates that modifications should not be persisted."),
    "fieldManager": ("string", "A name associated with the actor or entity making these changes."),
    "fieldValidation": ("string", _FIELD_VALIDATION),
    "force": ("boolean", "Force is going to force Apply requests."),
    "pretty": ("string", "If 'true', then the output is pretty printed."),
    "gracePeriodSeconds": ("integer", "The duration in seconds before the object is deleted."),
    "propagationPolicy": ("string", "Whether and how garbage collection will be performed."),
    "labelSelector": ("string", "A selector to restrict the list of returned objects by labels."),
    "fieldSelector": ("string", "A selector to restrict the list of returned objects by fields."),
    "limit": ("integer", "The maximum number of responses to return for a list call."),
    "continue": ("string", "The continue option, from a previous list's metadata."),
    "resourceVersion": ("string", "Which resource version a list or watch starts from."),
    "resourceVersionMatch": ("string", "How resourceVersion is applied to list calls."),
    "timeoutSeconds": ("integer", "Timeout for the list/watch call."),
    "watch": ("boolean", "Watch for changes to the described resources."),
    "allowWatchBookmarks": ("boolean", "Requests watch events with type BOOKMARK."),
    "sendInitialEvents": ("boolean", "Start the watch stream with synthetic ADDED events."),
}
_WRITE = ("dryRun", "fieldManager", "fieldValidation")
_LIST = (
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
)
_DELETE = ("dryRun", "gracePeriodSeconds", "propagationPolicy")


@dataclass(frozen=True)
class _Operation:
    """One HTTP method on one path, in terms both OpenAPI versions can render."""

    method: str
    action: str  # x-kubernetes-action
    operation_id: str
    query: tuple[str, ...]
    body: str | None  # "object", "patch", "delete" or None
    response: str  # component name of the 200 response
    reads: str = ""  # component name of an "object" body when it is not the resource's kind


def openapi_v3_paths(types: Sequence[ResourceType]) -> dict[str, Any]:
    """The /openapi/v3 index: one entry per served group version, with a content hash."""
    paths: dict[str, Any] = {}
    for group, version in _group_versions(types):
        key = f"apis/{group}/{version}" if group else f"api/{version}"
        digest = _hash(openapi_v3_document(group, version, types))
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={digest}"}
    return {"paths": paths}


def openapi_v3_document(group: str, version: str, types: Sequence[ResourceType]) -> dict[str, Any]:
    """The OpenAPI 3.0 document of one group version; KeyError if nothing is served there."""
    served = _served(group, version, types)
    paths: dict[str, Any] = {}
    schemas: dict[str, Schema] = meta_schemas(_V3_PREFIX)
    for rt in served:
        for path, operations in _resource_paths(rt).items():
            paths[path] = _v3_path_item(rt, path, operations)
        schemas[schema_name(rt)] = kind_schema(rt, _V3_PREFIX)
        schemas[schema_name(rt, rt.list_kind)] = list_schema(rt, _V3_PREFIX)
        if rt.scale is not None:
            schemas.update(scale_schemas(_V3_PREFIX))
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"BearerToken": _BEARER},
        },
        "security": [{"BearerToken": []}],
    }


def openapi_v2(types: Sequence[ResourceType]) -> dict[str, Any]:
    """The Swagger 2.0 document of everything served."""
    paths: dict[str, Any] = {}
    definitions: dict[str, Schema] = {
        name: to_swagger2(schema) for name, schema in meta_schemas(_V2_PREFIX).items()
    }
    for rt in types:
        for path, operations in _resource_paths(rt).items():
            paths[path] = _v2_path_item(rt, path, operations)
        definitions[schema_name(rt)] = to_swagger2(kind_schema(rt, _V2_PREFIX))
        definitions[schema_name(rt, rt.list_kind)] = to_swagger2(list_schema(rt, _V2_PREFIX))
        if rt.scale is not None:
            definitions.update(
                {name: to_swagger2(s) for name, s in scale_schemas(_V2_PREFIX).items()}
            )
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
        "paths": paths,
        "definitions": definitions,
        "securityDefinitions": {"BearerToken": _BEARER},
        "security": [{"BearerToken": []}],
    }


_BEARER = {
    "type": "apiKey",
    "name": "authorization",
    "in": "header",
    "description": "Bearer Token authentication",
}


def _hash(document: dict[str, Any]) -> str:
    encoded = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha512(encoded).hexdigest().upper()


def _group_versions(types: Sequence[ResourceType]) -> list[tuple[str, str]]:
    return list(dict.fromkeys((rt.group, rt.version) for rt in types))


def _served(group: str, version: str, types: Sequence[ResourceType]) -> list[ResourceType]:
    served = [rt for rt in types if rt.group == group and rt.version == version]
    if not served:
        raise KeyError(f"{group}/{version}")
    return served


def _operation_id(verb: str, rt: ResourceType, scope: str, suffix: str = "") -> str:
    group = "".join(part.capitalize() for part in rt.group.removesuffix(".k8s.io").split("."))
    return f"{verb}{group or 'Core'}{rt.version.capitalize()}{scope}{rt.kind}{suffix}"


def _resource_paths(rt: ResourceType) -> dict[str, list[_Operation]]:
    """Every path of a resource with the operations its verbs allow."""
    base = f"/apis/{rt.group}/{rt.version}" if rt.group else f"/api/{rt.version}"
    scope = "Namespaced" if rt.namespaced else ""
    collection = (
        f"{base}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced else f"{base}/{rt.plural}"
    )
    kind, kind_list = schema_name(rt), schema_name(rt, rt.list_kind)
    verbs = set(rt.verbs)
    paths: dict[str, list[_Operation]] = {collection: [], f"{collection}/{{name}}": []}
    if "list" in verbs:
        paths[collection].append(
            _Operation("get", "list", _operation_id("list", rt, scope), _LIST, None, kind_list)
        )
        if rt.namespaced:
            paths[f"{base}/{rt.plural}"] = [
                _Operation(
                    "get",
                    "list",
                    _operation_id("list", rt, "", "ForAllNamespaces"),
                    _LIST,
                    None,
                    kind_list,
                )
            ]
    if "create" in verbs:
        paths[collection].append(
            _Operation("post", "post", _operation_id("create", rt, scope), _WRITE, "object", kind)
        )
    if "deletecollection" in verbs:
        delete_id = _operation_id("delete", rt, f"Collection{scope}")
        paths[collection].append(
            _Operation("delete", "deletecollection", delete_id, _DELETE + _LIST, "delete", STATUS)
        )
    item = paths[f"{collection}/{{name}}"]
    item.extend(_item_operations(rt, scope, verbs, kind))
    for sub in sorted(rt.subresources & {"status", "scale"}):
        suffix = sub.capitalize()
        # A custom resource's /scale reads and writes an autoscaling/v1 Scale.
        shown = SCALE if sub == "scale" else kind
        paths[f"{collection}/{{name}}/{sub}"] = [
            _Operation("get", "get", _operation_id("read", rt, scope, suffix), (), None, shown),
            _Operation(
                "put", "put", _operation_id("replace", rt, scope, suffix), _WRITE, "object",
                shown, shown,
            ),
            _Operation(
                "patch",
                "patch",
                _operation_id("patch", rt, scope, suffix),
                (*_WRITE, "force"),
                "patch",
                shown,
            ),
        ]
    return {path: operations for path, operations in paths.items() if operations}


def _item_operations(rt: ResourceType, scope: str, verbs: set[str], kind: str) -> list[_Operation]:
    operations = []
    if "get" in verbs:
        operations.append(
            _Operation("get", "get", _operation_id("read", rt, scope), (), None, kind)
        )
    if "update" in verbs:
        operations.append(
            _Operation("put", "put", _operation_id("replace", rt, scope), _WRITE, "object", kind)
        )
    if "patch" in verbs:
        operations.append(
            _Operation(
                "patch",
                "patch",
                _operation_id("patch", rt, scope),
                (*_WRITE, "force"),
                "patch",
                kind,
            )
        )
    if "delete" in verbs:
        operations.append(
            _Operation(
                "delete", "delete", _operation_id("delete", rt, scope), _DELETE, "delete", kind
            )
        )
    return operations


def _path_parameters(rt: ResourceType, path: str) -> list[tuple[str, str]]:
    """(name, description) of the path's own parameters, in URL order."""
    parameters = []
    if "{name}" in path:
        parameters.append(("name", f"name of the {rt.kind}"))
    if "{namespace}" in path:
        parameters.append(
            ("namespace", "object name and auth scope, such as for teams and projects")
        )
    return parameters


def _v3_parameter(name: str, location: str, description: str, kind: str = "string") -> Schema:
    parameter: Schema = {
        "name": name,
        "in": location,
        "description": description,
        "schema": {"type": kind, "uniqueItems": True},
    }
    if location == "path":
        parameter["required"] = True
    return parameter


def _v3_path_item(rt: ResourceType, path: str, operations: list[_Operation]) -> dict[str, Any]:
    item: dict[str, Any] = {
        "parameters": [
            *(_v3_parameter(name, "path", text) for name, text in _path_parameters(rt, path)),
            _v3_parameter("pretty", "query", _QUERY_PARAMETERS["pretty"][1]),
        ]
    }
    for operation in operations:
        item[operation.method] = _v3_operation(rt, operation)
    return item


def _v3_operation(rt: ResourceType, operation: _Operation) -> dict[str, Any]:
    body: dict[str, Any] = {
        "operationId": operation.operation_id,
        "parameters": [
            _v3_parameter(name, "query", _QUERY_PARAMETERS[name][1], _QUERY_PARAMETERS[name][0])
            for name in operation.query
        ],
        "responses": {
            "200": {
                "description": "OK",
                "content": {"application/json": {"schema": ref(operation.response, _V3_PREFIX)}},
            },
            "401": {"description": "Unauthorized"},
        },
        "x-kubernetes-action": operation.action,
        "x-kubernetes-group-version-kind": gvk_extension(rt),
    }
    if operation.body == "object":
        body["requestBody"] = {
            "content": {"*/*": {"schema": ref(operation.reads or schema_name(rt), _V3_PREFIX)}},
            "required": True,
        }
    elif operation.body == "patch":
        body["requestBody"] = {
            "content": {media: {"schema": {"type": "object"}} for media in _PATCH_TYPES},
            "required": True,
        }
    elif operation.body == "delete":
        body["requestBody"] = {"content": {"*/*": {"schema": ref(DELETE_OPTIONS, _V3_PREFIX)}}}
    return body


def _v2_parameter(name: str, location: str, description: str, kind: str = "string") -> Schema:
    parameter: Schema = {
        "name": name,
        "in": location,
        "description": description,
        "type": kind,
        "uniqueItems": True,
    }
    if location == "path":
        parameter["required"] = True
    return parameter


def _v2_path_item(rt: ResourceType, path: str, operations: list[_Operation]) -> dict[str, Any]:
    item: dict[str, Any] = {
        "parameters": [
            *(_v2_parameter(name, "path", text) for name, text in _path_parameters(rt, path)),
            _v2_parameter("pretty", "query", _QUERY_PARAMETERS["pretty"][1]),
        ]
    }
    for operation in operations:
        parameters = [
            _v2_parameter(name, "query", _QUERY_PARAMETERS[name][1], _QUERY_PARAMETERS[name][0])
            for name in operation.query
        ]
        if operation.body is not None:
            schema = (
                {"type": "object"}
                if operation.body == "patch"
                else ref(operation.reads or schema_name(rt), _V2_PREFIX)
            )
            if operation.body == "delete":
                schema = ref(DELETE_OPTIONS, _V2_PREFIX)
            required = operation.body != "delete"
            parameters.insert(
                0, {"name": "body", "in": "body", "required": required, "schema": schema}
            )
        item[operation.method] = {
            "operationId": operation.operation_id,
            "consumes": list(_PATCH_TYPES) if operation.body == "patch" else ["*/*"],
            "produces": ["application/json", "application/yaml"],
            "schemes": ["https"],
            "parameters": parameters,
            "responses": {
                "200": {"description": "OK", "schema": ref(operation.response, _V2_PREFIX)},
                "401": {"description": "Unauthorized"},
            },
            "x-kubernetes-action": operation.action,
            "x-kubernetes-group-version-kind": gvk_extension(rt),
        }
    return item
