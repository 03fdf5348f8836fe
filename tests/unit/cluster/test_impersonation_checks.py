"""Impersonation (`kubectl --as`, `--as-group`, `--as-uid`, extra headers): which
`impersonate` permissions the requester must hold, in kube-apiserver's order, and who the
request then acts as. The authorizer's RBAC answer is scripted, so each test reads the
checks themselves; the integration tests cover the same through real RBAC objects."""

from __future__ import annotations

import pytest
from aiohttp.test_utils import make_mocked_request
from multidict import CIMultiDict

from engine.cluster.apiserver.auth.authorization import RequestAuthorizer
from engine.cluster.apiserver.auth.identity import UserInfo
from engine.cluster.apiserver.auth.rbac import Decision
from engine.cluster.apiserver.endpoints.request_info import RequestInfo
from engine.cluster.apiserver.errors import ApiError

PATH = "/api/v1/namespaces/ml/pods"
ALICE = UserInfo("alice", groups=("system:authenticated", "devs"))
AUTH_GROUP = "authentication.k8s.io"


class Scripted(RequestAuthorizer):
    """Answers every check from `denied` (by resource) and records what it was asked."""

    def __init__(self, denied: dict[str, str] | None = None) -> None:
        super().__init__(rbac=None)  # type: ignore[arg-type]
        self.asked: list[RequestInfo] = []
        self.denied = denied or {}

    def decide(self, user: UserInfo, info: RequestInfo) -> Decision:
        self.asked.append(info)
        reason = self.denied.get(info.resource)
        return Decision(False, reason) if reason is not None else Decision(True, "ok")


def impersonating(authorizer: Scripted, *headers: tuple[str, str]) -> UserInfo | None:
    request = make_mocked_request("GET", PATH, headers=CIMultiDict(headers))
    return authorizer._impersonate(request, ALICE)


def check(resource: str, name: str, *, api_group: str = "", namespace: str = "",
          subresource: str = "") -> RequestInfo:
    return RequestInfo("impersonate", PATH, True, api_group=api_group, namespace=namespace,
                       resource=resource, subresource=subresource, name=name)


def test_no_impersonation_headers_means_the_requester_acts_and_nothing_is_checked() -> None:
    authorizer = Scripted()
    assert impersonating(authorizer) is None
    assert authorizer.asked == []


@pytest.mark.parametrize("header", [("Impersonate-Group", "admins"), ("Impersonate-Uid", "42"),
                                    ("Impersonate-Extra-Scopes", "view")])
def test_groups_uid_or_extra_without_a_user_is_a_bad_request(header: tuple[str, str]) -> None:
    with pytest.raises(ApiError) as refused:
        impersonating(Scripted(), header)
    assert refused.value.code == 400
    assert "without impersonating a user" in refused.value.message


def test_every_part_asked_for_is_checked_in_order() -> None:
    authorizer = Scripted()
    user = impersonating(
        authorizer,
        ("Impersonate-User", "bob"), ("Impersonate-Group", "admins"),
        ("Impersonate-Group", "ops"), ("Impersonate-Uid", "u-7"),
        ("Impersonate-Extra-Scopes", "view"), ("Impersonate-Extra-Scopes", "edit"),
        ("Impersonate-Extra-Reason", "debug"),
    )
    assert authorizer.asked == [
        check("users", "bob"),
        check("groups", "admins"),
        check("groups", "ops"),
        check("uids", "u-7", api_group=AUTH_GROUP),
        check("userextras", "view", api_group=AUTH_GROUP, subresource="scopes"),
        check("userextras", "edit", api_group=AUTH_GROUP, subresource="scopes"),
        check("userextras", "debug", api_group=AUTH_GROUP, subresource="reason"),
    ]
    assert user == UserInfo("bob", uid="u-7",
                            groups=("admins", "ops", "system:authenticated"),
                            extra={"scopes": ("view", "edit"), "reason": ("debug",)})


def test_a_service_account_is_checked_as_one_and_gets_its_groups() -> None:
    authorizer = Scripted()
    user = impersonating(authorizer, ("Impersonate-User", "system:serviceaccount:ml:trainer"))
    assert authorizer.asked == [check("serviceaccounts", "trainer", namespace="ml")]
    assert user is not None and user.name == "system:serviceaccount:ml:trainer"
    assert user.groups == ("system:serviceaccounts", "system:serviceaccounts:ml",
                           "system:authenticated")
    assert user.uid == "" and dict(user.extra) == {}


def test_a_service_account_impersonated_with_groups_gets_only_those() -> None:
    user = impersonating(Scripted(), ("Impersonate-User", "system:serviceaccount:ml:trainer"),
                         ("Impersonate-Group", "system:authenticated"))
    assert user is not None and user.groups == ("system:authenticated",)


def test_the_anonymous_user_is_unauthenticated() -> None:
    user = impersonating(Scripted(), ("Impersonate-User", "system:anonymous"))
    assert user is not None and user.groups == ("system:unauthenticated",)


def test_the_first_permission_missing_refuses_with_the_authorizers_reason() -> None:
    authorizer = Scripted(denied={"uids": "no rule for uids"})
    with pytest.raises(ApiError) as refused:
        impersonating(authorizer, ("Impersonate-User", "bob"), ("Impersonate-Uid", "u-7"),
                      ("Impersonate-Extra-Scopes", "view"))
    assert refused.value.code == 403
    assert refused.value.message == (
        'uids.authentication.k8s.io "u-7" is forbidden: User "alice" cannot impersonate '
        'resource "uids" in API group "authentication.k8s.io" at the cluster scope: '
        "no rule for uids")
    assert [c.resource for c in authorizer.asked] == ["users", "uids"]  # stopped there
