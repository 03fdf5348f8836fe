"""The aiohttp application: authentication, authorization, audit, errors as Status,
discovery, OpenAPI, resources.

Discovery and OpenAPI documents are built from the registry and cached per
registry revision (kubectl asks for them often); resource paths go to
`handlers.py`. Every failure, expected or not, reaches the client as a
`Status` object with the code and reason a real kube-apiserver would use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web
from aiohttp.typedefs import Handler
from loguru import logger

from engine.cluster.apiserver.auth.access_reviews import AccessReviews
from engine.cluster.apiserver.auth.audit import AuditLog
from engine.cluster.apiserver.auth.authentication import Authenticator
from engine.cluster.apiserver.auth.authorization import RequestAuthorizer
from engine.cluster.apiserver.auth.identity import UserInfo
from engine.cluster.apiserver.auth.rbac import RbacAuthorizer
from engine.cluster.apiserver.auth.service_account_tokens import TokenAuthority
from engine.cluster.apiserver.auth.token_request import TokenRequestEndpoint
from engine.cluster.apiserver.core import Core
from engine.cluster.apiserver.endpoints import discovery, openapi, openapi_protobuf
from engine.cluster.apiserver.endpoints.faults import FaultInjector
from engine.cluster.apiserver.endpoints.handlers import ResourceHandlers
from engine.cluster.apiserver.endpoints.negotiation import negotiated
from engine.cluster.apiserver.endpoints.request_metrics import RequestCounter
from engine.cluster.apiserver.endpoints.responses import error_response, json_response
from engine.cluster.apiserver.endpoints.routes import not_found_path, parse_target
from engine.cluster.apiserver.endpoints.watch_stream import WatchSettings
from engine.cluster.apiserver.errors import ApiError, internal
from engine.cluster.apiserver.registry.builtins import PODS, SECRETS, SERVICE_ACCOUNTS
from engine.cluster.apiserver.storage.objects import Obj

_MAX_BODY = 16 * 1024 * 1024

_log = logger.bind(component="apiserver.http")


@web.middleware
async def status_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Turn every error into a Status answer."""
    try:
        return await handler(request)
    except ApiError as exc:
        return error_response(exc)
    except web.HTTPException as exc:
        return error_response(ApiError(exc.status, exc.reason.replace(" ", ""), exc.text or ""))
    except Exception as exc:
        _log.exception("{} {} failed", request.method, request.path)
        return error_response(internal(f"{type(exc).__name__}: {exc}"))


class ApiApp:
    """Routes requests to discovery, OpenAPI and the resource handlers."""

    def __init__(self, core: Core, *, logs_dir: Path, watch: WatchSettings,
                 tokens: TokenRequestEndpoint, reviews: AccessReviews) -> None:
        self._core = core
        self._registry = core.registry
        self._resources = ResourceHandlers(core, logs_dir=logs_dir, watch=watch, tokens=tokens,
                                           reviews=reviews)
        self._cache: dict[str, tuple[int, bytes]] = {}

    def _cached(
        self,
        key: str,
        build: Callable[[], Any],
        encode: Callable[[Any], bytes] = orjson.dumps,
        content_type: str | None = None,
    ) -> web.Response:
        revision = self._registry.revision
        hit = self._cache.get(key)
        if hit is None or hit[0] != revision:
            try:
                document = build()
            except KeyError as exc:
                raise not_found_path() from exc
            hit = (revision, encode(document))
            self._cache[key] = hit
        if content_type is not None:
            return web.Response(body=hit[1], content_type=content_type)
        return json_response(hit[1])

    async def version(self, request: web.Request) -> web.Response:
        """/version as kube-apiserver writes it: indented by two spaces, no closing newline."""
        return web.Response(
            body=orjson.dumps(discovery.version_info(), option=orjson.OPT_INDENT_2),
            content_type="application/json")

    async def health(self, request: web.Request) -> web.Response:
        return web.Response(text="ok", content_type="text/plain")

    async def api(self, request: web.Request) -> web.StreamResponse:
        path = request.path.rstrip("/")
        types = self._registry.types
        if path == "/api":
            address = request.host
            return self._cached(
                f"api:{address}", lambda: discovery.api_versions(server_address=address)
            )
        if path == "/api/v1":
            return self._cached(path, lambda: discovery.api_resource_list("", "v1", types()))
        if path == "/apis":
            return self._cached(path, lambda: discovery.api_group_list(types()))
        segments = path.strip("/").split("/")
        if segments[0] == "apis" and len(segments) == 2:
            return self._cached(path, lambda: discovery.api_group(segments[1], types()))
        if segments[0] == "apis" and len(segments) == 3:
            group, version = segments[1], segments[2]
            return self._cached(
                path, lambda: discovery.api_resource_list(group, version, types())
            )
        target = parse_target(self._registry, path)
        if target is None:
            raise not_found_path()
        return await self._resources.handle(request, target)

    async def openapi_v2(self, request: web.Request) -> web.Response:
        build = lambda: openapi.openapi_v2(self._registry.types())  # noqa: E731
        if openapi_protobuf.wants_protobuf(request.headers.get("Accept", "")):
            return self._cached(
                "openapi/v2.pb", build, openapi_protobuf.document_bytes,
                openapi_protobuf.PROTOBUF_V2,
            )
        return self._cached("openapi/v2", build)

    async def openapi_v3(self, request: web.Request) -> web.Response:
        path = request.path.rstrip("/")
        types = self._registry.types
        if path == "/openapi/v3":
            return self._cached(path, lambda: openapi.openapi_v3_paths(types()))
        rest = path.removeprefix("/openapi/v3/").split("/")
        if rest[:1] == ["api"] and len(rest) == 2:
            return self._cached(path, lambda: openapi.openapi_v3_document("", rest[1], types()))
        if rest[:1] == ["apis"] and len(rest) == 3:
            return self._cached(
                path, lambda: openapi.openapi_v3_document(rest[1], rest[2], types())
            )
        raise not_found_path()


