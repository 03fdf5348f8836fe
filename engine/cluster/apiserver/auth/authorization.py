"""Authorization of every request, and impersonation (`kubectl --as`), by RBAC.

Runs after authentication: members of `system:masters` pass; anyone else
needs a rule from a binding (`rbac.py`). A denied request gets kube-apiserver's
403 Status word for word, so a client's error message names the user, verb,
resource, group and namespace it lacks. Impersonation headers switch the
identity only when the requester may `impersonate` the user, groups and uid
asked for.
"""

from __future__ import annotations

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from engine.cluster.apiserver.auth.identity import (
    ANONYMOUS,
    AUTHENTICATED,
    UNAUTHENTICATED,
    USER_KEY,
    UserInfo,
    service_account_groups,
    split_service_account,
)
from engine.cluster.apiserver.auth.rbac import Decision, RbacAuthorizer
from engine.cluster.apiserver.endpoints.request_info import RequestInfo, request_info
from engine.cluster.apiserver.errors import ApiError, bad_request

# Where the impersonating user is kept when a request acts as someone else (for audit),
# and what the request asked and was answered (for audit).
REQUESTER_KEY = web.RequestKey("jobmachine.requester", UserInfo)
INFO_KEY = web.RequestKey("jobmachine.request_info", RequestInfo)
DECISION_KEY = web.RequestKey("jobmachine.decision", Decision)


def forbidden_request(user: UserInfo, info: RequestInfo, reason: str = "") -> ApiError:
    """kube-apiserver's 403 for a request its authorizer denied."""
    if not info.resource_request:
        message = f'User "{user.name}" cannot {info.verb} path "{info.path}"'
    else:
        where = (f'in the namespace "{info.namespace}"' if info.namespace
                 else "at the cluster scope")
        message = (f'User "{user.name}" cannot {info.verb} resource '
                   f'"{info.resource_and_subresource}" in API group "{info.api_group}" {where}')
    if reason:
        message = f"{message}: {reason}"
    if not info.resource_request:
        # NewForbidden sets Details even for a path: every field of it is empty.
        return ApiError(403, "Forbidden", f"forbidden: {message}",
                        {"name": "", "group": "", "kind": ""})
    resource = f"{info.resource}.{info.api_group}" if info.api_group else info.resource
    subject = f'{resource} "{info.name}"' if info.name else resource
    return ApiError(403, "Forbidden", f"{subject} is forbidden: {message}",
                    {"name": info.name, "group": info.api_group, "kind": info.resource})


class RequestAuthorizer:
    """The authorization and impersonation middleware over one RBAC authorizer."""

    def __init__(self, rbac: RbacAuthorizer) -> None:
        self._rbac = rbac

    def decide(self, user: UserInfo, info: RequestInfo) -> Decision:
        if user.is_master:
            return Decision(True, "")
        return self._rbac.authorize(user, info)

    def middleware(self) -> Middleware:
        @web.middleware
        async def authorize(request: web.Request, handler: Handler) -> web.StreamResponse:
            user: UserInfo = request[USER_KEY]
            impersonated = self._impersonate(request, user)
            if impersonated is not None:
                request[REQUESTER_KEY] = user
                request[USER_KEY] = user = impersonated
            info = request_info(request.method, request.path, request.query)
            request[INFO_KEY] = info
            decision = self.decide(user, info)
            request[DECISION_KEY] = decision
            if not decision.allowed:
                raise forbidden_request(user, info, decision.reason)
            return await handler(request)

        return authorize

    def _impersonate(self, request: web.Request, requester: UserInfo) -> UserInfo | None:
        headers = request.headers
        name = headers.get("Impersonate-User", "")
        groups = tuple(headers.getall("Impersonate-Group", ()))
        uid = headers.get("Impersonate-Uid", "")
        extra: dict[str, tuple[str, ...]] = {}
        for header in headers:
            if header.lower().startswith("impersonate-extra-"):
                key = header[len("impersonate-extra-"):].lower()
                extra[key] = tuple(headers.getall(header))
        if not name:
            if groups or uid or extra:
                raise bad_request("requested impersonation of groups, uid or extra without "
                                  "impersonating a user")
            return None
        account = split_service_account(name)
        checks = [RequestInfo("impersonate", request.path, True, resource="serviceaccounts",
                              namespace=account[0], name=account[1]) if account else
                  RequestInfo("impersonate", request.path, True, resource="users", name=name)]
        checks += [RequestInfo("impersonate", request.path, True, resource="groups", name=group)
                   for group in groups]
        if uid:
            checks.append(RequestInfo("impersonate", request.path, True,
                                      api_group="authentication.k8s.io", resource="uids",
                                      name=uid))
        for key, values in extra.items():
            checks += [RequestInfo("impersonate", request.path, True,
                                   api_group="authentication.k8s.io",
                                   resource="userextras", subresource=key, name=value)
                       for value in values]
        for check in checks:
            decision = self.decide(requester, check)
            if not decision.allowed:
                raise forbidden_request(requester, check, decision.reason)
        if account and not groups:
            groups = service_account_groups(account[0])
        if name == ANONYMOUS:
            if UNAUTHENTICATED not in groups:
                groups = (*groups, UNAUTHENTICATED)
        elif AUTHENTICATED not in groups:
            groups = (*groups, AUTHENTICATED)
        return UserInfo(name, uid=uid, groups=groups, extra=extra)
