"""Bearer-token authentication for the embedded API server.

One random token per data directory, kept beside the stored objects with owner
-only permissions, so the kubeconfig written for a cluster keeps working across
restarts while nobody else on the machine can talk to it.
"""

from __future__ import annotations

import hmac
import os
import secrets
from pathlib import Path

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

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


def bearer_auth_middleware(token: str) -> Middleware:
    """An aiohttp middleware that answers 401 (a Status body) unless the bearer token matches."""
    expected = token.encode()

    @web.middleware
    async def authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
        scheme, _, presented = request.headers.get("Authorization", "").strip().partition(" ")
        # Like kube-apiserver, the scheme is case-insensitive and the token is compared whole.
        matches = hmac.compare_digest(presented.strip().encode(errors="replace"), expected)
        if scheme.lower() != "bearer" or not matches:
            return web.json_response(unauthorized().to_status(), status=401)
        return await handler(request)

    return authenticate
