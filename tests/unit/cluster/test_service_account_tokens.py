"""Bound service-account tokens: what TokenAuthority signs and when it still accepts a token,
as kube-apiserver's JWT authenticator and claims validator decide (pkg/serviceaccount/claims.go,
jwt.go): signature, issuer, audience, expiry, and the service account and bound object still
existing with the same uid."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import stat
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from engine.cluster.apiserver.auth.authentication import Authenticator
from engine.cluster.apiserver.auth.identity import UserInfo
from engine.cluster.apiserver.auth.service_account_tokens import (
    API_AUDIENCES,
    CREDENTIAL_ID,
    ISSUER,
    KEY_FILE,
    TokenAuthority,
)
from engine.cluster.apiserver.storage.objects import Obj

HOUR = 3600


class FakeClock:
    """Starts at the real time (so a fresh token is fresh for any verifier) and moves when told."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


class Objects:
    """What verification sees of the store: (kind, namespace, name) -> object."""

    def __init__(self) -> None:
        self.stored: dict[tuple[str, str, str], Obj] = {}

    def put(self, kind: str, name: str, uid: str, **metadata: Any) -> Obj:
        obj = {"metadata": {"name": name, "namespace": "team", "uid": uid, **metadata}}
        self.stored[(kind, "team", name)] = obj
        return obj

    def remove(self, kind: str, name: str) -> None:
        del self.stored[(kind, "team", name)]

    def __call__(self, kind: str, namespace: str, name: str) -> Obj | None:
        return self.stored.get((kind, namespace, name))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


@pytest.fixture
def authority(key: ec.EllipticCurvePrivateKey, clock: FakeClock) -> TokenAuthority:
    return TokenAuthority(key, clock=clock)


@pytest.fixture
def objects() -> Objects:
    found = Objects()
    found.put("ServiceAccount", "robot", "sa-uid")
    return found


def account(objects: Objects) -> Obj:
    obj = objects("ServiceAccount", "team", "robot")
    assert obj is not None
    return obj


def issue(authority: TokenAuthority, objects: Objects, *,
          audiences: tuple[str, ...] = API_AUDIENCES, seconds: int = HOUR,
          bound: Obj | None = None, bound_kind: str = "") -> str:
    return authority.issue(account(objects), audiences=audiences, expiration_seconds=seconds,
                           bound=bound, bound_kind=bound_kind).token


