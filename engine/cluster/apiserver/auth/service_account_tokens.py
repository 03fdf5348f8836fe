"""Bound service-account tokens: issued by TokenRequest, checked on every request.

A token is a JWT signed with the server's own key (kept beside the stored
objects, so tokens survive a restart) carrying kube-apiserver's claims: issuer,
audiences, expiry, the service account's namespace, name and uid, and the pod
or secret it is bound to, if any. It is accepted only while all of that still
holds: the signature verifies, it has not expired (a minute of clock skew is
allowed, as upstream), one of its audiences is this server's, and the service
account (and bound object) still exist with the same uid; a bound pod's token
works until a minute after the pod's deletion time, so it can still call the
API while terminating. So deleting a service account revokes its tokens at once.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from loguru import logger

from engine.cluster.apiserver.auth.identity import UserInfo, service_account_user
from engine.cluster.apiserver.storage.objects import Obj

ISSUER = "https://kubernetes.default.svc.cluster.local"
# kube-apiserver's --api-audiences default to the issuer.
API_AUDIENCES: tuple[str, ...] = (ISSUER,)
KEY_FILE = "service-account.key"
_ALGORITHM = "ES256"
_CLAIMS = "kubernetes.io"
CREDENTIAL_ID = "authentication.kubernetes.io/credential-id"
POD_NAME = "authentication.kubernetes.io/pod-name"
POD_UID = "authentication.kubernetes.io/pod-uid"
# How far past its expiry a token, or past its deletion a bound object, still counts: the
# clock skew kube-apiserver allows (jwt.DefaultLeeway), and a terminating pod's grace.
LEEWAY_S = 60

# (kind, namespace, name) -> the stored object or None; how verification sees the store.
Lookup = Callable[[str, str, str], Obj | None]

_log = logger.bind(component="apiserver.tokens")


@dataclass(frozen=True)
class IssuedToken:
    token: str
    issued_at: int  # seconds since the epoch
    expires_at: int


def _deleted_before(obj: Obj, moment: float) -> bool:
    """Whether `obj` is being deleted since before `moment` (seconds since the epoch)."""
    stamp = obj["metadata"].get("deletionTimestamp")
    if not stamp:
        return False
    try:
        deleted = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except (TypeError, ValueError):
        return True
    return deleted.timestamp() < moment


class TokenAuthority:
    """Signs service-account tokens and verifies them against the stored objects."""

    def __init__(self, key: ec.EllipticCurvePrivateKey, *,
                 clock: Callable[[], float] = time.time) -> None:
        self._key = key
        self._public = key.public_key()
        self._clock = clock

    @classmethod
    def for_data_dir(cls, data_dir: Path | None) -> TokenAuthority:
        """The data directory's signing key, created (mode 0600) on first use; fresh if None."""
        if data_dir is None:
            return cls(ec.generate_private_key(ec.SECP256R1()))
        path = data_dir / KEY_FILE
        if path.exists():
            key = serialization.load_pem_private_key(path.read_bytes(), password=None)
            if not isinstance(key, ec.EllipticCurvePrivateKey):
                raise ValueError(f"{path} is not an EC private key; delete it to get a new one")
            return cls(key)
        key = ec.generate_private_key(ec.SECP256R1())
        data_dir.mkdir(parents=True, exist_ok=True)
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(pem)
        return cls(key)

    def issue(self, account: Obj, *, audiences: Sequence[str], expiration_seconds: int,
              bound: Obj | None = None, bound_kind: str = "",
              warn_after_seconds: int | None = None) -> IssuedToken:
        """A token for service account `account`, optionally bound to a Pod or Secret; with
        `warn_after_seconds`, the `warnafter` claim of an extended token (when upstream
        starts warning of its use, while it stays valid until `exp`)."""
        now = int(self._clock())
        metadata = account["metadata"]
        claims: dict[str, Any] = {
            "iss": ISSUER,
            "aud": list(audiences),
            "sub": f"system:serviceaccount:{metadata['namespace']}:{metadata['name']}",
            "iat": now,
            "nbf": now,
            "exp": now + expiration_seconds,
            "jti": str(uuid.uuid4()),
            _CLAIMS: {
                "namespace": metadata["namespace"],
                "serviceaccount": {"name": metadata["name"], "uid": metadata["uid"]},
            },
        }
        if bound is not None:
            claims[_CLAIMS][bound_kind.lower()] = {
                "name": bound["metadata"]["name"], "uid": bound["metadata"]["uid"],
            }
        if warn_after_seconds is not None:
            claims[_CLAIMS]["warnafter"] = now + warn_after_seconds
        token = jwt.encode(claims, self._key, algorithm=_ALGORITHM)
        return IssuedToken(token, now, now + expiration_seconds)

    def verify(self, token: str, lookup: Lookup) -> UserInfo | None:
        """The service account a token stands for; None (logged why) when it is not valid."""
        try:
            claims = jwt.decode(
                token, self._public, algorithms=[_ALGORITHM], audience=list(API_AUDIENCES),
                issuer=ISSUER, options={"require": ["exp", "iat", "sub", "aud"],
                                        "verify_exp": False, "verify_nbf": False,
                                        "verify_iat": False},
            )
        except jwt.PyJWTError as exc:
            _log.info("rejected a service-account token: {}", exc)
            return None
        now = self._clock()
        if not isinstance(claims["exp"], int | float) or now > claims["exp"] + LEEWAY_S:
            _log.info("rejected a service-account token: it has expired")
            return None
        not_before = claims.get("nbf", claims["iat"])
        if not isinstance(not_before, int | float) or now < not_before - LEEWAY_S:
            _log.info("rejected a service-account token: it is not valid yet")
            return None
        private = claims.get(_CLAIMS)
        if not isinstance(private, dict):
            return None
        namespace = private.get("namespace", "")
        account_claim = private.get("serviceaccount") or {}
        account = lookup("ServiceAccount", namespace, account_claim.get("name", ""))
        if account is None or account["metadata"].get("uid") != account_claim.get("uid"):
            _log.info("rejected a token of service account {}/{}: it no longer exists",
                      namespace, account_claim.get("name"))
            return None
        extra: dict[str, tuple[str, ...]] = {}
        for kind in ("Pod", "Secret"):
            claim = private.get(kind.lower())
            if claim is None:
                continue
            obj = lookup(kind, namespace, claim.get("name", ""))
            if obj is None or obj["metadata"].get("uid") != claim.get("uid") or _deleted_before(
                    obj, now - LEEWAY_S):
                _log.info("rejected a token bound to {} {}/{}: it no longer exists",
                          kind.lower(), namespace, claim.get("name"))
                return None
            if kind == "Pod":
                extra[POD_NAME] = (claim["name"],)
                extra[POD_UID] = (claim["uid"],)
        if claims.get("jti"):
            extra[CREDENTIAL_ID] = (f"JTI={claims['jti']}",)
        return service_account_user(namespace, account_claim["name"],
                                    account["metadata"]["uid"], extra)
