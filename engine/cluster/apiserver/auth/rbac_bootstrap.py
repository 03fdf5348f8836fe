"""The roles and bindings every cluster starts with, as kube-apiserver's RBAC post-start hook
makes them.

Only the ones a user of this server meets: `cluster-admin` (held by
`system:masters`), discovery, health and version for everyone authenticated,
the self reviews `kubectl auth can-i` uses, and `system:monitoring` for
`/metrics`. They are recreated when missing at start, and carry the
bootstrapping label and autoupdate annotation upstream marks them with.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.cluster.apiserver.auth.identity import AUTHENTICATED, MASTERS, UNAUTHENTICATED
from engine.cluster.apiserver.patch.write_ownership import SERVER_MANAGER
from engine.cluster.apiserver.registry.builtins import CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES
from engine.cluster.apiserver.storage.objects import Obj

if TYPE_CHECKING:
    from engine.cluster.apiserver.registry.store import Store

_RBAC = "rbac.authorization.k8s.io"
MONITORING = "system:monitoring"
_PROBES = ["/healthz", "/healthz/*", "/livez", "/livez/*", "/readyz", "/readyz/*"]
_VERSION = ["/version", "/version/"]


def _metadata(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    }


def _role(name: str, rules: list[dict[str, Any]]) -> Obj:
    return {"apiVersion": f"{_RBAC}/v1", "kind": "ClusterRole", "metadata": _metadata(name),
            "rules": rules}


def _binding(name: str, role: str, groups: list[str]) -> Obj:
    return {
        "apiVersion": f"{_RBAC}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": _metadata(name),
        "roleRef": {"apiGroup": _RBAC, "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": _RBAC, "kind": "Group", "name": group} for group in groups],
    }


BOOTSTRAP_ROLES: tuple[Obj, ...] = (
    _role("cluster-admin", [
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
        {"nonResourceURLs": ["*"], "verbs": ["*"]},
    ]),
    _role("system:discovery", [{"nonResourceURLs": [
        "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*",
        "/readyz", *_VERSION], "verbs": ["get"]}]),
    _role("system:public-info-viewer", [{"nonResourceURLs": [
        "/healthz", "/livez", "/readyz", *_VERSION], "verbs": ["get"]}]),
    _role("system:basic-user", [
        {"apiGroups": ["authorization.k8s.io"],
         "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
         "verbs": ["create"]},
        {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"],
         "verbs": ["create"]},
    ]),
    _role(MONITORING, [{"nonResourceURLs": ["/metrics", *_PROBES], "verbs": ["get"]}]),
)
BOOTSTRAP_BINDINGS: tuple[Obj, ...] = (
    _binding("cluster-admin", "cluster-admin", [MASTERS]),
    _binding("system:discovery", "system:discovery", [AUTHENTICATED]),
    _binding("system:public-info-viewer", "system:public-info-viewer",
             [AUTHENTICATED, UNAUTHENTICATED]),
    _binding("system:basic-user", "system:basic-user", [AUTHENTICATED]),
    _binding(MONITORING, MONITORING, [MONITORING]),
)


def ensure_bootstrap_policy(store: Store) -> None:
    """Create whichever default role or binding is missing, and give a default role still
    marked autoupdate the rules it lost (rules added to it are kept), as upstream does."""
    for rt, objects in ((CLUSTER_ROLES, BOOTSTRAP_ROLES),
                        (CLUSTER_ROLE_BINDINGS, BOOTSTRAP_BINDINGS)):
        for obj in objects:
            entry = store.table.get(rt.key, "", obj["metadata"]["name"])
            if entry is None:
                store.create(rt, "", obj, field_manager=SERVER_MANAGER)
            elif rt is CLUSTER_ROLES and _autoupdate(entry.obj):
                rules = list(entry.obj.get("rules") or [])
                lost = [rule for rule in obj["rules"] if rule not in rules]
                if lost:
                    store.update(rt, "", obj["metadata"]["name"],
                                 {**entry.obj, "rules": rules + lost},
                                 field_manager=SERVER_MANAGER)


def _autoupdate(role: Obj) -> bool:
    annotations = role["metadata"].get("annotations") or {}
    return bool(annotations.get("rbac.authorization.kubernetes.io/autoupdate") == "true")
