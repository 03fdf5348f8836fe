"""RBAC decisions: PolicyRule matching (pkg/apis/rbac/v1/evaluation_helpers.go) and the
authorizer over stored Roles, ClusterRoles and bindings (plugin/pkg/auth/authorizer/rbac,
pkg/registry/rbac/validation/rule.go), with upstream's allow reasons word for word."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.cluster.apiserver.auth.identity import UserInfo, service_account_user
from engine.cluster.apiserver.auth.rbac import Decision, RbacAuthorizer, rule_allows
from engine.cluster.apiserver.core import Core
from engine.cluster.apiserver.endpoints.request_info import RequestInfo
from engine.cluster.apiserver.registry.builtins import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    ROLE_BINDINGS,
    ROLES,
)
from engine.cluster.apiserver.registry.deletion import DeleteOptions, delete
from tests.unit.cluster.store_support import ManualReactor, make_core, namespace

RBAC = "rbac.authorization.k8s.io"
JANE = UserInfo("jane", groups=("devs",))


def resource(verb: str, plural: str, *, group: str = "", namespace: str = "", name: str = "",
             subresource: str = "") -> RequestInfo:
    return RequestInfo(verb=verb, path="/x", resource_request=True, api_group=group,
                       api_version="v1", namespace=namespace, resource=plural,
                       subresource=subresource, name=name)


def path(verb: str, url: str) -> RequestInfo:
    return RequestInfo(verb=verb, path=url)


# --- one rule ------------------------------------------------------------------------------


def test_verbs_groups_and_resources_must_all_match() -> None:
    rule = {"verbs": ["get", "list"], "apiGroups": ["apps"], "resources": ["deployments"]}
    assert rule_allows(rule, resource("get", "deployments", group="apps", name="d"))
    assert rule_allows(rule, resource("list", "deployments", group="apps"))
    assert not rule_allows(rule, resource("delete", "deployments", group="apps", name="d"))
    assert not rule_allows(rule, resource("get", "deployments", group="", name="d"))
    assert not rule_allows(rule, resource("get", "statefulsets", group="apps", name="d"))


def test_stars_match_every_verb_group_and_resource() -> None:
    assert rule_allows({"verbs": ["*"], "apiGroups": [""], "resources": ["pods"]},
                       resource("deletecollection", "pods", namespace="ns"))
    assert rule_allows({"verbs": ["get"], "apiGroups": ["*"], "resources": ["leases"]},
                       resource("get", "leases", group="coordination.k8s.io", name="l"))
    assert rule_allows({"verbs": ["get"], "apiGroups": [""], "resources": ["*"]},
                       resource("get", "secrets", name="s"))


def test_a_resource_star_covers_subresources_too() -> None:
    rule = {"verbs": ["get"], "apiGroups": [""], "resources": ["*"]}
    assert rule_allows(rule, resource("get", "pods", name="p", subresource="log"))


def test_a_subresource_needs_its_own_resource_entry() -> None:
    pods = {"verbs": ["get", "create"], "apiGroups": [""], "resources": ["pods"]}
    log = resource("get", "pods", namespace="ns", name="p", subresource="log")
    assert not rule_allows(pods, log)
    assert rule_allows({**pods, "resources": ["pods/log"]}, log)
    assert not rule_allows({**pods, "resources": ["pods/log"]},
                           resource("get", "pods", namespace="ns", name="p"))
    token = resource("create", "serviceaccounts", namespace="ns", name="sa", subresource="token")
    assert rule_allows({**pods, "resources": ["serviceaccounts/token"]}, token)
    assert not rule_allows(pods, token)


def test_star_slash_subresource_matches_that_subresource_of_any_resource() -> None:
    rule = {"verbs": ["update"], "apiGroups": ["*"], "resources": ["*/status"]}
    assert rule_allows(rule, resource("update", "pods", name="p", subresource="status"))
    assert rule_allows(rule, resource("update", "deployments", group="apps", name="d",
                                      subresource="status"))
    assert not rule_allows(rule, resource("update", "pods", name="p", subresource="binding"))
    assert not rule_allows(rule, resource("update", "pods", name="p"))
    # Only the exact subresource: "*/status" is not "*/statusx" or a prefix match.
    assert not rule_allows(rule, resource("update", "pods", name="p", subresource="statusx"))


def test_resource_names_restrict_to_those_names() -> None:
    rule = {"verbs": ["get", "update", "list"], "apiGroups": [""], "resources": ["configmaps"],
            "resourceNames": ["settings"]}
    assert rule_allows(rule, resource("get", "configmaps", namespace="ns", name="settings"))
    assert rule_allows(rule, resource("update", "configmaps", namespace="ns", name="settings"))
    assert not rule_allows(rule, resource("get", "configmaps", namespace="ns", name="other"))
    # A list (or create) names no object, so a name-restricted rule never covers it...
    assert not rule_allows(rule, resource("list", "configmaps", namespace="ns"))
    # ...unless the list is narrowed to that one name by a field selector.
    assert rule_allows(rule, resource("list", "configmaps", namespace="ns", name="settings"))


def test_empty_or_missing_lists_match_nothing() -> None:
    info = resource("get", "pods", name="p")
    assert not rule_allows({"apiGroups": [""], "resources": ["pods"]}, info)
    assert not rule_allows({"verbs": ["get"], "resources": ["pods"]}, info)
    assert not rule_allows({"verbs": ["get"], "apiGroups": [""]}, info)
    assert not rule_allows({"verbs": [], "apiGroups": ["*"], "resources": ["*"]}, info)


def test_non_resource_urls_exact_and_by_trailing_star_prefix() -> None:
    rule = {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/apis/*"]}
    assert rule_allows(rule, path("get", "/healthz"))
    assert not rule_allows(rule, path("get", "/healthz/etcd"))
    assert not rule_allows(rule, path("post", "/healthz"))
    assert rule_allows(rule, path("get", "/apis/"))
    assert rule_allows(rule, path("get", "/apis/apps/v1"))
    assert not rule_allows(rule, path("get", "/apis"))
    assert rule_allows({"verbs": ["*"], "nonResourceURLs": ["*"]}, path("delete", "/anything"))


def test_url_rules_never_cover_resources_and_resource_rules_never_cover_urls() -> None:
    everything = {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}
    assert not rule_allows(everything, path("get", "/metrics"))
    assert not rule_allows({"verbs": ["*"], "nonResourceURLs": ["*"]},
                           resource("get", "pods", name="p"))


_NAME = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-./", min_size=0, max_size=12)
_VERBS = ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection",
          "impersonate", "bind", "escalate"]
_RESOURCE_REQUESTS = st.builds(
    resource, verb=st.sampled_from(_VERBS), plural=_NAME.filter(bool), group=_NAME,
    namespace=_NAME, name=_NAME, subresource=_NAME,
)


@given(_RESOURCE_REQUESTS)
def test_a_rule_of_stars_allows_every_resource_request(info: RequestInfo) -> None:
    assert rule_allows({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}, info)


@given(verbs=st.lists(st.sampled_from(_VERBS), min_size=1, unique=True),
       info=_RESOURCE_REQUESTS, url=_NAME)
def test_a_rule_never_allows_a_verb_it_does_not_list(
    verbs: list[str], info: RequestInfo, url: str
) -> None:
    generous = {"verbs": verbs, "apiGroups": ["*"], "resources": ["*"], "nonResourceURLs": ["*"]}
    assert rule_allows(generous, info) == (info.verb in verbs)
    assert rule_allows(generous, path(info.verb, "/" + url)) == (info.verb in verbs)


# --- the authorizer over stored policy -----------------------------------------------------


@pytest.fixture
def core() -> Core:
    built = make_core(ManualReactor())
    for name in ("team", "other"):
        namespace(built, name)
    return built


def rules(*verbs: str, resources: tuple[str, ...] = ("pods",)) -> list[dict[str, Any]]:
    return [{"verbs": list(verbs), "apiGroups": [""], "resources": list(resources)}]


def add_role(core: Core, ns: str, name: str, granted: list[dict[str, Any]]) -> None:
    core.store.create(ROLES, ns, {"metadata": {"name": name}, "rules": granted})


def add_cluster_role(core: Core, name: str, granted: list[dict[str, Any]]) -> None:
    core.store.create(CLUSTER_ROLES, "", {"metadata": {"name": name}, "rules": granted})


def bind(core: Core, name: str, role_kind: str, role: str, subjects: list[dict[str, Any]],
         *, ns: str = "") -> None:
    body = {"metadata": {"name": name}, "roleRef": {"apiGroup": RBAC, "kind": role_kind,
                                                    "name": role}, "subjects": subjects}
    core.store.create(ROLE_BINDINGS if ns else CLUSTER_ROLE_BINDINGS, ns, body)


def user(name: str) -> dict[str, str]:
    return {"kind": "User", "name": name, "apiGroup": RBAC}


def decide(core: Core, who: UserInfo, info: RequestInfo) -> Decision:
    return RbacAuthorizer(core.store.table).authorize(who, info)


def test_a_cluster_role_binding_grants_everywhere_with_upstreams_reason(core: Core) -> None:
    add_cluster_role(core, "r", rules("get", "list"))
    bind(core, "b", "ClusterRole", "r",
         [{"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}])
    robot = service_account_user("ns", "sa")
    for where in ("team", "other", ""):
        decision = decide(core, robot, resource("list", "pods", namespace=where))
        assert decision == Decision(True, 'RBAC: allowed by ClusterRoleBinding "b" of ClusterRole '
                                          '"r" to ServiceAccount "sa/ns"')
    assert not decide(core, robot, resource("delete", "pods", namespace="team", name="p")).allowed
    assert not decide(core, service_account_user("other", "sa"),
                      resource("list", "pods", namespace="team")).allowed


def test_a_role_binding_grants_its_role_only_in_its_namespace(core: Core) -> None:
    add_role(core, "team", "r", rules("get"))
    bind(core, "b", "Role", "r", [user("jane")], ns="team")
    get = resource("get", "pods", namespace="team", name="p")
    assert decide(core, JANE, get) == Decision(
        True, 'RBAC: allowed by RoleBinding "b/team" of Role "r" to User "jane"')
    assert not decide(core, JANE, resource("get", "pods", namespace="other", name="p")).allowed
    assert not decide(core, JANE, resource("get", "pods", name="p")).allowed
    assert not decide(core, UserInfo("john"), get).allowed


def test_a_role_binding_to_a_cluster_role_grants_it_only_in_the_binding_namespace(
    core: Core,
) -> None:
    add_cluster_role(core, "pod-reader", rules("list"))
    bind(core, "readers", "ClusterRole", "pod-reader", [user("jane")], ns="team")
    assert decide(core, JANE, resource("list", "pods", namespace="team")) == Decision(
        True, 'RBAC: allowed by RoleBinding "readers/team" of ClusterRole "pod-reader" to User '
              '"jane"')
    assert not decide(core, JANE, resource("list", "pods", namespace="other")).allowed
    assert not decide(core, JANE, resource("list", "pods")).allowed  # all namespaces


def test_a_role_is_looked_up_in_the_binding_namespace(core: Core) -> None:
    add_role(core, "other", "r", rules("get"))
    bind(core, "b", "Role", "r", [user("jane")], ns="team")
    assert not decide(core, JANE, resource("get", "pods", namespace="team", name="p")).allowed


def test_group_subjects_match_members(core: Core) -> None:
    add_cluster_role(core, "r", rules("get"))
    bind(core, "b", "ClusterRole", "r", [{"kind": "Group", "name": "devs", "apiGroup": RBAC}])
    info = resource("get", "pods", namespace="team", name="p")
    assert decide(core, JANE, info) == Decision(
        True, 'RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "r" to Group "devs"')
    assert not decide(core, UserInfo("devs"), info).allowed  # a user named like the group


def test_the_reason_names_the_first_subject_that_matches(core: Core) -> None:
    add_cluster_role(core, "r", rules("get"))
    bind(core, "b", "ClusterRole", "r",
         [user("john"), {"kind": "Group", "name": "devs", "apiGroup": RBAC}, user("jane")])
    assert decide(core, JANE, resource("get", "pods", name="p", namespace="team")).reason == (
        'RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "r" to Group "devs"')


def test_a_service_account_subject_without_namespace_means_the_binding_namespace(
    core: Core,
) -> None:
    add_role(core, "team", "r", rules("get"))
    bind(core, "b", "Role", "r", [{"kind": "ServiceAccount", "name": "robot"}], ns="team")
    info = resource("get", "pods", namespace="team", name="p")
    assert decide(core, service_account_user("team", "robot"), info) == Decision(
        True, 'RBAC: allowed by RoleBinding "b/team" of Role "r" to ServiceAccount "robot/team"')
    assert not decide(core, service_account_user("other", "robot"), info).allowed
    # A user merely named like the account is not the account.
    assert not decide(core, UserInfo("robot"), info).allowed


def test_a_role_binding_may_name_a_service_account_of_another_namespace(core: Core) -> None:
    add_role(core, "team", "r", rules("get"))
    bind(core, "b", "Role", "r",
         [{"kind": "ServiceAccount", "name": "robot", "namespace": "other"}], ns="team")
    info = resource("get", "pods", namespace="team", name="p")
    assert decide(core, service_account_user("other", "robot"), info).reason == (
        'RBAC: allowed by RoleBinding "b/team" of Role "r" to ServiceAccount "robot/other"')
    assert not decide(core, service_account_user("team", "robot"), info).allowed


def test_a_binding_to_a_missing_role_grants_nothing(core: Core) -> None:
    bind(core, "b", "Role", "gone", [user("jane")], ns="team")
    bind(core, "c", "ClusterRole", "gone-too", [user("jane")])
    assert not decide(core, JANE, resource("get", "pods", namespace="team", name="p")).allowed
    # The role appearing later takes effect at once.
    add_role(core, "team", "gone", rules("get"))
    assert decide(core, JANE, resource("get", "pods", namespace="team", name="p")).allowed


def test_a_missing_role_is_the_denials_reason(core: Core) -> None:
    bind(core, "b", "Role", "pod-reader", [user("jane")], ns="team")
    assert decide(core, JANE, resource("get", "pods", namespace="team", name="p")) == Decision(
        False, 'RBAC: role.rbac.authorization.k8s.io "pod-reader" not found')


def test_bindings_take_effect_and_are_revoked_on_the_next_decision(core: Core) -> None:
    add_cluster_role(core, "r", rules("get"))
    info = resource("get", "pods", namespace="team", name="p")
    assert not decide(core, JANE, info).allowed
    bind(core, "b", "ClusterRole", "r", [user("jane")])
    assert decide(core, JANE, info).allowed
    delete(core.store, CLUSTER_ROLE_BINDINGS, "", "b", DeleteOptions())
    assert not decide(core, JANE, info).allowed


def test_a_role_change_takes_effect_on_the_next_decision(core: Core) -> None:
    add_role(core, "team", "r", rules("get"))
    bind(core, "b", "Role", "r", [user("jane")], ns="team")
    delete_pod = resource("delete", "pods", namespace="team", name="p")
    assert not decide(core, JANE, delete_pod).allowed
    stored = core.store.get(ROLES, "team", "r").obj
    core.store.update(ROLES, "team", "r", {**stored, "rules": rules("get", "delete")})
    assert decide(core, JANE, delete_pod).allowed


def test_rules_for_lists_cluster_wide_then_namespace_grants(core: Core) -> None:
    add_cluster_role(core, "cr", rules("list"))
    add_role(core, "team", "r", rules("get"))
    bind(core, "c", "ClusterRole", "cr", [user("jane")])
    bind(core, "b", "Role", "r", [user("jane")], ns="team")
    authorizer = RbacAuthorizer(core.store.table)
    assert [g.rule["verbs"] for g in authorizer.rules_for(JANE, "team")] == [["list"], ["get"]]
    assert [g.rule["verbs"] for g in authorizer.rules_for(JANE, "other")] == [["list"]]
    assert [g.rule["verbs"] for g in authorizer.rules_for(JANE, "")] == [["list"]]


def test_everyone_authenticated_may_discover_and_review_but_not_scrape_metrics(
    core: Core,
) -> None:
    robot = service_account_user("team", "robot")
    for url in ("/api", "/api/v1", "/apis", "/apis/apps/v1", "/version", "/healthz",
                "/openapi/v2"):
        assert decide(core, robot, path("get", url)).allowed, url
    review = resource("create", "selfsubjectaccessreviews", group="authorization.k8s.io")
    assert decide(core, robot, review).allowed
    assert not decide(core, robot, path("get", "/metrics")).allowed
    assert not decide(core, robot, resource("list", "pods", namespace="team")).allowed
