"""Role-based access control: which stored bindings grant a user a request.

A ClusterRoleBinding grants its ClusterRole's rules everywhere; a RoleBinding
grants its Role's (or a ClusterRole's) rules in its own namespace. Rules are
read from the object table on every decision, so a binding applied with
kubectl takes effect on the next request, as with kube-apiserver's informers.
The allow reason names the binding, role and subject the way upstream's does,
because audit annotations and `kubectl auth can-i -v` show it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from engine.cluster.apiserver.auth.identity import UserInfo, split_service_account
from engine.cluster.apiserver.endpoints.request_info import RequestInfo
from engine.cluster.apiserver.registry.builtins import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    ROLE_BINDINGS,
    ROLES,
)
from engine.cluster.apiserver.storage.objects import ObjectTable

RBAC_GROUP = "rbac.authorization.k8s.io"

Rule = Mapping[str, Any]


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


@dataclass(frozen=True)
class GrantedRule:
    """One rule a user holds, and the binding that grants it."""

    rule: Rule
    source: str


def rule_allows(rule: Rule, info: RequestInfo) -> bool:
    """Whether one PolicyRule covers the request."""
    if not _matches(rule.get("verbs"), info.verb):
        return False
    if not info.resource_request:
        return _url_matches(rule.get("nonResourceURLs"), info.path)
    return (
        _matches(rule.get("apiGroups"), info.api_group)
        and _resource_matches(rule.get("resources"), info)
        and (not rule.get("resourceNames") or info.name in rule["resourceNames"])
    )


def _matches(allowed: object, value: str) -> bool:
    return isinstance(allowed, list) and ("*" in allowed or value in allowed)


def _resource_matches(resources: object, info: RequestInfo) -> bool:
    if not isinstance(resources, list):
        return False
    combined = info.resource_and_subresource
    for resource in resources:
        if resource in ("*", combined):
            return True
        if info.subresource and resource == f"*/{info.subresource}":
            return True
    return False


def _url_matches(urls: object, path: str) -> bool:
    if not isinstance(urls, list):
        return False
    for url in urls:
        if url in ("*", path):
            return True
        # Upstream's NonResourceURLMatches trims every trailing star (strings.TrimRight).
        if isinstance(url, str) and url.endswith("*") and path.startswith(url.rstrip("*")):
            return True
    return False


def subject_matches(subject: Mapping[str, Any], user: UserInfo, binding_namespace: str) -> bool:
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return bool(user.name == name)
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        account = split_service_account(user.name)
        namespace = subject.get("namespace") or binding_namespace
        return account == (namespace, name)
    return False


def _describe_subject(subject: Mapping[str, Any], binding_namespace: str) -> str:
    kind, name = subject.get("kind", ""), subject.get("name", "")
    if kind == "ServiceAccount":
        return f'{kind} "{name}/{subject.get("namespace") or binding_namespace}"'
    return f'{kind} "{name}"'


class RbacAuthorizer:
    """Decides requests by the Roles, ClusterRoles and bindings in `table`."""

    def __init__(self, table: ObjectTable) -> None:
        self._table = table

    def authorize(self, user: UserInfo, info: RequestInfo) -> Decision:
        missing: list[str] = []
        for granted in self.rules_for(user, info.namespace, missing):
            if rule_allows(granted.rule, info):
                return Decision(True, f"RBAC: allowed by {granted.source}")
        # Upstream's denial names the roles its bindings point at but that do not exist
        # (utilerrors.NewAggregate: each distinct error once, several in brackets).
        distinct = list(dict.fromkeys(missing))
        if not distinct:
            return Decision(False)
        listed = distinct[0] if len(distinct) == 1 else f"[{', '.join(distinct)}]"
        return Decision(False, f"RBAC: {listed}")

    def rules_for(self, user: UserInfo, namespace: str,
                  missing: list[str] | None = None) -> Iterator[GrantedRule]:
        """Every rule granted to `user` in `namespace` ("" : cluster-wide rules only); the
        roles bound to the user that do not exist are added to `missing`, if given."""
        for entry in list(self._table.bucket(CLUSTER_ROLE_BINDINGS.key).entries.values()):
            yield from self._granted(entry.obj, user, "", missing)
        if namespace:
            bucket = self._table.bucket(ROLE_BINDINGS.key)
            for (ns, _), entry in list(bucket.entries.items()):
                if ns == namespace:
                    yield from self._granted(entry.obj, user, namespace, missing)

    def _granted(self, binding: Mapping[str, Any], user: UserInfo, namespace: str,
                 missing: list[str] | None) -> Iterator[GrantedRule]:
        subjects = binding.get("subjects") or ()
        subject = next((s for s in subjects if isinstance(s, Mapping)
                        and subject_matches(s, user, namespace)), None)
        if subject is None:
            return
        ref = binding.get("roleRef") or {}
        kind, role_name = ref.get("kind"), ref.get("name", "")
        if kind == "ClusterRole":
            role = self._table.get(CLUSTER_ROLES.key, "", role_name)
        elif kind == "Role" and namespace:
            role = self._table.get(ROLES.key, namespace, role_name)
        else:
            return
        if role is None:
            if missing is not None:
                plural = "clusterroles" if kind == "ClusterRole" else "roles"
                missing.append(f'{plural.removesuffix("s")}.{RBAC_GROUP} "{role_name}" '
                               f"not found")
            return
        name = binding["metadata"]["name"]
        binding_name = f"{name}/{namespace}" if namespace else name
        binding_kind = "RoleBinding" if namespace else "ClusterRoleBinding"
        source = (f'{binding_kind} "{binding_name}" of {kind} "{role_name}" to '
                  f"{_describe_subject(subject, namespace)}")
        for rule in role.obj.get("rules") or ():
            if isinstance(rule, Mapping):
                yield GrantedRule(rule, source)
