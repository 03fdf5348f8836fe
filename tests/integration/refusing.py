"""An embedded API server that answers chosen requests as a real kube-apiserver did.

`Refusals` rides on the server's fault hook (innermost: the request is authenticated and
authorized first, as kube-apiserver admits after it authorizes) and answers the requests a
test picks with the Status body a real server sent: Pod Security, ResourceQuota, a
namespace being deleted, an absent or forbidden SelfSubjectReview. Everything else is
served as usual.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from engine.cluster.apiserver.auth.authorization import INFO_KEY
from engine.cluster.apiserver.endpoints.faults import FaultInjector
from engine.cluster.apiserver.endpoints.request_info import RequestInfo

Obj = dict[str, Any]
Answer = Callable[[RequestInfo, Obj], tuple[int, Obj]]
"""From the request (and its body, for a create) the HTTP status and Status body."""


def forbidden(resource: str, name: str, detail: str, *, code: int = 403,
              reason: str = "Forbidden", causes: list[Obj] | None = None) -> tuple[int, Obj]:
    """A Status as `apierrors.NewForbidden` builds it (`admission.NewForbidden` too)."""
    lead = f'{resource} "{name}" is forbidden' if name else f"{resource} is forbidden"
    details: Obj = {"kind": resource}
    if name:
        details["name"] = name
    if causes:
        details["causes"] = causes
    return code, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                  "message": f"{lead}: {detail}", "reason": reason, "details": details,
                  "code": code}


def pod_security(info: RequestInfo, body: Obj) -> tuple[int, Obj]:
    """kube-apiserver 1.32 with `pod-security.kubernetes.io/enforce: restricted` on the
    namespace, for a pod whose container sets no securityContext."""
    name = body["metadata"]["name"]
    container = body["spec"]["containers"][0]["name"]
    return forbidden("pods", name, (
        f'violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false '
        f'(container "{container}" must set securityContext.allowPrivilegeEscalation=false), '
        f'unrestricted capabilities (container "{container}" must set '
        f'securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container '
        f'"{container}" must set securityContext.runAsNonRoot=true), seccompProfile (pod or '
        f'container "{container}" must set securityContext.seccompProfile.type to '
        f'"RuntimeDefault" or "Localhost")'))


def quota_exceeded(info: RequestInfo, body: Obj) -> tuple[int, Obj]:
    """A ResourceQuota `tiny` with `pods: 1`, one pod already running."""
    return forbidden("pods", body["metadata"]["name"],
                     "exceeded quota: tiny, requested: pods=1, used: pods=1, limited: pods=1")


def namespace_terminating(info: RequestInfo, body: Obj) -> tuple[int, Obj]:
    """NamespaceLifecycle while the namespace is being deleted (any create in it)."""
    name = (body.get("metadata") or {}).get("name") or ""
    return forbidden(info.resource, name, (
        f"unable to create new content in namespace {info.namespace} because it is being "
        f"terminated"), causes=[{"reason": "NamespaceTerminating", "message":
                                 f"namespace {info.namespace} is being terminated",
                                 "field": "metadata.namespace"}])


@dataclass
class Refusals(FaultInjector):
    """Answers (verb, resource, namespace) picked by `refuse` with a real server's Status;
    counts the answers given."""

    answers: dict[tuple[str, str, str], Answer] = field(default_factory=dict)
    given: dict[tuple[str, str, str], int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        self._answers_lock = threading.Lock()

    def refuse(self, verb: str, resource: str, namespace: str, answer: Answer) -> None:
        """Answer `verb` on `resource` in `namespace` ("" for cluster scope) with `answer`."""
        with self._answers_lock:
            self.answers[(verb, resource, namespace)] = answer

    def allow(self, verb: str, resource: str, namespace: str) -> None:
        """Serve those requests again."""
        with self._answers_lock:
            self.answers.pop((verb, resource, namespace), None)

    def count(self, verb: str, resource: str, namespace: str) -> int:
        """How often those requests were refused so far."""
        with self._answers_lock:
            return self.given.get((verb, resource, namespace), 0)

    def middleware(self) -> Middleware:
        @web.middleware
        async def refuse(request: web.Request, handler: Handler) -> web.StreamResponse:
            info: RequestInfo | None = request.get(INFO_KEY)
            key = (info.verb, info.resource, info.namespace) if info is not None else None
            with self._answers_lock:
                answer = self.answers.get(key) if key is not None else None
            if answer is None or info is None or key is None:
                return await handler(request)
            body = await request.json() if request.can_read_body else {}
            code, status = answer(info, body if isinstance(body, dict) else {})
            with self._answers_lock:
                self.given[key] = self.given.get(key, 0) + 1
            return web.json_response(status, status=code)

        return refuse
