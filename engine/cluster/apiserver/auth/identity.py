"""Who a request comes from: the user, uid and groups authorization decides on.

The names are kube-apiserver's, because RBAC subjects and `kubectl auth`
output use them: a service account is `system:serviceaccount:NS:NAME` in the
groups `system:serviceaccounts` and `system:serviceaccounts:NS`; everyone
authenticated is in `system:authenticated`; `system:masters` passes every
authorization check (the admin token's user is in it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS = "system:anonymous"
MASTERS = "system:masters"
SERVICE_ACCOUNTS_GROUP = "system:serviceaccounts"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True)
class UserInfo:
    """An authenticated identity."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def is_master(self) -> bool:
        return MASTERS in self.groups

    def as_dict(self) -> dict[str, Any]:
        """The user as audit events and access reviews write it (empty fields left out)."""
        written: dict[str, Any] = {"username": self.name}
        if self.uid:
            written["uid"] = self.uid
        if self.groups:
            written["groups"] = list(self.groups)
        if self.extra:
            written["extra"] = {key: list(values) for key, values in self.extra.items()}
        return written


# The key under which middlewares leave the request's user for the ones after them.
USER_KEY = web.RequestKey("jobmachine.user", UserInfo)

ADMIN = UserInfo("kubernetes-admin", groups=(MASTERS, AUTHENTICATED))


def service_account_user(
    namespace: str, name: str, uid: str = "", extra: Mapping[str, tuple[str, ...]] | None = None
) -> UserInfo:
    """The identity of service account `namespace/name`."""
    return UserInfo(
        f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}",
        uid=uid,
        groups=service_account_groups(namespace),
        extra=extra or {},
    )


def service_account_groups(namespace: str) -> tuple[str, ...]:
    return (SERVICE_ACCOUNTS_GROUP, f"{SERVICE_ACCOUNTS_GROUP}:{namespace}", AUTHENTICATED)


def split_service_account(username: str) -> tuple[str, str] | None:
    """(namespace, name) of a service account's user name; None for other users."""
    if not username.startswith(SERVICE_ACCOUNT_PREFIX):
        return None
    namespace, sep, name = username.removeprefix(SERVICE_ACCOUNT_PREFIX).partition(":")
    if not sep or not namespace or not name or ":" in name:
        return None
    return namespace, name
