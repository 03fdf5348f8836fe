"""The 403 a denied request gets, worded as kube-apiserver's responsewriters.Forbidden and
apierrors.NewForbidden word it, and impersonation (`kubectl --as`) through the middlewares
(staging/src/k8s.io/apiserver/pkg/endpoints/filters/impersonation.go)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from engine.cluster.apiserver.auth.authorization import forbidden_request
from engine.cluster.apiserver.auth.identity import UserInfo
from engine.cluster.apiserver.auth.service_account_tokens import API_AUDIENCES, TokenAuthority
from engine.cluster.apiserver.core import Core
from engine.cluster.apiserver.endpoints.request_info import RequestInfo
from engine.cluster.apiserver.endpoints.server import build_app
from engine.cluster.apiserver.registry.builtins import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    CONFIGMAPS,
    SERVICE_ACCOUNTS,
)
from tests.unit.cluster.store_support import ManualReactor, make_core, namespace

U = UserInfo("u")
ADMIN_TOKEN = "admin-token"
RBAC = "rbac.authorization.k8s.io"


def status(info: RequestInfo, reason: str = "") -> dict[str, Any]:
    error = forbidden_request(U, info, reason)
    assert (error.code, error.reason) == (403, "Forbidden")
    return error.to_status()


def resource(verb: str, plural: str, *, group: str = "", namespace: str = "", name: str = "",
             subresource: str = "") -> RequestInfo:
    return RequestInfo(verb=verb, path="/ignored", resource_request=True, api_group=group,
                       api_version="v1", namespace=namespace, resource=plural,
                       subresource=subresource, name=name)


# --- the message and details ---------------------------------------------------------------


def test_a_named_namespaced_object() -> None:
    assert status(resource("get", "pods", namespace="ns", name="x")) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "x" is forbidden: User "u" cannot get resource "pods" in API group "" '
                   'in the namespace "ns"',
        "reason": "Forbidden",
        "details": {"name": "x", "kind": "pods"},
        "code": 403,
    }


def test_a_collection_names_no_object() -> None:
    found = status(resource("list", "pods", namespace="ns"))
    assert found["message"] == ('pods is forbidden: User "u" cannot list resource "pods" in API '
                                'group "" in the namespace "ns"')
    assert found["details"] == {"kind": "pods"}


def test_a_group_resource_is_qualified_by_its_group() -> None:
    found = status(resource("get", "leases", group="coordination.k8s.io", namespace="ns",
                            name="l"))
    assert found["message"] == (
        'leases.coordination.k8s.io "l" is forbidden: User "u" cannot get resource "leases" in '
        'API group "coordination.k8s.io" in the namespace "ns"')
    assert found["details"] == {"name": "l", "group": "coordination.k8s.io", "kind": "leases"}


def test_a_subresource_is_named_with_its_resource_in_the_reason_only() -> None:
    found = status(resource("create", "serviceaccounts", namespace="ns", name="robot",
                            subresource="token"))
    assert found["message"] == (
        'serviceaccounts "robot" is forbidden: User "u" cannot create resource '
        '"serviceaccounts/token" in API group "" in the namespace "ns"')
    assert found["details"] == {"name": "robot", "kind": "serviceaccounts"}


def test_cluster_scope() -> None:
    assert status(resource("list", "nodes"))["message"] == (
        'nodes is forbidden: User "u" cannot list resource "nodes" in API group "" at the '
        "cluster scope")
    assert status(resource("delete", "clusterroles", group=RBAC, name="admin"))["message"] == (
        'clusterroles.rbac.authorization.k8s.io "admin" is forbidden: User "u" cannot delete '
        'resource "clusterroles" in API group "rbac.authorization.k8s.io" at the cluster scope')


def test_a_non_resource_path() -> None:
    found = status(RequestInfo(verb="get", path="/metrics"))
    assert found["message"] == 'forbidden: User "u" cannot get path "/metrics"'
    assert found["reason"] == "Forbidden"


def test_a_non_resource_status_has_empty_details() -> None:
    """NewForbidden always sets Details; for a non-resource path every field is empty and
    the body still has `"details": {}`."""
    assert status(RequestInfo(verb="get", path="/metrics")).get("details") == {}


def test_the_authorizer_reason_follows_a_colon() -> None:
    found = status(resource("get", "pods", namespace="ns", name="x"),
                   reason='RBAC: role.rbac.authorization.k8s.io "r" not found')
    assert found["message"] == (
        'pods "x" is forbidden: User "u" cannot get resource "pods" in API group "" in the '
        'namespace "ns": RBAC: role.rbac.authorization.k8s.io "r" not found')
    non_resource = status(RequestInfo(verb="get", path="/logs"), reason="why")
    assert non_resource["message"] == 'forbidden: User "u" cannot get path "/logs": why'


# --- through the middlewares ---------------------------------------------------------------

Client = TestClient[web.Request, web.Application]


@asynccontextmanager
async def serving(core: Core, tokens: TokenAuthority, logs: Path) -> AsyncIterator[Client]:
    app = build_app(core, token=ADMIN_TOKEN, logs_dir=logs, tokens=tokens)
    async with TestClient(TestServer(app)) as client:
        yield client


def robot_token(core: Core, tokens: TokenAuthority, name: str = "robot") -> str:
    if core.store.table.get(SERVICE_ACCOUNTS.key, "team", name) is None:
        core.store.create(SERVICE_ACCOUNTS, "team", {"metadata": {"name": name}})
    account = core.store.get(SERVICE_ACCOUNTS, "team", name).obj
    return tokens.issue(account, audiences=API_AUDIENCES, expiration_seconds=3600).token


def grant(core: Core, name: str, rules: list[dict[str, Any]], subject: dict[str, Any]) -> None:
    core.store.create(CLUSTER_ROLES, "", {"metadata": {"name": name}, "rules": rules})
    core.store.create(CLUSTER_ROLE_BINDINGS, "", {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": name},
        "subjects": [subject],
    })


ROBOT = {"kind": "ServiceAccount", "name": "robot", "namespace": "team"}
ROBOT_USER = "system:serviceaccount:team:robot"


@pytest.fixture
def core() -> Core:
    built = make_core(ManualReactor())
    namespace(built, "team")
    return built


Scenario = Callable[[Client, str], Awaitable[None]]


def run(core: Core, tmp_path: Path, scenario: Scenario) -> None:
    tokens = TokenAuthority.for_data_dir(None)
    token = robot_token(core, tokens)

    async def main() -> None:
        async with serving(core, tokens, tmp_path) as client:
            await scenario(client, token)

    asyncio.run(main())


def bearer(token: str, **impersonation: str | list[str]) -> list[tuple[str, str]]:
    headers = [("Authorization", f"Bearer {token}")]
    for key, value in impersonation.items():
        header = key.replace("_", "-")
        for one in [value] if isinstance(value, str) else value:
            headers.append((header, one))
    return headers


async def whoami(client: Client, headers: list[tuple[str, str]]) -> dict[str, Any]:
    response = await client.post(
        "/apis/authentication.k8s.io/v1/selfsubjectreviews", headers=headers,
        json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    assert response.status == 201, await response.text()
    body: dict[str, Any] = await response.json()
    return dict(body["status"]["userInfo"])


def test_a_denied_request_gets_the_status_as_json(core: Core, tmp_path: Path) -> None:
    async def scenario(client: Client, token: str) -> None:
        response = await client.get("/api/v1/namespaces/team/pods/x", headers=bearer(token))
        assert response.status == 403
        assert response.content_type == "application/json"
        assert await response.json() == {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f'pods "x" is forbidden: User "{ROBOT_USER}" cannot get resource "pods" '
                       'in API group "" in the namespace "team"',
            "reason": "Forbidden", "details": {"name": "x", "kind": "pods"}, "code": 403,
        }

    run(core, tmp_path, scenario)


def test_the_admin_may_impersonate_anyone_and_then_is_them(core: Core, tmp_path: Path) -> None:
    async def scenario(client: Client, token: str) -> None:
        as_jane = bearer(ADMIN_TOKEN, Impersonate_User="jane")
        response = await client.get("/api/v1/namespaces/team/pods", headers=as_jane)
        assert response.status == 403
        assert (await response.json())["message"] == (
            'pods is forbidden: User "jane" cannot list resource "pods" in API group "" in the '
            'namespace "team"')
        assert await whoami(client, as_jane) == {"username": "jane",
                                                 "groups": ["system:authenticated"]}
        grant(core, "jane-reads", [{"verbs": ["list"], "apiGroups": [""],
                                    "resources": ["pods"]}],
              {"kind": "User", "name": "jane", "apiGroup": RBAC})
        response = await client.get("/api/v1/namespaces/team/pods", headers=as_jane)
        assert response.status == 200

    run(core, tmp_path, scenario)


def test_impersonating_needs_the_impersonate_verb(core: Core, tmp_path: Path) -> None:
    async def scenario(client: Client, token: str) -> None:
        response = await client.get("/api/v1/namespaces/team/pods",
                                    headers=bearer(token, Impersonate_User="jane"))
        assert response.status == 403
        assert await response.json() == {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f'users "jane" is forbidden: User "{ROBOT_USER}" cannot impersonate '
                       'resource "users" in API group "" at the cluster scope',
            "reason": "Forbidden", "details": {"name": "jane", "kind": "users"}, "code": 403,
        }

    run(core, tmp_path, scenario)


def test_impersonation_rights_can_be_limited_to_names(core: Core, tmp_path: Path) -> None:
    grant(core, "as-jane", [{"verbs": ["impersonate"], "apiGroups": [""], "resources": ["users"],
                             "resourceNames": ["jane"]}], ROBOT)

    async def scenario(client: Client, token: str) -> None:
        assert (await whoami(client, bearer(token, Impersonate_User="jane")))["username"] == "jane"
        response = await client.get("/version", headers=bearer(token, Impersonate_User="john"))
        assert response.status == 403
        assert (await response.json())["message"].startswith(
            f'users "john" is forbidden: User "{ROBOT_USER}" cannot impersonate')

    run(core, tmp_path, scenario)


def test_each_impersonated_group_needs_its_own_right(core: Core, tmp_path: Path) -> None:
    grant(core, "as-anyone", [{"verbs": ["impersonate"], "apiGroups": [""],
                               "resources": ["users"]}], ROBOT)

    async def scenario(client: Client, token: str) -> None:
        headers = bearer(token, Impersonate_User="jane", Impersonate_Group="devs")
        response = await client.get("/version", headers=headers)
        assert response.status == 403
        assert (await response.json())["message"] == (
            f'groups "devs" is forbidden: User "{ROBOT_USER}" cannot impersonate resource '
            '"groups" in API group "" at the cluster scope')

    run(core, tmp_path, scenario)


def test_impersonating_a_service_account_is_checked_in_its_namespace(
    core: Core, tmp_path: Path
) -> None:
    async def scenario(client: Client, token: str) -> None:
        headers = bearer(token, Impersonate_User="system:serviceaccount:team:builder")
        response = await client.get("/version", headers=headers)
        assert response.status == 403
        assert (await response.json())["message"] == (
            f'serviceaccounts "builder" is forbidden: User "{ROBOT_USER}" cannot impersonate '
            'resource "serviceaccounts" in API group "" in the namespace "team"')

    run(core, tmp_path, scenario)


def test_impersonated_groups_are_the_ones_asked_plus_authenticated(
    core: Core, tmp_path: Path
) -> None:
    async def scenario(client: Client, token: str) -> None:
        asked = bearer(ADMIN_TOKEN, Impersonate_User="jane", Impersonate_Group=["devs", "ops"],
                       Impersonate_Uid="1234", **{"Impersonate-Extra-Scopes": ["a", "b"]})
        assert await whoami(client, asked) == {
            "username": "jane", "uid": "1234",
            "groups": ["devs", "ops", "system:authenticated"],
            "extra": {"scopes": ["a", "b"]},
        }
        account = bearer(ADMIN_TOKEN, Impersonate_User="system:serviceaccount:team:builder")
        assert await whoami(client, account) == {
            "username": "system:serviceaccount:team:builder",
            "groups": ["system:serviceaccounts", "system:serviceaccounts:team",
                       "system:authenticated"],
        }

    run(core, tmp_path, scenario)


def test_impersonating_anonymous_makes_it_unauthenticated(core: Core, tmp_path: Path) -> None:
    async def scenario(client: Client, token: str) -> None:
        anonymous = bearer(ADMIN_TOKEN, Impersonate_User="system:anonymous")
        # system:public-info-viewer covers the unauthenticated too...
        assert (await client.get("/version", headers=anonymous)).status == 200
        # ...but system:discovery only the authenticated.
        response = await client.get("/api", headers=anonymous)
        assert response.status == 403
        assert (await response.json())["message"] == (
            'forbidden: User "system:anonymous" cannot get path "/api"')

    run(core, tmp_path, scenario)


def test_impersonating_a_group_without_a_user_is_refused_before_anything_happens(
    core: Core, tmp_path: Path
) -> None:
    """The exact code is pinned (as upstream's) by the xfail test below; ours answers 400."""

    async def scenario(client: Client, token: str) -> None:
        for header in ("Impersonate-Group", "Impersonate-Uid", "Impersonate-Extra-Scopes"):
            response = await client.post(
                "/api/v1/namespaces/team/configmaps", headers=bearer(ADMIN_TOKEN, **{header: "x"}),
                json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
            assert response.status in (400, 500), header
            assert "without impersonating a user" in await response.text()
            assert core.store.table.get(CONFIGMAPS.key, "team", "c") is None

    run(core, tmp_path, scenario)


@pytest.mark.xfail(strict=True, reason="upstream answers buildImpersonationRequests' error with "
                   "responsewriters.InternalError: a 500 'Internal Server Error: ...: requested "
                   "[...] without impersonating a user', not a 400 Status")
def test_impersonating_a_group_without_a_user_is_upstreams_internal_error(
    core: Core, tmp_path: Path
) -> None:
    async def scenario(client: Client, token: str) -> None:
        response = await client.get("/api/v1/namespaces/team/pods",
                                    headers=bearer(ADMIN_TOKEN, Impersonate_Group="devs"))
        assert response.status == 500
        assert "without impersonating a user" in await response.text()

    run(core, tmp_path, scenario)
