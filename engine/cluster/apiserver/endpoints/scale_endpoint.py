"""HTTP on `.../NAME/scale`: GET, PUT and PATCH of an autoscaling/v1 Scale.

For custom resources that declare it and the built-in workloads (Deployments, ReplicaSets,
ReplicationControllers, whose strategic merge patches are accepted too), as the apiextensions
server serves it: reads answer the Scale (or a Table with DESIRED and
AVAILABLE), writes take a Scale (PUT), a JSON or merge patch of the current Scale, or a
server-side apply of one (strategic merge is refused with 415, as for every custom
resource path; the built-in workloads take it), and answer the new Scale; other methods are
405.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import orjson
from aiohttp import web

from engine.cluster.apiserver.core import Core
from engine.cluster.apiserver.endpoints import params
from engine.cluster.apiserver.endpoints.responses import json_response, read_body
from engine.cluster.apiserver.endpoints.routes import Target
from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.patch.patch_types import patched
from engine.cluster.apiserver.patch.server_side_apply import (
    APPLY_YAML,
    check_options,
    decode_config,
    manager_name,
)
from engine.cluster.apiserver.printing.printing import CREATION_TIMESTAMP_DESCRIPTION
from engine.cluster.apiserver.printing.tables import table_api_version, to_table, wants_table
from engine.cluster.apiserver.registry.resources import ResourceType
from engine.cluster.apiserver.registry.scale import (
    ScaleChange,
    ScaleWriter,
    applied,
    current_scale,
    scale_of,
    scale_written,
    updated,
)
from engine.cluster.apiserver.storage.objects import Obj

# The columns kube-apiserver prints a custom resource's Scale with (after NAME).
_COLUMNS: tuple[dict[str, str], ...] = (
    {"name": "Desired", "type": "integer", "description": "Number of desired replicas",
     "jsonPath": ".spec.replicas"},
    {"name": "Available", "type": "integer", "description": "Number of actual replicas",
     "jsonPath": ".status.replicas"},
    {"name": "Age", "type": "date", "description": CREATION_TIMESTAMP_DESCRIPTION,
     "jsonPath": ".metadata.creationTimestamp"},
)
_VERBS = {"GET": "get", "PUT": "update", "PATCH": "patch", "POST": "create", "DELETE": "delete"}


class ScaleEndpoint:
    """The verbs of `/scale` over the store."""

    def __init__(self, core: Core) -> None:
        self._core = core
        self._store = core.store

    async def handle(self, request: web.Request, target: Target) -> web.Response:
        if target.name is None or target.watch or request.method not in ("GET", "PUT", "PATCH"):
            verb = "watch" if target.watch else _VERBS.get(request.method, request.method.lower())
            raise _not_supported(target.rt, verb)
        if request.method == "GET":
            return self._get(request, target, target.name)
        if request.method == "PUT":
            return await self._put(request, target, target.name)
        return await self._patch(request, target, target.name)

    def _get(self, request: web.Request, target: Target, name: str) -> web.Response:
        entry = self._store.get(target.rt, target.namespace or "", name)
        scale = scale_of(target.rt, entry.obj)
        accept = request.headers.get("Accept", "")
        if not wants_table(accept):
            return json_response(orjson.dumps(scale))
        table = to_table(
            dataclasses.replace(target.rt, printer_columns=_COLUMNS),
            [scale],
            include_object=request.query.get("includeObject") or "Metadata",
            list_metadata={"resourceVersion": scale["metadata"].get("resourceVersion", "")},
            api_version=table_api_version(accept) or "meta.k8s.io/v1",
        )
        return json_response(orjson.dumps(table))

    async def _put(self, request: web.Request, target: Target, name: str) -> web.Response:
        manager = request.query.get("fieldManager") or ""
        check_options("UpdateOptions", manager, apply=False, force_given=False)
        body = await read_body(request)
        validation = params.field_validation(request.query)
        writer = ScaleWriter(_manager(request, manager))

        def change(old: Obj) -> ScaleChange:
            return updated(target.rt, old, body, writer, field_validation=validation,
                           uid_precondition=True)

        return await self._write(request, target, name, writer, change)

    async def _patch(self, request: web.Request, target: Target, name: str) -> web.Response:
        query = request.query
        content_type = request.headers.get("Content-Type", "")
        is_apply = content_type.split(";", 1)[0].strip().lower() == APPLY_YAML
        manager = query.get("fieldManager") or ""
        check_options("PatchOptions", manager, apply=is_apply, force_given="force" in query)
        validation = params.field_validation(query)
        body = await request.read()
        rt = target.rt
        change: Callable[[Obj], ScaleChange]
        if is_apply:
            writer = ScaleWriter(manager, applied=True, force=params.flag(query, "force"))
            config = decode_config(body)

            def change(old: Obj) -> ScaleChange:
                return applied(rt, old, config, writer)
        else:
            writer = ScaleWriter(_manager(request, manager))

            def change(old: Obj) -> ScaleChange:
                scale = patched(rt, content_type, current_scale(rt, old), body)
                return updated(rt, old, scale, writer, field_validation=validation,
                               uid_precondition=False)

        return await self._write(request, target, name, writer, change)

    async def _write(
        self, request: web.Request, target: Target, name: str, writer: ScaleWriter,
        change: Callable[[Obj], ScaleChange],
    ) -> web.Response:
        written = self._store.write_scale(
            target.rt, target.namespace or "", name, change, manager=writer.manager,
            dry_run=params.dry_run(request.query),
        )
        await self._core.flushed()
        scale = scale_written(target.rt, written.entry.obj)
        return json_response(orjson.dumps(scale), warnings=written.warnings)


def _manager(request: web.Request, field_manager: str) -> str:
    return manager_name(field_manager, request.headers.get("User-Agent", ""))


def _not_supported(rt: ResourceType, verb: str) -> ApiError:
    """upstream's NewMethodNotSupported for the verbs /scale does not serve."""
    resource = f"{rt.plural}.{rt.group}"
    return ApiError(
        405, "MethodNotAllowed", f'{verb} is not supported on resources of kind "{resource}"',
        {"group": rt.group, "kind": rt.plural},
    )