def build_app(
    core: Core,
    *,
    token: str,
    logs_dir: Path,
    watch: WatchSettings | None = None,
    tokens: TokenAuthority | None = None,
    audit: AuditLog | None = None,
    users: Mapping[str, UserInfo] | None = None,
    faults: FaultInjector | None = None,
) -> web.Application:
    """The whole API server as an aiohttp application. `token` is the admin's; `tokens`
    signs and checks service-account tokens (a fresh key when None); `audit`, when given,
    records every request; `users` are the token file's users by token; `faults`, when
    given, injects faults into authorized resource requests (`faults.py`)."""
    requests = RequestCounter()
    tokens = tokens or TokenAuthority.for_data_dir(None)
    table = core.store.table
    by_kind = {"ServiceAccount": SERVICE_ACCOUNTS.key, "Pod": PODS.key, "Secret": SECRETS.key}

    def lookup(kind: str, namespace: str, name: str) -> Obj | None:
        entry = table.get(by_kind[kind], namespace, name)
        return entry.obj if entry is not None else None

    rbac = RbacAuthorizer(table)
    authorizer = RequestAuthorizer(rbac)
    middlewares = [
        Authenticator(token, tokens, lookup, users).middleware(),
        requests.middleware(),
        status_errors,
        authorizer.middleware(),
        negotiated,
    ]
    if audit is not None:
        middlewares.insert(0, audit.middleware())
    app = web.Application(middlewares=middlewares, client_max_size=_MAX_BODY)
    if faults is not None:
        # Innermost: the request is authorized (its RequestInfo known) and counted.
        app.middlewares.append(faults.install(app, core.store.hub))
    if audit is not None:
        app.on_response_prepare.append(audit.on_response_prepare)
    api = ApiApp(core, logs_dir=logs_dir, watch=watch or WatchSettings(),
                 tokens=TokenRequestEndpoint(core.store, tokens),
                 reviews=AccessReviews(authorizer, rbac))
    router = app.router
    router.add_get("/version", api.version)
    router.add_get("/metrics", requests.serve)
    for probe in ("/healthz", "/livez", "/readyz"):
        router.add_get(probe, api.health)
    router.add_get("/openapi/v2", api.openapi_v2)
    router.add_get("/openapi/v3", api.openapi_v3)
    router.add_get("/openapi/v3/{rest:.*}", api.openapi_v3)
    for prefix in ("/api", "/apis"):
        router.add_route("*", prefix, api.api)
        router.add_route("*", prefix + "/{rest:.*}", api.api)
    return app
