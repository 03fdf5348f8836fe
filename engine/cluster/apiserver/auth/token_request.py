"""POST `serviceaccounts/NAME/token`: TokenRequest, as `kubectl create token` sends it.

Answers the request with a signed, bound token in `status.token` (nothing is
stored). The defaults and limits are kube-apiserver's: one hour unless asked
otherwise, never less than ten minutes, the API's audiences when none are
given, and a bound Pod or Secret must exist (with the uid given, if any).

As with `--service-account-extend-token-expiration` (on by default), a pod-bound request
for exactly 3607 seconds for the API's audiences (what every kube-api-access volume asks
for) gets a token valid for a year, with a `warnafter` claim at the 3607 seconds asked
for; the answer still says 3607 seconds in `spec.expirationSeconds` and in
`status.expirationTimestamp`, so the kubelet refreshes it as if it were short-lived.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson
from aiohttp import web

from engine.cluster.apiserver.admission.service_account_admission import TOKEN_EXPIRATION_S
from engine.cluster.apiserver.admission.typed_decoding import check_type
from engine.cluster.apiserver.auth.service_account_tokens import API_AUDIENCES, TokenAuthority
from engine.cluster.apiserver.endpoints.responses import json_response, read_body
from engine.cluster.apiserver.endpoints.routes import Target
from engine.cluster.apiserver.errors import ApiError, bad_request, invalid, method_not_allowed
from engine.cluster.apiserver.registry.builtins import PODS, SECRETS, SERVICE_ACCOUNTS
from engine.cluster.apiserver.registry.store import Store
from engine.cluster.apiserver.storage.objects import Obj
from engine.cluster.apiserver.validation import field_errors

_GROUP = "authentication.k8s.io"
DEFAULT_EXPIRATION_S = 3600
_MIN_EXPIRATION_S = 600
_MAX_EXPIRATION_S = 1 << 32
_BOUND_KINDS = {"Pod": PODS, "Secret": SECRETS}
# serviceaccount.ExpirationExtensionSeconds: what an extended token is valid for.
EXTENDED_EXPIRATION_S = 24 * 365 * 60 * 60


def _check_types(body: dict[str, Any]) -> None:
    """400 for a field of the wrong JSON type, as decoding into TokenRequest answers it."""
    kind = "TokenRequest"
    check_type(body.get("spec"), dict, kind=kind, field="spec", go_type="v1.TokenRequestSpec")
    spec = body.get("spec") or {}
    check_type(spec.get("audiences"), list, kind=kind, field="spec.audiences", go_type="[]string")
    for audience in spec.get("audiences") or ():
        check_type(audience, str, kind=kind, field="spec.audiences", go_type="string")
    check_type(spec.get("expirationSeconds"), int, kind=kind, field="spec.expirationSeconds",
                go_type="int64")
    ref = spec.get("boundObjectRef")
    check_type(ref, dict, kind=kind, field="spec.boundObjectRef",
                go_type="v1.BoundObjectReference")
    for key, value in (ref or {}).items():
        check_type(value, str, kind=kind, field=f"spec.boundObjectRef.{key}", go_type="string")


class TokenRequestEndpoint:
    """Issues tokens for the service accounts in `store`."""

    def __init__(self, store: Store, tokens: TokenAuthority, *,
                 extend_expiration: bool = True) -> None:
        self._store = store
        self._tokens = tokens
        self._extend_expiration = extend_expiration

    async def handle(self, request: web.Request, target: Target) -> web.Response:
        if request.method != "POST":
            raise method_not_allowed("the server does not allow this method on the requested "
                                     "resource")
        assert target.name is not None and target.namespace is not None
        body = await read_body(request)
        if not isinstance(body, dict):
            raise bad_request("the request body must be a TokenRequest object")
        account = self._store.get(SERVICE_ACCOUNTS, target.namespace, target.name).obj
        _check_types(body)
        spec = body.get("spec") or {}
        expiration = spec.get("expirationSeconds")
        expiration = DEFAULT_EXPIRATION_S if expiration is None else expiration
        audiences = list(spec.get("audiences") or API_AUDIENCES)
        self._validate(target.name, expiration, spec.get("boundObjectRef"))
        bound_ref = spec.get("boundObjectRef")
        bound = self._bound_object(target.namespace, bound_ref) if bound_ref else None
        bound_kind = bound_ref["kind"] if bound_ref else ""
        extended = self._extends(int(expiration), audiences, bound_kind)
        issued = self._tokens.issue(
            account, audiences=audiences,
            expiration_seconds=EXTENDED_EXPIRATION_S if extended else int(expiration),
            bound=bound, bound_kind=bound_kind,
            warn_after_seconds=int(expiration) if extended else None,
        )
        # The expiry asked for, not the extended one (upstream answers the same).
        expires = datetime.fromtimestamp(issued.issued_at + int(expiration), UTC).strftime(
            "%Y-%m-%dT%H:%M:%SZ")
        answer: dict[str, Any] = {
            "kind": "TokenRequest",
            "apiVersion": f"{_GROUP}/v1",
            "metadata": {"name": target.name, "namespace": target.namespace,
                         "creationTimestamp": None},
            "spec": {"audiences": audiences, "boundObjectRef": bound_ref,
                     "expirationSeconds": int(expiration)},
            "status": {"token": issued.token, "expirationTimestamp": expires},
        }
        return json_response(orjson.dumps(answer), status=201)

    def _extends(self, expiration: int, audiences: list[str], bound_kind: str) -> bool:
        """Whether this is a kube-api-access token to extend: pod-bound, 3607 seconds, and
        for no audience but the API's."""
        return (self._extend_expiration and bound_kind == "Pod"
                and expiration == TOKEN_EXPIRATION_S
                and set(audiences) <= set(API_AUDIENCES))

    @staticmethod
    def _validate(name: str, expiration: object, bound_ref: object) -> None:
        causes = []
        if not isinstance(expiration, int) or isinstance(expiration, bool):
            causes.append(field_errors.invalid("spec.expirationSeconds", expiration,
                                               "must be an integer"))
        elif expiration < _MIN_EXPIRATION_S:
            causes.append(field_errors.invalid("spec.expirationSeconds", expiration,
                                               "may not specify a duration less than 10 minutes"))
        elif expiration > _MAX_EXPIRATION_S:
            causes.append(field_errors.invalid("spec.expirationSeconds", expiration,
                                               "may not specify a duration larger than 2^32 "
                                               "seconds"))
        if bound_ref is not None:
            if not isinstance(bound_ref, dict):
                causes.append(field_errors.invalid("spec.boundObjectRef", bound_ref,
                                                   "must be an object"))
            elif bound_ref.get("kind") not in _BOUND_KINDS:
                causes.append(field_errors.not_supported("spec.boundObjectRef.kind",
                                                         bound_ref.get("kind"), _BOUND_KINDS))
            elif not bound_ref.get("name"):
                causes.append(field_errors.required("spec.boundObjectRef.name"))
        if causes:
            raise invalid(_GROUP, "TokenRequest", name, causes)

    def _bound_object(self, namespace: str, ref: dict[str, Any]) -> Obj:
        obj = self._store.get(_BOUND_KINDS[ref["kind"]], namespace, ref["name"]).obj
        uid = ref.get("uid")
        if uid and obj["metadata"].get("uid") != uid:
            raise ApiError(409, "Conflict", f"the UID in the bound object reference ({uid}) "
                           f"does not match the UID in record. The object might have been "
                           f"deleted and then recreated")
        return obj
