"""Who is looking, and what they may see: asked of the API server, as that user.

The web view has no accounts of its own: anything that shows jobs asks for the same
credentials as the API. A bearer token is checked with a SelfSubjectReview made with
that token (the server answers 401 to one it does not accept; where that review is absent
or not granted, a SelfSubjectAccessReview checks it, without the user's name), and each
thing a page shows with a SelfSubjectAccessReview, so RBAC decides exactly as for
`kubectl get`.
Answers are kept for a few seconds, so a page and its live updates cost no request
per redraw and a revoked token stops working within that time.

Browsers get a session: a random id in an HttpOnly, SameSite=Strict cookie names the
token on the server, so the token itself never sits in the browser's cookie jar.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar
from urllib.parse import urlsplit

from engine.kube.client import KubeClient
from engine.kube.errors import ApiError
from engine.kube.resources import Resource

SELF_SUBJECT_REVIEWS = Resource("authentication.k8s.io", "v1", "selfsubjectreviews",
                                "SelfSubjectReview", namespaced=False)
SELF_SUBJECT_ACCESS_REVIEWS = Resource("authorization.k8s.io", "v1",
                                       "selfsubjectaccessreviews", "SelfSubjectAccessReview",
                                       namespaced=False)

ANSWER_TTL_S = 10.0
"""How long the server's answer about a token (who, may it) is trusted."""
SESSION_TTL_S = 12 * 3600.0
"""How long a browser session lasts without logging in again."""
UNKNOWN_USER = "(a user the server does not name)"
_SESSIONS_KEPT = 1024
_CLIENTS_KEPT = 64

T = TypeVar("T")


@dataclass(frozen=True)
class Ask:
    """One thing a page needs permission for: a verb on a resource, in a namespace ("" for
    every namespace)."""

    verb: str
    group: str
    resource: str
    namespace: str = ""

    @classmethod
    def listing(cls, resource: Resource, namespace: str = "") -> Ask:
        """May the user list `resource` in `namespace` ("": in all of them)?"""
        return cls("list", resource.group, resource.plural, namespace)


class Reviews(Protocol):
    """The two questions the API server answers about a token."""

    def who(self, token: str) -> str | None:
        """The user's name, or None when the server does not accept the token."""

    def may(self, token: str, ask: Ask) -> bool:
        """Whether RBAC (or whatever authorizes) lets the token's user do `ask`."""


class ApiReviews:
    """`Reviews` answered by the API server, each request made with the user's own token."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client
        self._lock = threading.Lock()
        self._clients: OrderedDict[str, KubeClient] = OrderedDict()

    def client_for(self, token: str) -> KubeClient:
        """A client authenticating with `token` (the few most recent are kept open)."""
        with self._lock:
            client = self._clients.pop(token, None) or self._client.as_user(token)
            self._clients[token] = client
            evicted = self._clients.popitem(last=False)[1] if len(
                self._clients) > _CLIENTS_KEPT else None
        if evicted is not None:
            evicted.close()
        return client

    def who(self, token: str) -> str | None:
        body = {"apiVersion": SELF_SUBJECT_REVIEWS.api_version, "kind": SELF_SUBJECT_REVIEWS.kind}
        try:
            answer = self.client_for(token).create(SELF_SUBJECT_REVIEWS, body)
        except ApiError as exc:
            if exc.status == 401:
                return None
            if exc.status not in (403, 404):
                raise
            return self._accepted(token)
        info = (answer.get("status") or {}).get("userInfo") or {}
        return str(info.get("username") or "")

    def _accepted(self, token: str) -> str | None:
        """Whether the server accepts `token`, where SelfSubjectReview cannot say whose it
        is: absent (404, Kubernetes before 1.28) or not granted to this user (403, a
        cluster that removed it from `system:basic-user`).

        A SelfSubjectAccessReview made with the token answers 401 when the server does not
        accept it, and anything else when it does (every authenticated user may create one
        under the default `system:basic-user` ClusterRole; a 403 means authenticated too).
        A TokenReview would also name the user, but needs a grant to the web view's own
        account (`system:auth-delegator`) that the engine's RBAC does not give it.
        """
        try:
            self.may(token, Ask("list", "", "namespaces"))
        except ApiError as refused:
            if refused.status == 401:
                return None
            raise
        return UNKNOWN_USER

    def may(self, token: str, ask: Ask) -> bool:
        attributes = {key: value for key, value in (
            ("verb", ask.verb), ("group", ask.group), ("resource", ask.resource),
            ("namespace", ask.namespace)) if value}
        body: dict[str, Any] = {
            "apiVersion": SELF_SUBJECT_ACCESS_REVIEWS.api_version,
            "kind": SELF_SUBJECT_ACCESS_REVIEWS.kind,
            "spec": {"resourceAttributes": attributes},
        }
        try:
            answer = self.client_for(token).create(SELF_SUBJECT_ACCESS_REVIEWS, body)
        except ApiError as exc:
            if exc.status == 403:
                return False
            raise
        return bool((answer.get("status") or {}).get("allowed"))

    def close(self) -> None:
        """Close every user's connections."""
        with self._lock:
            clients = list(self._clients.values())
            self._clients.clear()
        for client in clients:
            client.close()


