"""Bearer-token authentication: one token per data directory, 401 Status for anyone else."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from engine.cluster.apiserver.auth.authentication import Authenticator, load_or_create_token
from engine.cluster.apiserver.auth.service_account_tokens import TokenAuthority


def test_token_is_created_once_per_data_dir_with_owner_only_mode(tmp_path: Path) -> None:
    first = load_or_create_token(tmp_path)
    second = load_or_create_token(tmp_path)
    assert first == second
    assert len(first) >= 32
    mode = stat.S_IMODE((tmp_path / "token").stat().st_mode)
    assert mode == 0o600


def test_each_memory_only_server_gets_its_own_token() -> None:
    assert load_or_create_token(None) != load_or_create_token(None)


def test_data_dir_is_created_when_missing(tmp_path: Path) -> None:
    token = load_or_create_token(tmp_path / "a" / "b")
    assert (tmp_path / "a" / "b" / "token").read_text().strip() == token


async def _request(token: str, headers: dict[str, str]) -> tuple[int, Any]:
    async def ok(request: web.Request) -> web.Response:
        return web.json_response({"kind": "APIVersions"})

    authenticator = Authenticator(token, TokenAuthority.for_data_dir(None), lambda *_: None)
    app = web.Application(middlewares=[authenticator.middleware()])
    app.router.add_get("/api", ok)
    async with TestClient(TestServer(app)) as client:
        response = await client.get("/api", headers=headers)
        return response.status, await response.json()


def test_right_token_passes() -> None:
    status, body = asyncio.run(_request("s3cret", {"Authorization": "Bearer s3cret"}))
    assert (status, body) == (200, {"kind": "APIVersions"})


def test_scheme_is_case_insensitive_like_kube_apiserver() -> None:
    status, _ = asyncio.run(_request("s3cret", {"Authorization": "bearer s3cret"}))
    assert status == 200


def test_missing_wrong_or_malformed_credentials_get_a_401_status() -> None:
    for headers in (
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": "Basic czNjcmV0"},
        {"Authorization": "Bearer s3cret2"},
        {"Authorization": "Bearer"},
    ):
        status, body = asyncio.run(_request("s3cret", headers))
        assert status == 401, headers
        assert body == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "Unauthorized",
            "reason": "Unauthorized",
            "code": 401,
        }
