"""ConfigMap and Secret validation, worded as kube-apiserver: the rules of their data maps.

Both kinds share the key syntax, the 1 MiB limit and what `immutable: true`
freezes, so those live here once; a Secret's immutable `type` and the keys
each Secret type requires are its own. Byte values arrive in canonical
base64 (`typed_decoding` runs first), so sizes count decoded bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import orjson

from engine.cluster.apiserver.admission.go_json import go_json_kind
from engine.cluster.apiserver.errors import Cause
from engine.cluster.apiserver.validation import base64_values
from engine.cluster.apiserver.validation.field_errors import forbidden, invalid, required, too_long
from engine.cluster.apiserver.validation.names import config_key_errors

Spec = Mapping[str, Any]
SERVICE_ACCOUNT_NAME_KEY = "kubernetes.io/service-account.name"
# core.MaxSecretSize, which ConfigMaps share.
_MAX_SIZE = 1024 * 1024
_IMMUTABLE_MESSAGE = "field is immutable when `immutable` is set"
_REDACTED = "<secret contents redacted>"
_GO_MAP = "map[string]interface {}"


def validate_configmap(obj: Spec) -> list[Cause]:
    data, binary = obj.get("data") or {}, obj.get("binaryData") or {}
    causes = _key_causes("data", data) + _key_causes("binaryData", binary)
    causes += [
        invalid(f"data[{k}]", k, "duplicate of key present in binaryData")
        for k in data
        if k in binary
    ]
    size = sum(len(str(v).encode()) for v in data.values()) + _bytes_size(binary)
    if size > _MAX_SIZE:
        causes.append(too_long("", _MAX_SIZE))
    return causes


def validate_secret(obj: Spec) -> list[Cause]:
    data: Mapping[str, str] = obj.get("data") or {}
    causes = _key_causes("data", data)
    if _bytes_size(data) > _MAX_SIZE:
        causes.append(too_long("data", _MAX_SIZE))
    rule = _TYPE_RULES.get(obj.get("type") or "")
    return causes + (rule(obj, data) if rule is not None else [])


def configmap_immutable(obj: Spec, old: Spec) -> list[Cause]:
    return _frozen(obj, old, ("data", "binaryData"))


def secret_immutable(obj: Spec, old: Spec) -> list[Cause]:
    causes = []
    if obj.get("type") != old.get("type"):
        causes.append(invalid("type", obj.get("type"), "field is immutable"))
    return causes + _frozen(obj, old, ("data",))


def _frozen(obj: Spec, old: Spec, fields: tuple[str, ...]) -> list[Cause]:
    """With `immutable: true` stored, neither the flag nor the data may change."""
    if not old.get("immutable"):
        return []
    causes = [] if obj.get("immutable") else [forbidden("immutable", _IMMUTABLE_MESSAGE)]
    return causes + [
        forbidden(field, _IMMUTABLE_MESSAGE)
        for field in fields
        if (obj.get(field) or {}) != (old.get(field) or {})
    ]


def _key_causes(field: str, entries: Spec) -> list[Cause]:
    return [invalid(f"{field}[{key}]", key, e) for key in entries for e in config_key_errors(key)]


def _bytes_size(entries: Mapping[str, str]) -> int:
    return sum(base64_values.decoded_size(str(value)) for value in entries.values())


# --- the keys each Secret type requires (ValidateSecret's switch on the type) ----------------

TypeRule = Callable[[Spec, Mapping[str, str]], list[Cause]]


def _service_account_token(secret: Spec, data: Mapping[str, str]) -> list[Cause]:
    annotations = (secret.get("metadata") or {}).get("annotations") or {}
    if annotations.get(SERVICE_ACCOUNT_NAME_KEY):
        return []
    return [required(f"metadata.annotations[{SERVICE_ACCOUNT_NAME_KEY}]")]


def _docker_config(key: str) -> TypeRule:
    """The key must be there and hold a JSON object (or null), as json.Unmarshal into a map."""

    def rule(secret: Spec, data: Mapping[str, str]) -> list[Cause]:
        if key not in data:
            return [required(f"data[{key}]")]
        try:
            parsed = orjson.loads(base64_values.decode(data[key]))
        except orjson.JSONDecodeError as exc:
            return [invalid(f"data[{key}]", _REDACTED, str(exc))]
        if parsed is None or isinstance(parsed, dict):
            return []
        why = f"json: cannot unmarshal {go_json_kind(parsed)} into Go value of type {_GO_MAP}"
        return [invalid(f"data[{key}]", _REDACTED, why)]

    return rule


def _basic_auth(secret: Spec, data: Mapping[str, str]) -> list[Cause]:
    """Either key may be empty, but one of them must be there."""
    if "username" in data or "password" in data:
        return []
    return [required("data[username]"), required("data[password]")]


def _ssh_auth(secret: Spec, data: Mapping[str, str]) -> list[Cause]:
    return [] if data.get("ssh-privatekey") else [required("data[ssh-privatekey]")]


def _tls(secret: Spec, data: Mapping[str, str]) -> list[Cause]:
    return [required(f"data[{key}]") for key in ("tls.crt", "tls.key") if key not in data]


_TYPE_RULES: dict[str, TypeRule] = {
    "kubernetes.io/service-account-token": _service_account_token,
    "kubernetes.io/dockercfg": _docker_config(".dockercfg"),
    "kubernetes.io/dockerconfigjson": _docker_config(".dockerconfigjson"),
    "kubernetes.io/basic-auth": _basic_auth,
    "kubernetes.io/ssh-auth": _ssh_auth,
    "kubernetes.io/tls": _tls,
}
