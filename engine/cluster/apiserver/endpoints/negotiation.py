"""The media type of an API answer, from the request's Accept header, as kube-apiserver picks it.

JSON is what every answer is built as. `application/yaml` preferred over JSON
gets the same object as YAML; the protobuf type (which this server reads but
does not write for resources) is answered in JSON, as before; `*/*` and
`application/*` mean JSON. An Accept header naming nothing the server can
write (`application/xml`) is 406 NotAcceptable, with kube-apiserver's message.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Literal

import orjson
import yaml
from aiohttp import web

from engine.cluster.apiserver.errors import ApiError

Answer = Literal["json", "yaml"]
ACCEPTED = ("application/json", "application/yaml", "application/vnd.kubernetes.protobuf")
_WRITES: dict[str, Answer] = {
    "*/*": "json", "application/*": "json", "application/json": "json",
    "application/yaml": "yaml", "application/vnd.kubernetes.protobuf": "json",
}


def _quality(params: list[str]) -> float:
    for param in params:
        name, _, value = param.partition("=")
        if name.strip().lower() == "q":
            try:
                return float(value.strip())
            except ValueError:
                return 0.0
    return 1.0


def answer_type(accept: str) -> Answer | None:
    """The form to answer in; None when the header accepts nothing this server writes."""
    if not accept.strip():
        return "json"
    ranked: list[tuple[float, int, Answer]] = []
    for position, media_range in enumerate(accept.split(",")):
        media_type, *params = media_range.split(";")
        written = _WRITES.get(media_type.strip().lower())
        quality = _quality(params)
        if written is not None and quality > 0:
            ranked.append((-quality, position, written))
    return min(ranked)[2] if ranked else None


def not_acceptable() -> ApiError:
    return ApiError(406, "NotAcceptable", "only the following media types are accepted: "
                    + ", ".join(ACCEPTED))


_RAW_SUBRESOURCES = frozenset({"log", "exec", "attach", "portforward", "proxy"})
"""Answers that are not API objects (a log is text, exec a WebSocket): any Accept will do."""


def _negotiates(path: str) -> bool:
    parts = path.strip("/").split("/")
    if parts[0] not in ("api", "apis"):
        return False
    return not _RAW_SUBRESOURCES.intersection(parts[-2:])


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def negotiated(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Refuse an unacceptable Accept header before the handler runs; turn a JSON answer into
    YAML when YAML is what the client prefers (a stream, such as a watch, stays JSON)."""
    if not _negotiates(request.path):
        return await handler(request)
    wanted = answer_type(request.headers.get("Accept", ""))
    if wanted is None:
        raise not_acceptable()
    response = await handler(request)
    if (wanted == "yaml" and isinstance(response, web.Response) and response.body is not None
            and response.content_type == "application/json"):
        body = response.body if isinstance(response.body, bytes) else b""
        document = orjson.loads(body) if body else None
        response.body = yaml.safe_dump(document, sort_keys=False).encode()
        response.content_type = "application/yaml"
    return response
