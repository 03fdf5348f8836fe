"""Service account tokens for a pod's projected `serviceAccountToken` sources, asked of the API
server with a TokenRequest bound to the pod, as the kubelet asks for them.

A token is requested afresh each time a container starts and its volumes are written; it is
not refreshed while a container runs (the kubelet rewrites it at 80% of its lifetime or after
24 h). The API server answers the standard kube-api-access request (3607 s, the API's
audiences) with a token valid for a year, so ordinary pods never see theirs expire.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from engine.kube.client import KubeClient
from engine.kube.errors import ApiError
from engine.kube.resources import SERVICE_ACCOUNTS

# The API's default for a projected token's expirationSeconds.
DEFAULT_EXPIRATION_S = 3600


class TokenRef(NamedTuple):
    """What one serviceAccountToken source asks for ("" audience: the API server's own)."""

    service_account: str
    audience: str
    expiration_seconds: int


@dataclass(frozen=True)
class TokenFailure:
    """The TokenRequest failed; `message` is the kubelet's ("failed to fetch token: ...")."""

    message: str


Tokens = Mapping[TokenRef, str | TokenFailure]


def service_account(pod: Mapping[str, Any]) -> str:
    return str((pod.get("spec") or {}).get("serviceAccountName") or "default")


def token_ref(pod: Mapping[str, Any], source: Mapping[str, Any]) -> TokenRef:
    expiration = source.get("expirationSeconds")
    return TokenRef(service_account(pod), str(source.get("audience") or ""),
                    DEFAULT_EXPIRATION_S if expiration is None else int(expiration))


def token_refs(pod: Mapping[str, Any]) -> list[TokenRef]:
    """Every serviceAccountToken source of the pod's projected volumes, once each."""
    refs: list[TokenRef] = []
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        projected = volume.get("projected")
        if not isinstance(projected, Mapping):
            continue
        for source in projected.get("sources") or ():
            if isinstance(source, Mapping) and isinstance(source.get("serviceAccountToken"),
                                                          Mapping):
                refs.append(token_ref(pod, source["serviceAccountToken"]))
    return list(dict.fromkeys(refs))


def token_request(pod: Mapping[str, Any], ref: TokenRef) -> dict[str, Any]:
    """The TokenRequest the kubelet sends: bound to the pod, for the source's audience."""
    metadata = pod.get("metadata") or {}
    spec: dict[str, Any] = {
        "expirationSeconds": ref.expiration_seconds,
        "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": metadata.get("name"),
                           "uid": metadata.get("uid")},
    }
    if ref.audience:
        spec["audiences"] = [ref.audience]
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}


def request_tokens(api: KubeClient, pod: Mapping[str, Any]
                   ) -> dict[TokenRef, str | TokenFailure]:
    """A token for each serviceAccountToken source of the pod, or why there is none."""
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    tokens: dict[TokenRef, str | TokenFailure] = {}
    for ref in token_refs(pod):
        try:
            answer = api.create_subresource(SERVICE_ACCOUNTS, ref.service_account, "token",
                                            token_request(pod, ref), namespace)
        except ApiError as exc:
            tokens[ref] = TokenFailure(f"failed to fetch token: {exc.message}")
            continue
        token = (answer.get("status") or {}).get("token")
        tokens[ref] = (str(token) if token else
                       TokenFailure("failed to fetch token: the TokenRequest has no token"))
    return tokens
