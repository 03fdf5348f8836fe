"""Edges of RBAC authorization that a user meets but the main tests left open: the
denial's reason when bindings point at roles that do not exist (a ClusterRole named as
one, several in brackets and each once, as utilerrors.NewAggregate words them), the answer
of `kubectl auth can-i` for a plain denial (`"allowed": false`, never null), and
non-resource URLs whose star is not the last character or that end in several
(plugin/pkg/auth/authorizer/rbac and pkg/apis/rbac/v1/evaluation_helpers.go upstream)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.cluster.apiserver.auth.authorization import forbidden_request
from engine.cluster.apiserver.auth.rbac import Decision, rule_allows
from engine.cluster.apiserver.core import Core
from tests.unit.cluster.store_support import namespace
from tests.unit.cluster.test_forbidden_status import Client, bearer, run
from tests.unit.cluster.test_rbac import (
    JANE,
    add_role,
    bind,
    decide,
    path,
    resource,
    rules,
    user,
)


@pytest.fixture
def cluster(core: Core) -> Core:
    """The store of conftest.py with test_rbac.py's two namespaces."""
    for name in ("team", "other"):
        namespace(core, name)
    return core


# --- bindings to roles that do not exist ---------------------------------------------------


def test_a_missing_cluster_role_is_named_as_a_clusterrole_in_the_denial(cluster: Core) -> None:
    bind(cluster, "c", "ClusterRole", "gone", [user("jane")])
    reason = 'RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found'
    get = resource("get", "pods", namespace="team", name="p")
    assert decide(cluster, JANE, get) == Decision(False, reason)
    assert decide(cluster, JANE, resource("list", "nodes")) == Decision(False, reason)
    # What kubectl prints: kube-apiserver's 403 message with the reason after a colon.
    assert forbidden_request(JANE, get, reason).message == (
        'pods "p" is forbidden: User "jane" cannot get resource "pods" in API group "" in the '
        'namespace "team": RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found')


def test_a_role_binding_to_a_missing_cluster_role_names_a_clusterrole_too(cluster: Core) -> None:
    bind(cluster, "b", "ClusterRole", "gone", [user("jane")], ns="team")
    assert decide(cluster, JANE, resource("get", "pods", namespace="team", name="p")) == Decision(
        False, 'RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found')


def test_several_missing_roles_are_listed_in_brackets_cluster_bindings_first(
    cluster: Core,
) -> None:
    bind(cluster, "b", "Role", "role-gone", [user("jane")], ns="team")
    bind(cluster, "c", "ClusterRole", "cluster-role-gone", [user("jane")])
    # A binding of someone else, or of another namespace, is not the user's concern.
    bind(cluster, "d", "ClusterRole", "not-janes", [user("john")])
    bind(cluster, "e", "Role", "elsewhere", [user("jane")], ns="other")
    assert decide(cluster, JANE, resource("get", "pods", namespace="team", name="p")) == Decision(
        False, 'RBAC: [clusterrole.rbac.authorization.k8s.io "cluster-role-gone" not found, '
               'role.rbac.authorization.k8s.io "role-gone" not found]')


def test_a_missing_role_two_bindings_point_at_is_named_once(cluster: Core) -> None:
    bind(cluster, "b1", "Role", "gone", [user("jane")], ns="team")
    bind(cluster, "b2", "Role", "gone", [{"kind": "Group", "name": "devs",
                                          "apiGroup": "rbac.authorization.k8s.io"}], ns="team")
    assert decide(cluster, JANE, resource("get", "pods", namespace="team", name="p")) == Decision(
        False, 'RBAC: role.rbac.authorization.k8s.io "gone" not found')


def test_a_role_binding_whose_role_exists_adds_nothing_to_the_reason(cluster: Core) -> None:
    add_role(cluster, "team", "reader", rules("get"))
    bind(cluster, "b", "Role", "reader", [user("jane")], ns="team")
    bind(cluster, "c", "ClusterRole", "gone", [user("jane")])
    assert decide(cluster, JANE, resource("delete", "pods", namespace="team", name="p")) == (
        Decision(False, 'RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found'))


# --- what `kubectl auth can-i` reads -------------------------------------------------------


def test_a_plain_denial_answers_an_access_review_with_allowed_false(
    cluster: Core, tmp_path: Path
) -> None:
    """SubjectAccessReviewStatus.allowed has no omitempty: a denial is `false`, with no
    reason when no binding points at a missing role."""

    async def scenario(client: Client, token: str) -> None:
        response = await client.post(
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", headers=bearer(token),
            json={"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                  "spec": {"resourceAttributes": {"verb": "delete", "resource": "pods",
                                                  "namespace": "team", "name": "p"}}})
        assert response.status == 201, await response.text()
        body = await response.json()
        assert body["status"] == {"allowed": False}
        assert body["status"]["allowed"] is False

    run(cluster, tmp_path, scenario)


# --- non-resource URLs ---------------------------------------------------------------------


def test_a_star_that_is_not_last_in_a_non_resource_url_is_an_ordinary_character() -> None:
    """Only "*" alone or a trailing "*" is a wildcard (NonResourceURLMatches); nothing
    validates the URLs of a ClusterRole, so any string may be stored in one."""
    rule = {"verbs": ["get"], "nonResourceURLs": ["/logs/*/tail", "XX*XX", "*x"]}
    for url in ("/logs/*/tail", "XX*XX", "*x"):
        assert rule_allows(rule, path("get", url)), url
    for url in ("/logs/kubelet/tail", "/logs/", "/", "/healthz", "/xx", "XXyXX", "x"):
        assert not rule_allows(rule, path("get", url)), url


def test_every_trailing_star_of_a_non_resource_url_is_trimmed_before_the_prefix_match() -> None:
    """NonResourceURLMatches trims them all (strings.TrimRight(ruleURL, "*")): "/apis/**"
    grants what "/apis/*" grants."""
    rule = {"verbs": ["get"], "nonResourceURLs": ["/apis/**"]}
    for url in ("/apis/", "/apis/batch", "/apis/batch/v1"):
        assert rule_allows(rule, path("get", url)), url
    for url in ("/apis", "/api/v1"):
        assert not rule_allows(rule, path("get", url)), url


def test_only_stars_are_trimmed_from_the_end_of_a_non_resource_url() -> None:
    """What comes before the trailing stars stays the prefix, whatever its last letter."""
    rule = {"verbs": ["get"], "nonResourceURLs": ["/healthX*"]}
    assert rule_allows(rule, path("get", "/healthXz"))
    assert not rule_allows(rule, path("get", "/healthz"))