def rfc3339(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- a valid token -------------------------------------------------------------------------


def test_a_fresh_token_is_its_service_account(authority: TokenAuthority, objects: Objects) -> None:
    token = issue(authority, objects)
    found = authority.verify(token, objects)
    assert found is not None
    assert (found.name, found.uid) == ("system:serviceaccount:team:robot", "sa-uid")
    assert found.groups == ("system:serviceaccounts", "system:serviceaccounts:team",
                            "system:authenticated")
    assert not found.is_master
    (credential,) = found.extra[CREDENTIAL_ID]
    assert credential.startswith("JTI=")


def test_the_claims_are_kube_apiservers(
    authority: TokenAuthority, objects: Objects, clock: FakeClock
) -> None:
    pod = objects.put("Pod", "web", "pod-uid")
    issued = authority.issue(account(objects), audiences=["vault", ISSUER],
                             expiration_seconds=600, bound=pod, bound_kind="Pod")
    claims = jwt.decode(issued.token, options={"verify_signature": False})
    now = int(clock.now)
    assert jwt.get_unverified_header(issued.token)["alg"] == "ES256"
    assert {key: claims[key] for key in ("iss", "aud", "sub", "iat", "nbf", "exp")} == {
        "iss": "https://kubernetes.default.svc.cluster.local",
        "aud": ["vault", ISSUER],
        "sub": "system:serviceaccount:team:robot",
        "iat": now, "nbf": now, "exp": now + 600,
    }
    assert claims["kubernetes.io"] == {
        "namespace": "team",
        "serviceaccount": {"name": "robot", "uid": "sa-uid"},
        "pod": {"name": "web", "uid": "pod-uid"},
    }
    assert issued.expires_at == now + 600
    assert found_credential(authority, issued.token, objects) == f"JTI={claims['jti']}"


def found_credential(authority: TokenAuthority, token: str, objects: Objects) -> str:
    found = authority.verify(token, objects)
    assert found is not None
    return found.extra[CREDENTIAL_ID][0]


def test_each_token_has_its_own_id(authority: TokenAuthority, objects: Objects) -> None:
    first, second = issue(authority, objects), issue(authority, objects)
    assert first != second
    assert found_credential(authority, first, objects) != found_credential(authority, second,
                                                                           objects)


def test_a_token_for_several_audiences_is_accepted_if_one_is_the_apis(
    authority: TokenAuthority, objects: Objects
) -> None:
    assert authority.verify(issue(authority, objects, audiences=("vault", *API_AUDIENCES)),
                            objects) is not None


# --- expiry --------------------------------------------------------------------------------


def test_an_expired_token_is_refused(
    authority: TokenAuthority, objects: Objects, clock: FakeClock
) -> None:
    real = clock.now
    clock.now = real - 2 * HOUR
    token = issue(authority, objects, seconds=600)
    clock.now = real
    assert authority.verify(token, objects) is None


def test_a_token_expires_by_the_authoritys_clock(
    authority: TokenAuthority, objects: Objects, clock: FakeClock
) -> None:
    token = issue(authority, objects, seconds=600)
    assert authority.verify(token, objects) is not None
    clock.now += 600 + 2 * 60
    assert authority.verify(token, objects) is None


def test_expiry_has_a_minute_of_leeway(
    authority: TokenAuthority, objects: Objects, clock: FakeClock
) -> None:
    real = clock.now
    clock.now = real - 630
    token = issue(authority, objects, seconds=600)  # expired 30 s ago
    clock.now = real
    assert authority.verify(token, objects) is not None


# --- audience, signature, key --------------------------------------------------------------


def test_a_token_for_another_audience_is_refused(
    authority: TokenAuthority, objects: Objects
) -> None:
    assert authority.verify(issue(authority, objects, audiences=("vault",)), objects) is None


def test_a_tampered_token_is_refused(authority: TokenAuthority, objects: Objects) -> None:
    token = issue(authority, objects)
    header, payload, signature = token.split(".")
    claims = jwt.decode(token, options={"verify_signature": False})
    claims["kubernetes.io"]["serviceaccount"]["name"] = "admin"
    forged_payload = jwt.encode(claims, "x" * 32, algorithm="HS256").split(".")[1]
    assert authority.verify(f"{header}.{forged_payload}.{signature}", objects) is None
    flipped = signature[:-2] + ("A" if signature[-2] != "A" else "B") + signature[-1]
    assert authority.verify(f"{header}.{payload}.{flipped}", objects) is None
    assert authority.verify(f"{header}.{payload}.", objects) is None


def compact(alg: str, claims: dict[str, Any], secret: bytes | None) -> str:
    """A JWT in compact form, built by hand (PyJWT refuses to make the forgeries below)."""

    def segment(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    signing_input = ".".join(segment(json.dumps(part).encode())
                             for part in ({"alg": alg, "typ": "JWT"}, claims))
    if secret is None:
        return f"{signing_input}."
    mac = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{segment(mac)}"


def test_an_unsigned_or_symmetrically_signed_token_is_refused(
    authority: TokenAuthority, objects: Objects, key: ec.EllipticCurvePrivateKey
) -> None:
    claims = jwt.decode(issue(authority, objects), options={"verify_signature": False})
    assert authority.verify(compact("none", claims, None), objects) is None
    # The classic confusion: HMAC "signed" with the public key as the shared secret.
    public_pem = key.public_key().public_bytes(serialization.Encoding.PEM,
                                               serialization.PublicFormat.SubjectPublicKeyInfo)
    assert authority.verify(compact("HS256", claims, public_pem), objects) is None


def test_a_token_signed_by_another_key_is_refused(
    authority: TokenAuthority, objects: Objects, clock: FakeClock
) -> None:
    other = TokenAuthority(ec.generate_private_key(ec.SECP256R1()), clock=clock)
    assert authority.verify(issue(other, objects), objects) is None
    assert other.verify(issue(authority, objects), objects) is None


# --- the service account and the bound object ----------------------------------------------


def test_deleting_the_service_account_revokes_its_tokens(
    authority: TokenAuthority, objects: Objects
) -> None:
    token = issue(authority, objects)
    objects.remove("ServiceAccount", "robot")
    assert authority.verify(token, objects) is None


def test_a_recreated_service_account_does_not_inherit_old_tokens(
    authority: TokenAuthority, objects: Objects
) -> None:
    token = issue(authority, objects)
    objects.put("ServiceAccount", "robot", "new-uid")
    assert authority.verify(token, objects) is None
    fresh = authority.verify(issue(authority, objects), objects)
    assert fresh is not None and fresh.uid == "new-uid"


def test_a_pod_bound_token_lives_as_long_as_its_pod(
    authority: TokenAuthority, objects: Objects
) -> None:
    pod = objects.put("Pod", "web", "pod-uid")
    token = issue(authority, objects, bound=pod, bound_kind="Pod")
    assert authority.verify(token, objects) is not None
    objects.put("Pod", "web", "other-uid")  # deleted and recreated under the same name
    assert authority.verify(token, objects) is None
    objects.remove("Pod", "web")
    assert authority.verify(token, objects) is None


def test_a_token_of_a_pod_deleted_over_a_minute_ago_is_refused(
    authority: TokenAuthority, objects: Objects, clock: FakeClock
) -> None:
    pod = objects.put("Pod", "web", "pod-uid")
    token = issue(authority, objects, bound=pod, bound_kind="Pod")
    objects.put("Pod", "web", "pod-uid", deletionTimestamp=rfc3339(clock.now - 120))
    assert authority.verify(token, objects) is None


def test_a_terminating_pod_keeps_its_token_through_its_grace_period(
    authority: TokenAuthority, objects: Objects, clock: FakeClock
) -> None:
    pod = objects.put("Pod", "web", "pod-uid")
    token = issue(authority, objects, bound=pod, bound_kind="Pod")
    objects.put("Pod", "web", "pod-uid", deletionTimestamp=rfc3339(clock.now + 30))
    assert authority.verify(token, objects) is not None


def test_a_secret_bound_token_lives_as_long_as_its_secret(
    authority: TokenAuthority, objects: Objects
) -> None:
    secret = objects.put("Secret", "s", "secret-uid")
    token = issue(authority, objects, bound=secret, bound_kind="Secret")
    assert authority.verify(token, objects) is not None
    objects.put("Secret", "s", "other-uid")
    assert authority.verify(token, objects) is None
    objects.remove("Secret", "s")
    assert authority.verify(token, objects) is None


def test_a_pod_bound_identity_names_its_pod(authority: TokenAuthority, objects: Objects) -> None:
    pod = objects.put("Pod", "web", "pod-uid")
    found = authority.verify(issue(authority, objects, bound=pod, bound_kind="Pod"), objects)
    assert found is not None
    assert found.extra["authentication.kubernetes.io/pod-name"] == ("web",)
    assert found.extra["authentication.kubernetes.io/pod-uid"] == ("pod-uid",)


# --- the key on disk and the authenticator -------------------------------------------------


def test_the_key_is_kept_owner_only_and_outlives_a_restart(tmp_path: Path,
                                                           objects: Objects) -> None:
    first = TokenAuthority.for_data_dir(tmp_path / "data")
    token = issue(first, objects)
    key = tmp_path / "data" / KEY_FILE
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    written = key.read_bytes()
    again = TokenAuthority.for_data_dir(tmp_path / "data")
    assert key.read_bytes() == written
    found = again.verify(token, objects)
    assert found is not None and found.name == "system:serviceaccount:team:robot"
    elsewhere = TokenAuthority.for_data_dir(tmp_path / "elsewhere")
    assert elsewhere.verify(token, objects) is None
    assert TokenAuthority.for_data_dir(None).verify(token, objects) is None


def test_the_authenticator_accepts_a_token_while_its_account_exists(
    authority: TokenAuthority, objects: Objects
) -> None:
    authenticator = Authenticator("admin-token", authority, objects)
    token = issue(authority, objects)
    found = authenticator.user_for(f"Bearer {token}")
    assert isinstance(found, UserInfo) and found.name == "system:serviceaccount:team:robot"
    assert authenticator.user_for(f"bearer  {token} ") == found
    objects.remove("ServiceAccount", "robot")
    assert authenticator.user_for(f"Bearer {token}") is None
