"""The self reviews: "may I?" and "who am I?" asked of the server.

`kubectl auth can-i VERB RESOURCE` creates a SelfSubjectAccessReview, `kubectl
auth can-i --list` a SelfSubjectRulesReview, `kubectl auth whoami` a
SelfSubjectReview. None is stored: the answer is the review with its status
filled in by the same authenticator and authorizer every request goes through,
so a review can never disagree with what a real request would meet.
"""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from engine.cluster.apiserver.admission.typed_decoding import check_type
from engine.cluster.apiserver.auth.authorization import RequestAuthorizer
from engine.cluster.apiserver.auth.identity import USER_KEY, UserInfo
from engine.cluster.apiserver.auth.rbac import RbacAuthorizer
from engine.cluster.apiserver.endpoints.request_info import RequestInfo
from engine.cluster.apiserver.endpoints.responses import json_response, read_body
from engine.cluster.apiserver.endpoints.routes import Target
from engine.cluster.apiserver.errors import bad_request, invalid, method_not_allowed
from engine.cluster.apiserver.registry.builtins import (
    SELF_SUBJECT_ACCESS_REVIEWS,
    SELF_SUBJECT_RULES_REVIEWS,
)
from engine.cluster.apiserver.validation import field_errors

_GROUP = "authorization.k8s.io"
# What a member of system:masters holds, as kube-apiserver's privileged-group authorizer says.
_EVERYTHING = {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}
_EVERY_PATH = {"verbs": ["*"], "nonResourceURLs": ["*"]}


class AccessReviews:
    """Answers the two self reviews for the requesting user."""

    def __init__(self, authorizer: RequestAuthorizer, rbac: RbacAuthorizer) -> None:
        self._authorizer = authorizer
        self._rbac = rbac

    async def handle(self, request: web.Request, target: Target) -> web.Response:
        if request.method != "POST" or target.name is not None:
            raise method_not_allowed("the server does not allow this method on the requested "
                                     "resource")
        body = await read_body(request)
        if not isinstance(body, dict):
            raise bad_request(f"the request body must be a {target.rt.kind} object")
        user: UserInfo = request[USER_KEY]
        kind = target.rt.kind
        check_type(body.get("spec"), dict, kind=kind, field="spec", go_type=f"v1.{kind}Spec")
        spec = body.get("spec") or {}
        for name in ("resourceAttributes", "nonResourceAttributes"):
            attributes = spec.get(name)
            check_type(attributes, dict, kind=kind, field=f"spec.{name}",
                        go_type=f"v1.{name[0].upper()}{name[1:]}")
            for key, value in (attributes or {}).items():
                if key not in ("fieldSelector", "labelSelector"):
                    check_type(value, str, kind=kind, field=f"spec.{name}.{key}", go_type="string")
        answer: dict[str, Any] = {
            "kind": target.rt.kind,
            "apiVersion": target.rt.api_version,
            "metadata": {"creationTimestamp": None},
        }
        if target.rt is SELF_SUBJECT_ACCESS_REVIEWS:
            answer |= {"spec": spec, "status": self._access(user, spec, request.path)}
        elif target.rt is SELF_SUBJECT_RULES_REVIEWS:
            answer |= {"spec": spec, "status": self._rules(user, spec)}
        else:
            answer["status"] = {"userInfo": user.as_dict()}
        return json_response(orjson.dumps(answer), status=201)

    def _access(self, user: UserInfo, spec: dict[str, Any], path: str) -> dict[str, Any]:
        resource = spec.get("resourceAttributes")
        non_resource = spec.get("nonResourceAttributes")
        if (resource is None) == (non_resource is None):
            raise invalid(_GROUP, "SelfSubjectAccessReview", "", [field_errors.invalid(
                "spec.resourceAttributes", resource,
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )])
        if resource is not None:
            info = RequestInfo(
                verb=resource.get("verb", ""), path=path, resource_request=True,
                api_group=resource.get("group", ""), api_version=resource.get("version", ""),
                namespace=resource.get("namespace", ""), resource=resource.get("resource", ""),
                subresource=resource.get("subresource", ""), name=resource.get("name", ""),
            )
        else:
            assert non_resource is not None
            info = RequestInfo(verb=non_resource.get("verb", ""),
                               path=non_resource.get("path", ""))
        decision = self._authorizer.decide(user, info)
        status: dict[str, Any] = {"allowed": decision.allowed}
        if decision.reason:
            status["reason"] = decision.reason
        return status

    def _rules(self, user: UserInfo, spec: dict[str, Any]) -> dict[str, Any]:
        namespace = spec.get("namespace", "")
        check_type(namespace, str, kind="SelfSubjectRulesReview", field="spec.namespace",
                    go_type="string")
        if not namespace:
            raise invalid(_GROUP, "SelfSubjectRulesReview", "",
                          [field_errors.required("spec.namespace")])
        resource_rules: list[dict[str, Any]] = [_EVERYTHING] if user.is_master else []
        non_resource_rules: list[dict[str, Any]] = [_EVERY_PATH] if user.is_master else []
        for granted in self._rbac.rules_for(user, namespace):
            rule = granted.rule
            if rule.get("resources"):
                resource_rules.append({key: list(rule[key]) for key in
                                       ("verbs", "apiGroups", "resources", "resourceNames")
                                       if rule.get(key)})
            if rule.get("nonResourceURLs"):
                non_resource_rules.append({"verbs": list(rule.get("verbs") or ()),
                                           "nonResourceURLs": list(rule["nonResourceURLs"])})
        return {"resourceRules": resource_rules, "nonResourceRules": non_resource_rules,
                "incomplete": False}