class _Answers:
    """Answers kept for `ttl_s` seconds, keyed by (a hash of the token, the question)."""

    def __init__(self, ttl_s: float, clock: Callable[[], float]) -> None:
        self._ttl_s = ttl_s
        self._clock = clock
        self._lock = threading.Lock()
        self._kept: dict[tuple[str, object], tuple[float, object]] = {}

    def get(self, token: str, question: object, ask: Callable[[], T]) -> T:
        key = (_digest(token), question)
        now = self._clock()
        with self._lock:
            kept = self._kept.get(key)
        if kept is not None and kept[0] > now:
            return kept[1]  # type: ignore[return-value]
        answer = ask()
        with self._lock:
            self._kept = {k: v for k, v in self._kept.items() if v[0] > now}
            self._kept[key] = (now + self._ttl_s, answer)
        return answer


class Gate:
    """Decides, for a token, who it is and which jobs it may see (answers cached briefly)."""

    def __init__(self, reviews: Reviews, *, ttl_s: float = ANSWER_TTL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._reviews = reviews
        self._answers = _Answers(ttl_s, clock)

    def who(self, token: str) -> str | None:
        """The token's user, or None when the API server does not accept it."""
        return self._answers.get(token, "who", lambda: self._reviews.who(token))

    def may(self, token: str, ask: Ask) -> bool:
        """Whether the token's user may do `ask`."""
        return self._answers.get(token, ask, lambda: self._reviews.may(token, ask))

    def may_list(self, token: str, resource: Resource, namespace: str) -> bool:
        """May the user list `resource` in `namespace` (allowed everywhere, or there)?"""
        return (self.may(token, Ask.listing(resource))
                or self.may(token, Ask.listing(resource, namespace)))

    def visible(self, token: str, places: Iterable[tuple[Resource, str]]) -> set[tuple[Resource,
                                                                                        str]]:
        """Of (kind, namespace) pairs, those whose jobs the user may list."""
        return {(resource, namespace) for resource, namespace in set(places)
                if self.may_list(token, resource, namespace)}


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Sessions:
    """Browser sessions: random ids naming tokens, forgotten after `ttl_s` seconds."""

    def __init__(self, *, ttl_s: float = SESSION_TTL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl_s = ttl_s
        self._clock = clock
        self._lock = threading.Lock()
        self._tokens: OrderedDict[str, tuple[float, str]] = OrderedDict()

    def start(self, token: str) -> str:
        """A new session for `token`: its id, for the cookie."""
        session = secrets.token_urlsafe(32)
        with self._lock:
            self._tokens[session] = (self._clock() + self._ttl_s, token)
            while len(self._tokens) > _SESSIONS_KEPT:
                self._tokens.popitem(last=False)
        return session

    def token(self, session: str) -> str | None:
        """The session's token, or None for an unknown or expired session."""
        with self._lock:
            kept = self._tokens.get(session)
            if kept is None:
                return None
            if kept[0] <= self._clock():
                del self._tokens[session]
                return None
            return kept[1]

    def end(self, session: str) -> None:
        """Forget a session (logging out)."""
        with self._lock:
            self._tokens.pop(session, None)


def bearer_token(headers: Mapping[str, str]) -> str | None:
    """The token of an `Authorization: Bearer T` header, if the request has one."""
    scheme, _, token = (headers.get("Authorization") or "").strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def safe_next(path: str | None) -> str:
    """Where to go after logging in: a path of this server only (never `//host` or a URL).

    Browsers drop tabs and newlines from a URL and read `\\` as `/`, and a header drops
    control characters, so `/<TAB>/evil.com` would leave as `//evil.com`: a path holding
    any of them (anything but printable ASCII), or anything but a path once parsed, goes to
    the start page instead.
    """
    if not path or any(not 0x21 <= ord(char) <= 0x7E or char == "\\" for char in path):
        return "/"
    parts = urlsplit(path)
    if not path.startswith("/") or path.startswith("//") or parts.scheme or parts.netloc:
        return "/"
    return path
