"""The only door to the API server: raw JSON over kept-alive HTTP connections.

The engine, the local node, the SDK and the web view all send through `KubeClient`.
Requests do not go through the official client's ApiClient: that path re-applies the
kubeconfig and scans the proxy environment on every request, then sends through urllib3;
together they cost more CPU than the rest of a reconcile (see `engine.kube.http`).
`ClientSettings` (engine.kube.config) say where the server is and who the client is: from
an address and a token, from a pod's service account, or from a kubeconfig, which only
`engine.kube.kubeconfig` reads (with the `kubernetes` package, imported then and only
then). Bodies stay plain dicts, written and parsed with orjson. Failures become the typed
errors of `engine.kube.errors`, and a token bucket shared by all threads keeps a client
within its QPS budget.
"""

from __future__ import annotations

import contextlib
import copy
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self
from urllib.parse import quote, urlencode, urlsplit

import orjson

from engine.kube.config import ClientSettings
from engine.kube.errors import (
    ApiError,
    error_from_status,
    parse_error_body,
    unavailable,
)
from engine.kube.http import TRANSPORT_ERRORS, ConnectionPool, Endpoint, Response
from engine.kube.in_cluster import PodIdentity
from engine.kube.outage import GATEWAY_STATUSES, ApiHealth
from engine.kube.ratelimit import TokenBucket
from engine.kube.resources import Resource

if TYPE_CHECKING:
    from engine.kube.kubeconfig import Configuration

_CONNECT_TIMEOUT_S = 10.0
_READ_TIMEOUT_S = 60.0
_WATCH_READ_SLACK_S = 30.0
"""A watch's read timeout is its server-side timeout plus this, so a dead peer is noticed."""
_POOL_SIZE = 32
_READ_SIZE = 65536
_AUTH_REFRESH_S = 10.0
"""How long credentials are reused before the settings' credential provider is asked again
(a 401 asks at once): it re-reads the service-account token, or has the kubeconfig's
refresh hook re-read the kubeconfig or run its credential plugin."""

_PATCH_TYPES = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}

Query = list[tuple[str, Any]]


