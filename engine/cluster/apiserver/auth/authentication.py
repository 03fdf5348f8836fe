"""Authentication for the embedded API server: who a request comes from.

Three kinds of bearer token are accepted. The admin token (one random token
per data directory, kept beside the stored objects with owner-only
permissions, so the kubeconfig written for a cluster keeps working across
restarts while nobody else on the machine can talk to it) is the
`kubernetes-admin` user in `system:masters`. A service-account token from
TokenRequest is that service account while it is valid. The users of a token
file (kube-apiserver's `--token-auth-file` format) are who the file says.
Anything else is 401, as kube-apiserver answers with anonymous access off.
The identity is left on the request for impersonation, authorization and
audit.
"""

from __future__ import annotations

import csv
import hmac
import os
import secrets
from collections.abc import Mapping
from pathlib import Path

import orjson
from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from engine.cluster.apiserver.auth.identity import ADMIN, AUTHENTICATED, USER_KEY, UserInfo
from engine.cluster.apiserver.auth.service_account_tokens import Lookup, TokenAuthority
from engine.cluster.apiserver.errors import unauthorized

TOKEN_FILE = "token"


def load_or_create_token(data_dir: Path | None) -> str:
    """The data directory's token, created (mode 0600) on first use; a fresh one when None."""
    if data_dir is None:
        return secrets.token_urlsafe(32)
    path = data_dir / TOKEN_FILE
    if path.exists():
        token = path.read_text().strip()
        if not token:
            raise ValueError(f"{path} is empty; delete it to get a new token")
        return token
    data_dir.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as stream:
        stream.write(token + "\n")
    return token


def load_token_users(path: Path) -> dict[str, UserInfo]:
    """The users of a `--token-auth-file`: CSV lines `token,user,uid[,"group1,group2"]`.

    Raises ValueError naming the file and line of a malformed entry."""
    users: dict[str, UserInfo] = {}
    with path.open(newline="") as stream:
        for number, row in enumerate(csv.reader(stream), start=1):
            if not row or row[0].startswith("#"):
                continue
            if len(row) < 3 or not row[0].strip() or not row[1].strip():
                raise ValueError(f"{path}:{number}: expected token,user,uid[,\"groups\"] with "
                                 f"a token and a user name")
            token, name, uid = (field.strip() for field in row[:3])
            if token in users:
                raise ValueError(f"{path}:{number}: this token is already given to "
                                 f"{users[token].name}")
            groups = [g.strip() for g in row[3].split(",") if g.strip()] if len(row) > 3 else []
            users[token] = UserInfo(name, uid=uid, groups=(*groups, AUTHENTICATED))
    return users


class Authenticator:
    """Maps a bearer token to its user."""

    def __init__(self, admin_token: str, tokens: TokenAuthority, lookup: Lookup,
                 users: Mapping[str, UserInfo] | None = None) -> None:
        self._admin = admin_token.encode()
        self._tokens = tokens
        self._lookup = lookup
        self._users = dict(users or {})

    def user_for(self, authorization: str) -> UserInfo | None:
        # Like kube-apiserver, the scheme is case-insensitive and the token is compared whole.
        scheme, _, presented = authorization.strip().partition(" ")
        token = presented.strip()
        if scheme.lower() != "bearer" or not token:
            return None
        if hmac.compare_digest(token.encode(errors="replace"), self._admin):
            return ADMIN
        user = self._users.get(token)
        if user is not None:
            return user
        if token.count(".") == 2:
            return self._tokens.verify(token, self._lookup)
        return None

    def middleware(self) -> Middleware:
        """Answers 401 (a Status body) to a request without a valid token."""

        @web.middleware
        async def authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
            user = self.user_for(request.headers.get("Authorization", ""))
            if user is None:
                # Compact and ended by a newline, as every other error (endpoints/responses.py).
                return web.Response(body=orjson.dumps(unauthorized().to_status()) + b"\n",
                                    status=401, content_type="application/json")
            request[USER_KEY] = user
            return await handler(request)

        return authenticate
