"""The resource endpoints: one aiohttp handler that dispatches method and path to a verb.

get, list, watch, create, update, patch, delete and deletecollection on every
served type, plus the status, finalize, binding, log and exec subresources (scale,
a service account's token and the access reviews have their
own endpoints). Each write is acknowledged only once the
journal has it on disk.
"""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from engine.cluster.apiserver.auth.access_reviews import AccessReviews
from engine.cluster.apiserver.auth.token_request import TokenRequestEndpoint
from engine.cluster.apiserver.core import Core
from engine.cluster.apiserver.endpoints import logs, params
from engine.cluster.apiserver.endpoints.responses import (
    json_response,
    list_bytes,
    object_bytes,
    read_body,
    success_status,
    table_bytes,
)
from engine.cluster.apiserver.endpoints.routes import Target
from engine.cluster.apiserver.endpoints.scale_endpoint import ScaleEndpoint
from engine.cluster.apiserver.endpoints.watch_stream import WatchSettings, stream_watch
from engine.cluster.apiserver.errors import method_not_allowed
from engine.cluster.apiserver.exec import pod_exec
from engine.cluster.apiserver.patch.patch_types import patch_media_type
from engine.cluster.apiserver.patch.server_side_apply import APPLY_YAML, check_options, manager_name
from engine.cluster.apiserver.printing.tables import wants_table
from engine.cluster.apiserver.registry import deletion
from engine.cluster.apiserver.registry.builtins import REVIEW_TYPES
from engine.cluster.apiserver.registry.listing import list_page
from engine.cluster.apiserver.registry.store import Written