class WatchStream(Iterator[dict[str, Any]]):
    """The events of one watch request; `close()` may be called from any thread to end it.

    A close from another thread shuts the socket down to wake a blocked read; the reading
    thread then closes the response. Either way the connection goes back to the pool.
    `on_broken` is told of a connection that breaks mid-stream (for `ApiHealth`).
    """

    def __init__(
        self, response: Response, on_broken: Callable[[BaseException], None] | None = None
    ) -> None:
        self._response = response
        self._on_broken = on_broken
        self._buffer = b""
        self._pending: deque[bytes] = deque()
        self._lock = threading.Lock()
        self._closed = False
        self._reading = False
        self._finished = False

    def __iter__(self) -> WatchStream:
        return self

    def __next__(self) -> dict[str, Any]:
        while not self._pending:
            self._fill()
        line = self._pending.popleft()
        try:
            event: dict[str, Any] = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            self.close()
            raise ApiError(0, "InvalidWatchEvent", f"{exc}: {line[:200]!r}", {}) from exc
        if event.get("type") == "ERROR":
            self.close()
            status = event.get("object") or {}
            raise error_from_status(int(status.get("code") or 500), status)
        return event

    def _fill(self) -> None:
        with self._lock:
            if self._closed:
                self._finish(reusable=False)
                raise StopIteration
            self._reading = True
        try:
            chunk = self._response.read1(_READ_SIZE)
        except TRANSPORT_ERRORS as exc:
            with self._lock:
                self._reading = False
                if not self._closed:
                    self._closed = True
                    self._finish(reusable=False)
                    error = unavailable(exc)
                    if self._on_broken is not None:
                        self._on_broken(error)
                    raise error from exc
            chunk = b""
        with self._lock:
            self._reading = False
            if self._closed or not chunk:
                # Only a body read to its end leaves the connection fit for reuse.
                self._finish(reusable=not self._closed)
                closed_early, self._closed = self._closed, True
                if closed_early or not self._buffer.strip():
                    raise StopIteration
                chunk = b"\n"  # the last line came without its newline
        *lines, self._buffer = (self._buffer + chunk).split(b"\n")
        self._pending.extend(line for line in lines if line.strip())

    def close(self) -> None:
        """End the stream and give its connection back; safe from any thread, and twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if not self._reading:
                self._finish(reusable=False)
                return
        with contextlib.suppress(ValueError, RuntimeError, OSError):
            self._response.shutdown()

    def _finish(self, *, reusable: bool) -> None:
        if self._finished:
            return
        self._finished = True
        if reusable:
            self._response.release()
        else:
            self._response.close()


class ByteStream:
    """A subresource's answer read as it comes (a followed pod log, which never ends while
    the pod runs): chunks, then b"" at its end. `shutdown` from another thread wakes a
    blocked read; the reader then closes the stream."""

    def __init__(self, response: Response) -> None:
        self._response = response

    def read_chunk(self, size: int = _READ_SIZE) -> bytes:
        """The next bytes as soon as some arrive; b"" at the end. Unavailable if the
        connection breaks (or was shut down)."""
        try:
            return self._response.read1(size)
        except TRANSPORT_ERRORS as exc:
            raise unavailable(exc) from exc

    def shutdown(self) -> None:
        """Wake a read blocked in another thread (it ends with Unavailable or b"")."""
        self._response.shutdown()

    def close(self) -> None:
        """Close the connection (a stream read part-way cannot be reused)."""
        self._response.close()


class _Counter:
    """A count many threads add to."""

    def __init__(self) -> None:
        self.value = 0
        self._lock = threading.Lock()

    def add(self) -> None:
        with self._lock:
            self.value += 1


USER_AGENT = "jobmachine"
"""How the engine names itself to the API server (its audit log and request metrics)."""


class KubeClient:
    """Thread-safe JSON access to one API server, rate limited like client-go."""

    def __init__(
        self, settings: ClientSettings | Configuration, *, qps: float = 50, burst: int = 100,
        user_agent: str = USER_AGENT,
    ) -> None:
        """`settings`: where the server is and who the client is; a `kubernetes`
        Configuration is read as a kubeconfig's would be. `qps` may be infinite (no limit)."""
        if not isinstance(settings, ClientSettings):
            from engine.kube.kubeconfig import from_configuration  # lazy: loads kubernetes

            settings = from_configuration(settings)
        self.settings = settings
        self._pool = ConnectionPool(_endpoint(settings), _POOL_SIZE)
        self._prefix = urlsplit(settings.server).path.rstrip("/")
        """A server behind a path (e.g. a proxy's /k8s/clusters/NAME) keeps it on every request."""
        self._user_agent = user_agent
        self._auth: dict[str, str] = {}
        self._auth_expires = 0.0
        self._auth_lock = threading.Lock()
        self._bucket = TokenBucket(qps, burst)
        self._sent = _Counter()
        """Shared with every `with_budget` copy: requests sent through these connections."""
        self.api_health = ApiHealth(settings.server)
        """Whether the server answers, told of every request (shared with the copies too)."""

    @classmethod
    def from_kubeconfig(
        cls, path: Path | None = None, *, context: str | None = None,
        qps: float = 50, burst: int = 100, user_agent: str = USER_AGENT,
    ) -> Self:
        """A client for a kubeconfig file (default: $KUBECONFIG or ~/.kube/config); this
        loads the `kubernetes` package (engine.kube.kubeconfig)."""
        from engine.kube.kubeconfig import load_kubeconfig  # lazy: loads kubernetes

        return cls(load_kubeconfig(path, context=context), qps=qps, burst=burst,
                   user_agent=user_agent)

    @classmethod
    def in_cluster(
        cls, pod: PodIdentity, *, qps: float = 50, burst: int = 100,
        user_agent: str = USER_AGENT,
    ) -> Self:
        """A client using the pod's service account (token re-read as it rotates)."""
        return cls(ClientSettings.in_cluster(pod), qps=qps, burst=burst, user_agent=user_agent)

    @classmethod
    def for_server(
        cls, server: str, *, token: str | None = None, ca_file: Path | None = None,
        qps: float = 50, burst: int = 100, user_agent: str = USER_AGENT,
    ) -> Self:
        """A client for a server's address with a bearer token and the CA that signed the
        server's certificate (None: the system's CAs), as the embedded server hands them to
        its local node."""
        return cls(ClientSettings.for_server(server, token=token, ca_file=ca_file),
                   qps=qps, burst=burst, user_agent=user_agent)

    def as_user(self, token: str, *, qps: float = 50, burst: int = 100) -> KubeClient:
        """A client of the same server (address, CA, proxy) that authenticates with `token`
        alone: no client certificate and no credential plugin of this client's, so the server
        answers as it would answer that user (the web view asks as the user it serves)."""
        return KubeClient(self.settings.with_token(token), qps=qps, burst=burst,
                          user_agent=self._user_agent)

    @property
    def request_count(self) -> int:
        """Requests sent so far through this client and its `with_budget` copies."""
        return self._sent.value

    def with_budget(self, qps: float, burst: int) -> KubeClient:
        """The same connections and credentials under a rate limit of their own.

        Events go through one, so a burst of them never delays a pod or a status write.
        """
        other = copy.copy(self)
        other._bucket = TokenBucket(qps, burst)
        return other

    def close(self) -> None:
        """Close every pooled connection."""
        self._pool.close()

    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        """One object; NotFound if it does not exist."""
        return self._json("GET", res.path(namespace, name))

    def open_stream(
        self, res: Resource, name: str, namespace: str | None = None, *, subresource: str,
        query: Mapping[str, Any] | None = None, read_timeout_s: float = _READ_TIMEOUT_S,
    ) -> ByteStream:
        """A subresource's answer with its body not yet read (a followed pod log, which
        never ends while the pod runs): the caller reads it as it comes, then closes it."""
        return ByteStream(self._send("GET", res.path(namespace, name, subresource),
                                     query=list((query or {}).items()) or None,
                                     timeout=(_CONNECT_TIMEOUT_S, read_timeout_s)))

    def read_text(
        self, res: Resource, name: str, namespace: str | None = None, *, subresource: str,
        query: Mapping[str, Any] | None = None,
    ) -> str:
        """A subresource the server answers as text (a pod's `log`), decoded as UTF-8."""
        path = res.path(namespace, name, subresource)
        sent_at = self.api_health.now()
        response = self._send("GET", path, query=list((query or {}).items()) or None)
        try:
            return response.read().decode(errors="replace")
        except TRANSPORT_ERRORS as exc:
            error = unavailable(exc)
            self.api_health.failed(error, sent_at=sent_at)
            raise error from exc

    def list(
        self, res: Resource, namespace: str | None = None, *, label_selector: str | None = None,
        field_selector: str | None = None, resource_version: str | None = None,
        page_size: int = 500, on_page: Callable[[int], None] | None = None,
        transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> tuple[list[dict[str, Any]], str]:
        """Every matching object (following `continue`) and the list's resourceVersion;
        `on_page` is told the number of objects read so far after each page (a list of
        100,000 pods is 200 pages); `transform` makes what is kept of each object as its
        page arrives (an informer's projection), so the whole objects never are all held.

        Items carry `apiVersion` and `kind` (the server leaves them out of list items), so
        objects read by a list and by a watch look the same.
        """
        selectors: Query = [("limit", page_size)]
        for key, value in (("labelSelector", label_selector), ("fieldSelector", field_selector)):
            if value is not None:
                selectors.append((key, value))
        query = selectors if resource_version is None else [
            *selectors, ("resourceVersion", resource_version)]
        items: list[dict[str, Any]] = []
        while True:
            page = self._json("GET", res.path(namespace), query=query)
            for item in page.get("items") or []:
                item.setdefault("apiVersion", res.api_version)
                item.setdefault("kind", res.kind)
                items.append(item if transform is None else transform(item))
            if on_page is not None:
                on_page(len(items))
            metadata = page.get("metadata") or {}
            token = metadata.get("continue")
            if not token:
                return items, str(metadata.get("resourceVersion") or "")
            query = [*selectors, ("continue", token)]

    def create(
        self, res: Resource, body: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        """Create an object; AlreadyExists if the name is taken."""
        return self._json("POST", res.path(namespace), body=body)

    def create_subresource(
        self, res: Resource, name: str, subresource: str, body: dict[str, Any],
        namespace: str | None = None,
    ) -> dict[str, Any]:
        """POST to an object's subresource: a pod's `binding`, a service account's `token`
        (a TokenRequest); NotFound if the object does not exist."""
        return self._json("POST", res.path(namespace, name, subresource), body=body)

    def server_version(self) -> dict[str, Any]:
        """The server's version (`gitVersion`, `major`, `minor`...), as `kubectl version`
        reads it."""
        return self._json("GET", "/version")

    def resources_of(self, group: str, version: str) -> dict[str, Any]:
        """The resources the server serves for `group`/`version` (discovery's
        APIResourceList; "" is the core group); NotFound if it serves none (no such CRD)."""
        return self._json("GET", f"/apis/{group}/{version}" if group else f"/api/{version}")

    def patch(
        self, res: Resource, name: str, body: Any, *, namespace: str | None = None,
        patch_type: Literal["merge", "json", "strategic"] = "merge",
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """Patch an object (or its subresource); a JSON patch body is a list of operations."""
        if patch_type == "json" and not isinstance(body, list):
            raise TypeError("a JSON patch is a list of operations")
        return self._json(
            "PATCH", res.path(namespace, name, subresource), body=body,
            content_type=_PATCH_TYPES[patch_type],
        )

    def replace(
        self, res: Resource, name: str, body: dict[str, Any], *, namespace: str | None = None,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """Replace an object (PUT); Conflict if its resourceVersion is stale."""
        return self._json("PUT", res.path(namespace, name, subresource), body=body)

    def delete(
        self, res: Resource, name: str, namespace: str | None = None, *, uid: str | None = None,
        resource_version: str | None = None, grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
    ) -> None:
        """Delete an object, with optional uid/resourceVersion preconditions; NotFound if gone."""
        options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        preconditions = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version))
                         if v is not None}
        if preconditions:
            options["preconditions"] = preconditions
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        self._json("DELETE", res.path(namespace, name), body=options)

    def watch(
        self, res: Resource, namespace: str | None = None, *, resource_version: str,
        timeout_seconds: int = 300, label_selector: str | None = None,
        allow_bookmarks: bool = True,
    ) -> WatchStream:
        """Raw watch events from `resource_version` until the server ends the stream.

        An expired resourceVersion raises Gone (as an HTTP 410 or an ERROR event); other
        ERROR events raise their typed error.
        """
        query: Query = [("watch", True), ("resourceVersion", resource_version),
                        ("timeoutSeconds", timeout_seconds),
                        ("allowWatchBookmarks", allow_bookmarks)]
        if label_selector is not None:
            query.append(("labelSelector", label_selector))
        sent_at = self.api_health.now()
        response = self._send(
            "GET", res.path(namespace), query=query,
            timeout=(_CONNECT_TIMEOUT_S, timeout_seconds + _WATCH_READ_SLACK_S),
        )
        return WatchStream(
            response, lambda error: self.api_health.failed(error, sent_at=sent_at))

    def _json(
        self, method: str, path: str, *, query: Query | None = None, body: Any = None,
        content_type: str = "application/json",
    ) -> dict[str, Any]:
        sent_at = self.api_health.now()
        response = self._send(method, path, query=query, body=body, content_type=content_type)
        try:
            data = response.read()
        except TRANSPORT_ERRORS as exc:
            error = unavailable(exc)
            self.api_health.failed(error, sent_at=sent_at)
            raise error from exc
        try:
            parsed = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise ApiError(response.status, "InvalidResponse", str(exc), {}) from exc
        if not isinstance(parsed, dict):
            raise ApiError(response.status, "InvalidResponse", "the answer is not an object", {})
        return parsed

    def _send(
        self, method: str, path: str, *, query: Query | None = None, body: Any = None,
        content_type: str = "application/json",
        timeout: tuple[float, float] = (_CONNECT_TIMEOUT_S, _READ_TIMEOUT_S),
    ) -> Response:
        """Send one request; a 2xx answer's response is returned unread, anything else raises.

        A 401 is retried once with credentials read afresh (a rotated token or an expired
        exec-plugin credential). `api_health` is told whether the server answered.
        """
        target = self._prefix + quote(path)
        if query:
            target += "?" + urlencode([(k, _query_value(v)) for k, v in query])
        payload = None if body is None else orjson.dumps(body)
        for fresh_credentials in (False, True):
            self._bucket.take()
            self._sent.add()
            headers = {"Accept": "application/json", "User-Agent": self._user_agent,
                       **self._credentials(refresh=fresh_credentials)}
            if payload is not None:
                headers["Content-Type"] = content_type
            sent_at = self.api_health.now()
            try:
                response = self._pool.request(
                    method, target, body=payload, headers=headers, timeout=timeout)
            except TRANSPORT_ERRORS as exc:
                error = unavailable(exc)
                self.api_health.failed(error, sent_at=sent_at)
                raise error from exc
            if response.status not in GATEWAY_STATUSES:
                self.api_health.answered(sent_at=sent_at)
            if 200 <= response.status < 300:
                return response
            try:
                data = response.read()
            except TRANSPORT_ERRORS:
                data = b""
            if response.status != 401 or fresh_credentials or not self._auth:
                break
        refused = error_from_status(response.status, parse_error_body(data))
        if response.status in GATEWAY_STATUSES:
            self.api_health.failed(refused, sent_at=sent_at)
        raise refused

    def _credentials(self, *, refresh: bool) -> dict[str, str]:
        """The authorization header, asked of the settings at most every few seconds."""
        with self._auth_lock:
            now = time.monotonic()
            if refresh or now >= self._auth_expires:
                # A token file written by hand often ends in a newline; a header cannot.
                value = self.settings.credentials().strip()
                self._auth = {"authorization": value} if value else {}
                self._auth_expires = now + _AUTH_REFRESH_S
            return self._auth


def _endpoint(settings: ClientSettings) -> Endpoint:
    """The server's address, TLS settings and proxy."""
    url = urlsplit(settings.server)
    secure = url.scheme != "http"
    if url.hostname is None:
        raise ValueError(f"the cluster's server address has no host: {settings.server!r}")
    proxy = None
    if settings.proxy:
        proxy_url = urlsplit(settings.proxy)
        if proxy_url.scheme != "http" or proxy_url.hostname is None:
            raise ValueError(f"only http:// proxies are supported, not {settings.proxy!r}")
        proxy = (proxy_url.hostname, proxy_url.port or 80)
    return Endpoint(
        scheme="https" if secure else "http", host=url.hostname,
        port=url.port or (443 if secure else 80),
        tls=settings.tls_context() if secure else None,
        server_name=settings.server_name, proxy=proxy,
        proxy_headers=dict(settings.proxy_headers),
    )


def _query_value(value: Any) -> str:
    """Booleans as the API server spells them; everything else as text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
