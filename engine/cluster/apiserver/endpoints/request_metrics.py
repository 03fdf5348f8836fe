"""Requests served, counted by client, verb and response code, exported at `/metrics`.

The real kube-apiserver exports `apiserver_request_total` by verb, resource,
subresource and code; ours adds the client (the first word of its User-Agent,
e.g. `jobmachine` or `kubectl`), so the benchmarks can count what each
controller asks of the server per job lifecycle, events apart.
"""

from __future__ import annotations

from collections import Counter

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

_NAMESPACE_SUBRESOURCES = ("status", "finalize")
_VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch",
          "DELETE": "delete"}


class RequestCounter:
    """Counts per (client, verb, resource, subresource, code); a request counts once, when
    its answer ends (a watch when its stream ends)."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str, str, str, int]] = Counter()

    def middleware(self) -> Middleware:
        """The aiohttp middleware that counts every request it passes on."""

        @web.middleware
        async def count(request: web.Request, handler: Handler) -> web.StreamResponse:
            code = 500
            try:
                response = await handler(request)
                code = response.status
                return response
            except web.HTTPException as exc:
                code = exc.status
                raise
            finally:
                resource, subresource = _resource(request.path)
                self.counts[(_client(request), _verb(request), resource, subresource, code)] += 1

        return count

    def exposition(self) -> str:
        """The counts in Prometheus' text format."""
        lines = [
            "# HELP apiserver_request_total Requests served, by client, verb, resource,"
            " subresource and code.",
            "# TYPE apiserver_request_total counter",
        ]
        for (client, verb, resource, subresource, code), value in sorted(self.counts.items()):
            labels = (f'client="{client}",verb="{verb}",resource="{resource}",'
                      f'subresource="{subresource}",code="{code}"')
            lines.append(f"apiserver_request_total{{{labels}}} {value}")
        return "\n".join(lines) + "\n"

    async def serve(self, _request: web.Request) -> web.Response:
        """GET /metrics."""
        return web.Response(text=self.exposition(), content_type="text/plain")


def _client(request: web.Request) -> str:
    agent = request.headers.get("User-Agent", "")
    word = agent.split("/", 1)[0].split(" ", 1)[0]
    return "".join(c for c in word if c.isalnum() or c in "-_.") or "unknown"


def _verb(request: web.Request) -> str:
    if request.method == "GET":
        return "watch" if request.query.get("watch") in ("1", "true") else "get"
    return _VERBS.get(request.method, request.method.lower())


def _resource(path: str) -> tuple[str, str]:
    """The resource and subresource a request path names ('' for discovery and the like)."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"]:
        rest = parts[2:]
    elif parts[:1] == ["apis"]:
        rest = parts[3:]
    else:
        return "", ""
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in _NAMESPACE_SUBRESOURCES:
        rest = rest[2:]
    return (rest[0] if rest else ""), (rest[2] if len(rest) > 2 else "")