class ResourceHandlers:
    """The verbs over `core`, answering as a real API server does."""

    def __init__(self, core: Core, *, logs_dir: Path, watch: WatchSettings,
                 tokens: TokenRequestEndpoint, reviews: AccessReviews) -> None:
        self._core = core
        self._store = core.store
        self._logs_dir = logs_dir
        self._watch = watch
        self._scale = ScaleEndpoint(core)
        self._tokens = tokens
        self._reviews = reviews

    async def handle(self, request: web.Request, target: Target) -> web.StreamResponse:
        if target.subresource == "scale":
            return await self._scale.handle(request, target)
        if target.subresource == "token":
            return await self._tokens.handle(request, target)
        if target.rt in REVIEW_TYPES:
            return await self._reviews.handle(request, target)
        if target.subresource == "exec":
            pod = self._store.get(target.rt, target.namespace or "", target.name or "")
            return await pod_exec.serve_exec(request, pod.obj)
        method = request.method
        verb = _verb(request, target)
        if target.subresource is None and verb is not None and verb not in target.rt.verbs:
            raise method_not_allowed(
                "the server does not allow this method on the requested resource"
            )
        if method == "GET":
            if target.watch or params.flag(request.query, "watch"):
                return await self._watch_request(request, target)
            if target.name is None:
                return self._list(request, target)
            if target.subresource == "log":
                pod = self._store.get(target.rt, target.namespace or "", target.name)
                return await logs.serve_log(request, self._store, pod, self._logs_dir)
            return self._get(request, target)
        if target.watch:
            raise method_not_allowed(f"{method} is not allowed on watch paths")
        if method == "POST":
            return await self._post(request, target)
        if method == "PUT" and target.name is not None:
            return await self._update(request, target)
        if method == "PATCH" and target.name is not None:
            return await self._patch(request, target)
        if method == "DELETE":
            return await self._delete(request, target)
        raise method_not_allowed("the server does not allow this method on the requested resource")

    def _get(self, request: web.Request, target: Target) -> web.Response:
        assert target.name is not None
        entry = self._store.get(target.rt, target.namespace or "", target.name)
        if wants_table(request.headers.get("Accept", "")):
            metadata = {"resourceVersion": entry.obj["metadata"]["resourceVersion"]}
            return json_response(table_bytes(target.rt, [entry], metadata, request))
        return json_response(object_bytes(target.rt, entry))

    def _list(self, request: web.Request, target: Target) -> web.Response:
        query = params.list_query(target.rt, target.namespace, request.query)
        page = list_page(self._store, target.rt, query)
        metadata: dict[str, object] = {"resourceVersion": str(page.rv)}
        if page.continue_token:
            metadata["continue"] = page.continue_token
        if page.remaining is not None:
            metadata["remainingItemCount"] = page.remaining
        if wants_table(request.headers.get("Accept", "")):
            return json_response(table_bytes(target.rt, page.entries, metadata, request))
        return json_response(list_bytes(target.rt, page.entries, metadata))

    async def _watch_request(self, request: web.Request, target: Target) -> web.StreamResponse:
        query = params.list_query(target.rt, target.namespace, request.query, watch=True)
        return await stream_watch(request, self._store, target, query, self._watch)

    async def _post(self, request: web.Request, target: Target) -> web.Response:
        body = await read_body(request)
        query = request.query
        ns = target.namespace or ""
        if target.subresource == "binding" and target.name is not None:
            self._store.bind(target.rt, ns, target.name, body, dry_run=params.dry_run(query))
            await self._core.flushed()
            return json_response(success_status(201), status=201)
        if target.name is not None:
            raise method_not_allowed("POST is only allowed on collections and pods/binding")
        written = self._store.create(
            target.rt,
            ns,
            body,
            dry_run=params.dry_run(query),
            field_validation=params.field_validation(query),
            field_manager=_field_manager(request, "CreateOptions"),
        )
        return await self._written(target, written, status=201)

    async def _update(self, request: web.Request, target: Target) -> web.Response:
        assert target.name is not None
        self._check_writable(target)
        body = await read_body(request)
        written = self._store.update(
            target.rt,
            target.namespace or "",
            target.name,
            body,
            subresource=target.subresource,
            dry_run=params.dry_run(request.query),
            field_validation=params.field_validation(request.query),
            field_manager=_field_manager(request, "UpdateOptions"),
        )
        return await self._written(target, written, status=201 if written.created else 200)

    async def _patch(self, request: web.Request, target: Target) -> web.Response:
        assert target.name is not None
        self._check_writable(target)
        query = request.query
        content_type = request.headers.get("Content-Type", "")
        is_apply = patch_media_type(target.rt, content_type) == APPLY_YAML
        manager = query.get("fieldManager") or ""
        check_options("PatchOptions", manager, apply=is_apply, force_given="force" in query)
        dry_run, validation = params.dry_run(query), params.field_validation(query)
        ns, body = target.namespace or "", await request.read()
        if is_apply:
            written = self._store.apply(
                target.rt, ns, target.name, body, field_manager=manager,
                force=params.flag(query, "force"), subresource=target.subresource,
                dry_run=dry_run, field_validation=validation,
            )
        else:
            written = self._store.patch(
                target.rt, ns, target.name, content_type, body,
                field_manager=_manager(request, manager), subresource=target.subresource,
                dry_run=dry_run, field_validation=validation,
            )
        return await self._written(target, written, status=201 if written.created else 200)

    async def _delete(self, request: web.Request, target: Target) -> web.Response:
        if target.subresource is not None:
            raise method_not_allowed(f"DELETE is not allowed on {target.subresource}")
        options = params.delete_options(request.query, await read_body(request))
        ns = target.namespace or ""
        if target.name is not None:
            entry = deletion.delete(self._store, target.rt, ns, target.name, options)
            await self._core.flushed()
            return json_response(object_bytes(target.rt, entry))
        query = params.list_query(target.rt, target.namespace, request.query)
        page = list_page(self._store, target.rt, query)
        deleted = []
        for entry in page.entries:
            metadata = entry.obj["metadata"]
            if self._store.table.get(target.rt.key, ns or metadata.get("namespace") or "",
                                     metadata["name"]) is None:
                continue
            deleted.append(
                deletion.delete(
                    self._store, target.rt, metadata.get("namespace") or "", metadata["name"],
                    options, collection=True,
                )
            )
        await self._core.flushed()
        metadata_out = {"resourceVersion": str(self._store.table.rv)}
        return json_response(list_bytes(target.rt, deleted, metadata_out))

    async def _written(self, target: Target, written: Written, *, status: int) -> web.Response:
        await self._core.flushed()
        return json_response(
            object_bytes(target.rt, written.entry), status=status, warnings=written.warnings
        )

    @staticmethod
    def _check_writable(target: Target) -> None:
        if target.subresource not in (None, "status", "finalize"):
            raise method_not_allowed(f"{target.subresource} does not support this method")


def _manager(request: web.Request, field_manager: str) -> str:
    return manager_name(field_manager, request.headers.get("User-Agent", ""))


def _field_manager(request: web.Request, options_kind: str) -> str:
    """The manager of a create or update, after checking the fieldManager parameter."""
    field_manager = request.query.get("fieldManager") or ""
    check_options(options_kind, field_manager, apply=False, force_given=False)
    return _manager(request, field_manager)


def _verb(request: web.Request, target: Target) -> str | None:
    """The Kubernetes verb a request asks for, as resource records declare them."""
    method, named = request.method, target.name is not None
    if method == "GET":
        if target.watch or params.flag(request.query, "watch"):
            return "watch"
        return "get" if named else "list"
    if method == "DELETE":
        return "delete" if named else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method)
