"""The audit log: one `audit.k8s.io/v1` Event per request, as JSON lines.

Written at the Metadata level kube-apiserver's `--audit-log-path` writes with a
policy of `level: Metadata`: who asked (and whom they impersonated), the verb,
the object (resource, namespace, name, group, version, subresource), the
response code, and the authorization decision with its reason, which names
the binding and role that allowed the request. Bodies are never written. One
event per request at stage ResponseComplete, so a watch is recorded when it
ends.
"""

from __future__ import annotations

import sys
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import orjson
from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from engine.cluster.apiserver.auth.authorization import DECISION_KEY, INFO_KEY, REQUESTER_KEY
from engine.cluster.apiserver.auth.identity import USER_KEY, UserInfo
from engine.cluster.apiserver.auth.rbac import Decision
from engine.cluster.apiserver.endpoints.request_info import RequestInfo, request_info

# `--audit-log-path -` writes to standard output, as kube-apiserver's flag does.
STDOUT = "-"
_SENT_STATUS = web.RequestKey("jobmachine.sent_status", int)
_AUDIT_ID = web.RequestKey("jobmachine.audit_id", str)


def _timestamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class AuditLog:
    """Appends one event per request to `path` (or standard output for "-")."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._stream: IO[bytes] | None = None

    def _output(self) -> IO[bytes]:
        if self._stream is None:
            if self._path == STDOUT:
                self._stream = sys.stdout.buffer
            else:
                Path(self._path).parent.mkdir(parents=True, exist_ok=True)
                self._stream = open(self._path, "ab")  # noqa: SIM115 (closed by close())
        return self._stream

    def close(self) -> None:
        with self._lock:
            if self._stream is not None and self._path != STDOUT:
                self._stream.close()
            self._stream = None

    def write(self, event: dict[str, Any]) -> None:
        line = orjson.dumps(event) + b"\n"
        with self._lock:
            stream = self._output()
            stream.write(line)
            stream.flush()

    def middleware(self) -> Middleware:
        @web.middleware
        async def record(request: web.Request, handler: Handler) -> web.StreamResponse:
            received = datetime.now(UTC)
            request[_AUDIT_ID] = request.headers.get("Audit-ID") or str(uuid.uuid4())
            status: dict[str, Any] = {"metadata": {}, "code": 500}
            try:
                response = await handler(request)
                status = _response_status(response)
                return response
            except web.HTTPException as exc:
                status = {"metadata": {}, "code": exc.status}
                raise
            finally:
                # A stream (a watch, a followed log) the client closed ends with the status
                # it started with, not with the cancellation.
                if _SENT_STATUS in request and status["code"] == 500:
                    status = {"metadata": {}, "code": request[_SENT_STATUS]}
                self.write(_event(request, status, received))

        return record

    @staticmethod
    async def on_response_prepare(request: web.Request, response: web.StreamResponse) -> None:
        """Tell the client its audit ID, as kube-apiserver does, and remember the status sent
        (register on the app's `on_response_prepare`)."""
        request[_SENT_STATUS] = response.status
        if _AUDIT_ID in request:
            response.headers["Audit-Id"] = request[_AUDIT_ID]


def _response_status(response: web.StreamResponse) -> dict[str, Any]:
    """The event's responseStatus: the code, and for a failure the Status it answered with."""
    status: dict[str, Any] = {"metadata": {}, "code": response.status}
    body = response.body if isinstance(response, web.Response) else None
    if response.status >= 400 and isinstance(body, bytes):
        try:
            answer = orjson.loads(body)
        except orjson.JSONDecodeError:
            return status
        if isinstance(answer, dict) and answer.get("kind") == "Status":
            status |= {key: answer[key] for key in ("status", "message", "reason", "details")
                       if key in answer}
    return status


def _event(request: web.Request, status: dict[str, Any], received: datetime
           ) -> dict[str, Any]:
    info: RequestInfo = request.get(INFO_KEY) or request_info(
        request.method, request.path, request.query)
    user: UserInfo | None = request.get(USER_KEY)
    requester: UserInfo | None = request.get(REQUESTER_KEY)
    event: dict[str, Any] = {
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "level": "Metadata",
        "auditID": request.get(_AUDIT_ID) or str(uuid.uuid4()),
        "stage": "ResponseComplete",
        "requestURI": request.path_qs,
        "verb": info.verb,
    }
    acting = requester or user
    event["user"] = acting.as_dict() if acting is not None else {}
    if requester is not None and user is not None:
        event["impersonatedUser"] = user.as_dict()
    event["sourceIPs"] = [request.remote] if request.remote else []
    if agent := request.headers.get("User-Agent"):
        event["userAgent"] = agent
    if info.resource_request:
        ref = {"resource": info.resource, "namespace": info.namespace, "name": info.name,
               "apiGroup": info.api_group, "apiVersion": info.api_version,
               "subresource": info.subresource}
        event["objectRef"] = {key: value for key, value in ref.items() if value}
    event["responseStatus"] = status
    event["requestReceivedTimestamp"] = _timestamp(received)
    event["stageTimestamp"] = _timestamp(datetime.now(UTC))
    decision: Decision | None = request.get(DECISION_KEY)
    if decision is not None:
        annotations = {"authorization.k8s.io/decision": "allow" if decision.allowed else "forbid"}
        annotations["authorization.k8s.io/reason"] = decision.reason
        event["annotations"] = annotations
    return event
