"""Service accounts, RBAC and the audit log through the official `kubernetes` client.

A service account's bound token is refused what no binding grants (kube-apiserver's
403 body), allowed what one does from the next request on, and revoked with its
service account; the self reviews answer as the requests would be answered; the
audit log records who did what with the binding that allowed it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException
from typer.testing import CliRunner

from engine.cli import app
from engine.cluster import running_apiserver
from engine.cluster.apiserver.endpoints.serve import RunningApiServer, ServerOptions

RBAC = "rbac.authorization.k8s.io"
USER = "system:serviceaccount:team-a:robot"


@pytest.fixture
def audited(tmp_path: Path) -> Iterator[tuple[RunningApiServer, Path]]:
    log = tmp_path / "audit.log"
    with running_apiserver(tls=True, options=ServerOptions(audit_log=str(log))) as server:
        yield server, log


def _client(server: RunningApiServer, token: str) -> client.ApiClient:
    configuration = client.Configuration()
    configuration.host = server.url
    configuration.ssl_ca_cert = str(server.ca_file)
    configuration.api_key = {"authorization": f"Bearer {token}"}
    return client.ApiClient(configuration)


@pytest.fixture
def admin(audited: tuple[RunningApiServer, Path]) -> Iterator[client.ApiClient]:
    server, _ = audited
    with _client(server, server.token) as api:
        core = client.CoreV1Api(api)
        core.create_namespace({"metadata": {"name": "team-a"}})
        core.create_namespaced_service_account("team-a", {"metadata": {"name": "robot"}})
        yield api


def _token(admin: client.ApiClient, **spec: Any) -> str:
    answer = client.CoreV1Api(admin).create_namespaced_service_account_token(
        "robot", "team-a", {"spec": spec})
    token: str = answer.status.token
    return token


def _bind_pod_reader(admin: client.ApiClient) -> None:
    rbac = client.RbacAuthorizationV1Api(admin)
    rbac.create_namespaced_role("team-a", {
        "metadata": {"name": "pod-reader"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]})
    rbac.create_namespaced_role_binding("team-a", {
        "metadata": {"name": "robot-reads"},
        "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "pod-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "team-a"}]})


def test_a_service_account_gets_only_what_its_bindings_grant(
    audited: tuple[RunningApiServer, Path], admin: client.ApiClient
) -> None:
    server, _ = audited
    with _client(server, _token(admin)) as robot:
        core = client.CoreV1Api(robot)
        with pytest.raises(ApiException) as refused:
            core.list_namespaced_pod("team-a")
        assert refused.value.status == 403
        assert json.loads(refused.value.body) == {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f'pods is forbidden: User "{USER}" cannot list resource "pods" in API '
                       f'group "" in the namespace "team-a"',
            "reason": "Forbidden", "details": {"kind": "pods"}, "code": 403,
        }

        _bind_pod_reader(admin)
        assert core.list_namespaced_pod("team-a").items == []
        with pytest.raises(ApiException) as elsewhere:
            core.list_namespaced_pod("default")
        assert elsewhere.value.status == 403
        with pytest.raises(ApiException) as named:
            core.delete_namespaced_pod("web-0", "team-a")
        assert json.loads(named.value.body)["message"] == (
            f'pods "web-0" is forbidden: User "{USER}" cannot delete resource "pods" in API '
            f'group "" in the namespace "team-a"')
        with pytest.raises(ApiException) as cluster_wide:
            client.CoreV1Api(robot).list_node()
        assert cluster_wide.value.status == 403
        assert "at the cluster scope" in json.loads(cluster_wide.value.body)["message"]


def test_the_self_reviews_answer_as_the_requests_would_be(
    audited: tuple[RunningApiServer, Path], admin: client.ApiClient
) -> None:
    server, _ = audited
    _bind_pod_reader(admin)
    with _client(server, _token(admin)) as robot:
        authorization = client.AuthorizationV1Api(robot)

        def can(verb: str, namespace: str) -> bool:
            review = authorization.create_self_subject_access_review({"spec": {
                "resourceAttributes": {"verb": verb, "resource": "pods",
                                       "namespace": namespace}}})
            allowed: bool = review.status.allowed
            return allowed

        assert can("list", "team-a") is True
        assert can("create", "team-a") is False
        assert can("list", "default") is False
        rules = authorization.create_self_subject_rules_review(
            {"spec": {"namespace": "team-a"}}).status.resource_rules
        assert any(r.resources == ["pods"] and r.verbs == ["get", "list"] for r in rules)
        whoami = client.AuthenticationV1Api(robot).create_self_subject_review({})
        assert whoami.status.user_info.username == USER
        assert "system:serviceaccounts:team-a" in whoami.status.user_info.groups


@pytest.mark.parametrize("why", ["deleted", "audience", "tampered"])
def test_a_token_no_longer_valid_is_401(
    audited: tuple[RunningApiServer, Path], admin: client.ApiClient, why: str
) -> None:
    server, _ = audited
    token = _token(admin, audiences=["vault"]) if why == "audience" else _token(admin)
    if why == "deleted":
        core = client.CoreV1Api(admin)
        core.delete_namespaced_service_account("robot", "team-a")
        core.create_namespaced_service_account("team-a", {"metadata": {"name": "robot"}})
    if why == "tampered":  # claims rewritten to another service account, signature kept
        header, payload, signature = token.split(".")
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        claims["sub"] = "system:serviceaccount:team-a:admin"
        forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
        token = f"{header}.{forged}.{signature}"
    with _client(server, token) as robot, pytest.raises(ApiException) as refused:
        client.CoreV1Api(robot).list_namespaced_pod("team-a")
    assert refused.value.status == 401


def test_a_token_request_below_ten_minutes_is_422(admin: client.ApiClient) -> None:
    with pytest.raises(ApiException) as refused:
        _token(admin, expirationSeconds=60)
    assert refused.value.status == 422
    body = json.loads(refused.value.body)
    assert body["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "spec.expirationSeconds",
        "message": "Invalid value: 60: may not specify a duration less than 10 minutes"}]


def test_a_malformed_binding_is_422_naming_the_field(admin: client.ApiClient) -> None:
    rbac = client.RbacAuthorizationV1Api(admin)
    with pytest.raises(ApiException) as refused:
        rbac.create_cluster_role_binding({
            "metadata": {"name": "bad"},
            "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "x"},
            "subjects": [{"kind": "ServiceAccount", "name": "robot"}]})
    assert refused.value.status == 422
    fields = {c["field"] for c in json.loads(refused.value.body)["details"]["causes"]}
    assert fields == {"roleRef.kind", "subjects[0].namespace"}


def test_the_audit_log_says_who_did_what_and_which_binding_allowed_it(
    audited: tuple[RunningApiServer, Path], admin: client.ApiClient
) -> None:
    server, log = audited
    _bind_pod_reader(admin)
    with _client(server, _token(admin)) as robot:
        client.CoreV1Api(robot).list_namespaced_pod("team-a")
        with pytest.raises(ApiException):
            client.CoreV1Api(robot).list_namespaced_pod("default")
    events = [json.loads(line) for line in log.read_text().splitlines()]
    robot_events = [e for e in events if e["user"].get("username") == USER]
    allowed, denied = robot_events
    assert allowed["apiVersion"] == "audit.k8s.io/v1"
    assert (allowed["level"], allowed["stage"], allowed["verb"]) == (
        "Metadata", "ResponseComplete", "list")
    assert allowed["objectRef"] == {"resource": "pods", "namespace": "team-a",
                                    "apiVersion": "v1"}
    assert allowed["responseStatus"]["code"] == 200
    assert allowed["annotations"] == {
        "authorization.k8s.io/decision": "allow",
        "authorization.k8s.io/reason": 'RBAC: allowed by RoleBinding "robot-reads/team-a" of '
                                       'Role "pod-reader" to ServiceAccount "robot/team-a"'}
    assert denied["responseStatus"]["code"] == 403
    assert denied["annotations"]["authorization.k8s.io/decision"] == "forbid"
    token_request = next(e for e in events if e["objectRef"].get("subresource") == "token")
    assert token_request["verb"] == "create"
    assert token_request["user"]["groups"] == ["system:masters", "system:authenticated"]


def test_a_token_file_user_is_authorized_by_user_and_group_bindings(tmp_path: Path) -> None:
    users = tmp_path / "users.csv"
    users.write_text('# token,user,uid,"groups"\n'
                     'jane-secret,jane,u-1,"devs,ml"\nbob-secret,bob,u-2\n')
    with running_apiserver(tls=True, options=ServerOptions(token_auth_file=users)) as server:
        with _client(server, server.token) as admin:
            client.RbacAuthorizationV1Api(admin).create_cluster_role_binding({
                "metadata": {"name": "devs-view-nodes"},
                "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "node-viewer"},
                "subjects": [{"kind": "Group", "name": "devs"}]})
            client.RbacAuthorizationV1Api(admin).create_cluster_role({
                "metadata": {"name": "node-viewer"},
                "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}]})
        with _client(server, "jane-secret") as jane:
            assert client.CoreV1Api(jane).list_node().items == []
            whoami = client.AuthenticationV1Api(jane).create_self_subject_review({})
            assert (whoami.status.user_info.username, whoami.status.user_info.uid,
                    whoami.status.user_info.groups) == ("jane", "u-1",
                                                        ["devs", "ml", "system:authenticated"])
        with _client(server, "bob-secret") as bob, pytest.raises(ApiException) as refused:
            client.CoreV1Api(bob).list_node()
        assert json.loads(refused.value.body)["message"] == (
            'nodes is forbidden: User "bob" cannot list resource "nodes" in API group "" at '
            'the cluster scope')


def test_a_malformed_token_file_is_named_with_its_line(tmp_path: Path) -> None:
    users = tmp_path / "users.csv"
    users.write_text("jane-secret,jane,u-1\nonly-a-token\n")
    result = CliRunner().invoke(app, ["apiserver", "--port", "0", "--token-auth-file",
                                      str(users)])
    assert result.exit_code == 1
    assert result.output.strip() == (f'error: --token-auth-file: {users}:2: expected '
                                      f'token,user,uid[,"groups"] with a token and a user name')
