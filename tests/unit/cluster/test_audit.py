"""The audit log: one audit.k8s.io/v1 Event per request at the Metadata level, as kube-apiserver
writes with `--audit-log-path` and a `level: Metadata` policy, written by the middleware that
wraps authentication, authorization and every handler."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from engine.cluster.apiserver.auth.audit import AuditLog
from engine.cluster.apiserver.auth.service_account_tokens import API_AUDIENCES, TokenAuthority
from engine.cluster.apiserver.core import Core
from engine.cluster.apiserver.endpoints.server import build_app
from engine.cluster.apiserver.registry.builtins import SERVICE_ACCOUNTS
from tests.unit.cluster.store_support import ManualReactor, make_core, namespace

ADMIN_TOKEN = "admin-token"
ADMIN = {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]}
ROBOT = "system:serviceaccount:team:robot"
Client = TestClient[web.Request, web.Application]
TIMESTAMP = re.compile(r"\A\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z\Z")


@pytest.fixture
def core() -> Core:
    built = make_core(ManualReactor())
    namespace(built, "team")
    built.store.create(SERVICE_ACCOUNTS, "team", {"metadata": {"name": "robot"}})
    return built


@asynccontextmanager
async def serving(core: Core, audit: AuditLog, logs: Path) -> AsyncIterator[tuple[Client, str]]:
    """A client of the whole app writing to `audit`, and a token of team/robot."""
    tokens = TokenAuthority.for_data_dir(None)
    robot = core.store.get(SERVICE_ACCOUNTS, "team", "robot").obj
    token = tokens.issue(robot, audiences=API_AUDIENCES, expiration_seconds=3600).token
    app = build_app(core, token=ADMIN_TOKEN, logs_dir=logs, tokens=tokens, audit=audit)
    try:
        async with TestClient(TestServer(app)) as client:
            yield client, token
    finally:
        audit.close()


def auth(token: str, **headers: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **headers}


def events(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text().splitlines()
    return [json.loads(line) for line in lines]


def audited(core: Core, tmp_path: Path, *requests: tuple[str, str, dict[str, str]]
            ) -> tuple[list[int], list[dict[str, Any]]]:
    """Send (method, path, headers) requests ("ROBOT" in a header stands for the robot's
    token); return the codes answered and the events logged."""
    log = tmp_path / "audit" / "audit.log"

    async def main() -> list[int]:
        codes = []
        async with serving(core, AuditLog(str(log)), tmp_path) as (client, token):
            for method, url, headers in requests:
                sent = {key: value.replace("ROBOT", token) for key, value in headers.items()}
                async with client.request(method, url, headers=sent) as response:
                    await response.read()
                    codes.append(response.status)
        return codes

    codes = asyncio.run(main())
    return codes, events(log)


# --- the event -----------------------------------------------------------------------------


def test_an_allowed_request_is_one_metadata_event(core: Core, tmp_path: Path) -> None:
    codes, logged = audited(core, tmp_path, ("GET", "/api/v1/namespaces/team/pods?limit=500",
                                             auth(ADMIN_TOKEN, **{"User-Agent": "kubectl/v1.32"})))
    assert codes == [200]
    (event,) = logged
    assert uuid.UUID(event.pop("auditID"))
    assert TIMESTAMP.match(event.pop("requestReceivedTimestamp"))
    assert TIMESTAMP.match(event.pop("stageTimestamp"))
    assert event.pop("sourceIPs") == ["127.0.0.1"]
    assert event == {
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "level": "Metadata",
        "stage": "ResponseComplete",
        "requestURI": "/api/v1/namespaces/team/pods?limit=500",
        "verb": "list",
        "user": ADMIN,
        "userAgent": "kubectl/v1.32",
        "objectRef": {"resource": "pods", "namespace": "team", "apiVersion": "v1"},
        "responseStatus": {"metadata": {}, "code": 200},
        "annotations": {"authorization.k8s.io/decision": "allow",
                        "authorization.k8s.io/reason": ""},
    }


def test_each_request_gets_its_own_line_in_order(core: Core, tmp_path: Path) -> None:
    codes, logged = audited(core, tmp_path,
                            ("GET", "/version", auth(ADMIN_TOKEN)),
                            ("GET", "/api/v1/namespaces/team/pods/x", auth(ADMIN_TOKEN)),
                            ("DELETE", "/api/v1/namespaces/team/configmaps", auth(ADMIN_TOKEN)))
    assert codes == [200, 404, 200]
    assert [(e["requestURI"], e["verb"], e["responseStatus"]["code"]) for e in logged] == [
        ("/version", "get", 200),
        ("/api/v1/namespaces/team/pods/x", "get", 404),
        ("/api/v1/namespaces/team/configmaps", "deletecollection", 200),
    ]
    assert len({e["auditID"] for e in logged}) == 3
    for event in logged:
        assert event["requestReceivedTimestamp"] <= event["stageTimestamp"]


def test_a_given_audit_id_is_kept(core: Core, tmp_path: Path) -> None:
    _, (event,) = audited(core, tmp_path, ("GET", "/version",
                                           auth(ADMIN_TOKEN, **{"Audit-ID": "trace-42"})))
    assert event["auditID"] == "trace-42"


def test_the_object_reference_leaves_empty_fields_out(core: Core, tmp_path: Path) -> None:
    _, logged = audited(
        core, tmp_path,
        ("POST", "/api/v1/namespaces/team/serviceaccounts/robot/token", auth(ADMIN_TOKEN)),
        ("GET", "/apis/coordination.k8s.io/v1/namespaces/team/leases/l", auth(ADMIN_TOKEN)),
        ("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles", auth(ADMIN_TOKEN)),
        ("GET", "/api/v1/namespaces/team", auth(ADMIN_TOKEN)),
    )
    assert [e["objectRef"] for e in logged] == [
        {"resource": "serviceaccounts", "namespace": "team", "name": "robot",
         "apiVersion": "v1", "subresource": "token"},
        {"resource": "leases", "namespace": "team", "name": "l",
         "apiGroup": "coordination.k8s.io", "apiVersion": "v1"},
        {"resource": "clusterroles", "apiGroup": "rbac.authorization.k8s.io", "apiVersion": "v1"},
        {"resource": "namespaces", "namespace": "team", "name": "team", "apiVersion": "v1"},
    ]
    assert logged[0]["verb"] == "create"


def test_a_path_request_has_no_object_reference(core: Core, tmp_path: Path) -> None:
    _, (event,) = audited(core, tmp_path, ("GET", "/openapi/v2", auth(ADMIN_TOKEN)))
    assert (event["verb"], event["requestURI"]) == ("get", "/openapi/v2")
    assert "objectRef" not in event


# --- who, and the authorization decision ---------------------------------------------------


def test_an_rbac_allow_names_its_binding(core: Core, tmp_path: Path) -> None:
    codes, (event,) = audited(core, tmp_path, ("GET", "/version", auth("ROBOT")))
    assert codes == [200]
    assert event["user"]["username"] == ROBOT
    assert event["user"]["groups"] == ["system:serviceaccounts", "system:serviceaccounts:team",
                                       "system:authenticated"]
    assert event["user"]["uid"] == core.store.get(SERVICE_ACCOUNTS, "team",
                                                  "robot").obj["metadata"]["uid"]
    assert event["user"]["extra"]["authentication.kubernetes.io/credential-id"][0].startswith(
        "JTI=")
    assert event["annotations"] == {
        "authorization.k8s.io/decision": "allow",
        "authorization.k8s.io/reason": 'RBAC: allowed by ClusterRoleBinding "system:discovery" '
                                       'of ClusterRole "system:discovery" to Group '
                                       '"system:authenticated"',
    }


def test_a_forbidden_request_is_recorded_as_forbid(core: Core, tmp_path: Path) -> None:
    codes, (event,) = audited(core, tmp_path,
                              ("GET", "/api/v1/namespaces/team/secrets/s", auth("ROBOT")))
    assert codes == [403]
    assert event["responseStatus"]["code"] == 403
    assert event["user"]["username"] == ROBOT
    assert event["objectRef"] == {"resource": "secrets", "namespace": "team", "name": "s",
                                  "apiVersion": "v1"}
    assert event["annotations"] == {"authorization.k8s.io/decision": "forbid",
                                    "authorization.k8s.io/reason": ""}


def test_a_failure_status_is_summarised_in_the_event(core: Core, tmp_path: Path) -> None:
    _, (event,) = audited(core, tmp_path,
                          ("GET", "/api/v1/namespaces/team/secrets/s", auth("ROBOT")))
    assert event["responseStatus"] == {
        "metadata": {}, "status": "Failure", "reason": "Forbidden", "code": 403,
        "message": f'secrets "s" is forbidden: User "{ROBOT}" cannot get resource "secrets" in '
                   'API group "" in the namespace "team"',
        "details": {"name": "s", "kind": "secrets"},
    }


def test_an_unauthenticated_request_has_an_empty_user(core: Core, tmp_path: Path) -> None:
    codes, logged = audited(core, tmp_path,
                            ("GET", "/api/v1/namespaces/team/pods", auth("wrong")),
                            ("GET", "/version", {}))
    assert codes == [401, 401]
    for event in logged:
        assert event["user"] == {}
        assert event["responseStatus"]["code"] == 401
        assert "annotations" not in event
        assert "impersonatedUser" not in event
    assert logged[0]["verb"] == "list"
    assert logged[0]["objectRef"] == {"resource": "pods", "namespace": "team", "apiVersion": "v1"}


def test_impersonation_records_both_identities(core: Core, tmp_path: Path) -> None:
    codes, logged = audited(
        core, tmp_path,
        ("GET", "/api/v1/namespaces/team/pods", auth(ADMIN_TOKEN, **{"Impersonate-User": "jane"})),
        ("GET", "/version", auth(ADMIN_TOKEN, **{"Impersonate-User": ROBOT})),
    )
    assert codes == [403, 200]
    denied, allowed = logged
    assert denied["user"] == ADMIN
    assert denied["impersonatedUser"] == {"username": "jane", "groups": ["system:authenticated"]}
    assert denied["annotations"]["authorization.k8s.io/decision"] == "forbid"
    assert allowed["user"] == ADMIN
    assert allowed["impersonatedUser"] == {
        "username": ROBOT,
        "groups": ["system:serviceaccounts", "system:serviceaccounts:team",
                   "system:authenticated"]}
    assert allowed["annotations"]["authorization.k8s.io/reason"].startswith(
        'RBAC: allowed by ClusterRoleBinding "system:discovery"')


def test_a_refused_impersonation_records_only_the_requester(core: Core, tmp_path: Path) -> None:
    codes, (event,) = audited(core, tmp_path,
                              ("GET", "/version", auth("ROBOT", **{"Impersonate-User": "jane"})))
    assert codes == [403]
    assert event["user"]["username"] == ROBOT
    assert "impersonatedUser" not in event
    assert event["responseStatus"]["code"] == 403


def test_the_response_names_its_audit_id(core: Core, tmp_path: Path) -> None:
    log = tmp_path / "audit.log"

    async def main() -> str:
        async with serving(core, AuditLog(str(log)), tmp_path) as (client, _):
            response = await client.get("/version", headers=auth(ADMIN_TOKEN))
            return response.headers.get("Audit-Id", "")

    assert asyncio.run(main()) == events(log)[0]["auditID"]


# --- where it goes -------------------------------------------------------------------------


def test_the_log_is_appended_to_across_restarts(core: Core, tmp_path: Path) -> None:
    audited(core, tmp_path, ("GET", "/version", auth(ADMIN_TOKEN)))
    _, logged = audited(core, tmp_path, ("GET", "/healthz", auth(ADMIN_TOKEN)))
    assert [e["requestURI"] for e in logged] == ["/version", "/healthz"]


def test_a_dash_writes_the_events_to_standard_output(
    core: Core, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    async def main() -> None:
        async with serving(core, AuditLog("-"), tmp_path) as (client, _):
            for url in ("/version", "/api/v1/namespaces/team/pods"):
                async with client.get(url, headers=auth(ADMIN_TOKEN)) as response:
                    assert response.status == 200

    asyncio.run(main())
    lines = capfd.readouterr().out.splitlines()
    written = [json.loads(line) for line in lines if line.startswith('{"kind":"Event"')]
    assert [(e["requestURI"], e["verb"]) for e in written] == [
        ("/version", "get"), ("/api/v1/namespaces/team/pods", "list")]
    assert not (tmp_path / "-").exists()
