"""Secrets: base64 data read as Go reads it, write-only stringData, type defaulting and rules.

The rules are kube-apiserver's: invalid base64 is a 400 from the decoder,
stringData is folded into data (and wins) and never stored, an unset or empty
type is Opaque and never changes, typed secrets need their keys, and
`immutable: true` freezes the data as it does for ConfigMaps.
"""

from __future__ import annotations

import base64
import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.cluster.apiserver.admission.typed_decoding import decode_typed
from engine.cluster.apiserver.core import Core
from engine.cluster.apiserver.encoding.protobuf import decode_request
from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.printing.tables import to_table
from engine.cluster.apiserver.registry.builtins import CONFIGMAPS, SECRETS
from engine.cluster.apiserver.validation import base64_values
from engine.cluster.apiserver.validation.base64_values import Base64Error
from engine.cluster.apiserver.validation.builtin_validation import validate_builtin
from tests.unit.cluster.store_support import ManualReactor, make_core

SAMPLES = Path(__file__).parent / "protobuf_samples"
MIB = 1024 * 1024


def b64(text: str | bytes) -> str:
    raw = text.encode() if isinstance(text, str) else text
    return base64.b64encode(raw).decode()


def secret(name: str = "creds", **fields: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default"}, **fields}


def messages(obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    return [f"{c.field}: {c.message}" for c in validate_builtin("Secret", obj, old)]


@pytest.fixture
def core() -> Core:
    return make_core(ManualReactor())


def stored(core: Core, name: str = "creds") -> dict[str, Any]:
    entry = core.store.table.get(SECRETS.key, "default", name)
    assert entry is not None
    return entry.obj


# --- base64 as Go's decoder reads it ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "position"),
    [
        ("YWJ", 0),  # an incomplete quantum: Go reports where it started
        ("YWJjZA", 4),
        ("YW=", 3),  # "xx=" needs its second "="
        ("Y===", 1),  # padding after one character
        ("=", 0),
        ("YWJj!", 4),
        ("YWJj ZGVm", 4),  # spaces are not skipped, only line breaks
        ("YWJjZA=x", 6),
        ("YWJjZA==x", 8),  # nothing may follow the padding
        ("YWJjZA==\nx", 9),
    ],
)
def test_corrupt_base64_names_the_byte_where_go_stops(text: str, position: int) -> None:
    with pytest.raises(Base64Error, match=f"^illegal base64 data at input byte {position}$"):
        base64_values.decode(text)


@pytest.mark.parametrize(
    ("text", "raw"),
    [
        ("", b""),
        ("YWJj", b"abc"),
        ("YWJjZA==", b"abcd"),
        ("YWJjZGU=", b"abcde"),
        ("YWJj\nZGVm\r\n", b"abcdef"),  # line breaks anywhere are skipped
        ("YWJjZA==\n", b"abcd"),
    ],
)
def test_valid_base64_decodes_with_line_breaks_skipped(text: str, raw: bytes) -> None:
    assert base64_values.decode(text) == raw


@given(st.binary(max_size=64))
def test_canonical_values_decode_back_and_know_their_size(raw: bytes) -> None:
    text = base64_values.encode(raw)
    assert base64_values.decode(text) == raw
    assert base64_values.decoded_size(text) == len(raw)


# --- decoding: data, stringData, types ---------------------------------------------------------


def test_string_data_is_merged_into_data_and_wins_then_dropped() -> None:
    body = secret(data={"a": b64("old"), "b": b64("kept")}, stringData={"a": "new", "c": "x"})
    decoded = decode_typed(SECRETS, body)
    assert decoded["data"] == {"a": b64("new"), "b": b64("kept"), "c": b64("x")}
    assert "stringData" not in decoded
    assert "stringData" in body  # the request body is not changed in place


def test_data_is_stored_in_canonical_base64() -> None:
    decoded = decode_typed(SECRETS, secret(data={"a": "YWJj\nZGVm", "empty": None}))
    assert decoded["data"] == {"a": "YWJjZGVm", "empty": ""}


@pytest.mark.parametrize("empty", [{}, None])
def test_empty_maps_are_left_out_as_go_omits_them(empty: dict[str, str] | None) -> None:
    decoded = decode_typed(SECRETS, secret(data=empty, stringData=empty))
    assert "data" not in decoded and "stringData" not in decoded


def test_invalid_base64_is_a_400_naming_the_key() -> None:
    with pytest.raises(ApiError) as caught:
        decode_typed(SECRETS, secret(data={"ok": b64("x"), "token": "not base64!"}))
    assert caught.value.code == 400
    assert caught.value.reason == "BadRequest"
    assert caught.value.message == (
        'Secret in version "v1" cannot be handled as a Secret: '
        "data[token]: illegal base64 data at input byte 3"
    )


@pytest.mark.parametrize(
    ("fields", "detail"),
    [
        ({"data": {"a": 1}}, "number into Go struct field Secret.data of type []uint8"),
        ({"data": ["a"]}, "array into Go struct field Secret.data of type map[string][]uint8"),
        ({"stringData": {"a": True}}, "bool into Go struct field Secret.stringData of type string"),
        ({"stringData": "a"}, "string into Go struct field Secret.stringData of type map"),
        ({"type": 3}, "number into Go struct field Secret.type of type v1.SecretType"),
    ],
)
def test_values_of_the_wrong_json_type_are_400s_worded_as_go(
    fields: dict[str, Any], detail: str
) -> None:
    with pytest.raises(ApiError) as caught:
        decode_typed(SECRETS, secret(**fields))
    assert caught.value.code == 400
    assert f"cannot be handled as a Secret: json: cannot unmarshal {detail}" in str(caught.value)


def test_configmap_binary_data_shares_the_base64_rule() -> None:
    decoded = decode_typed(CONFIGMAPS, {"binaryData": {"b": "AAH/\n/g=="}, "data": {}})
    assert decoded == {"binaryData": {"b": "AAH//g=="}, "data": {}}
    with pytest.raises(ApiError, match=r"ConfigMap: binaryData\[b\]: illegal base64 data"):
        decode_typed(CONFIGMAPS, {"binaryData": {"b": "A"}})


_KEYS = st.text(alphabet="abcXYZ019-_.", min_size=1, max_size=12).filter(
    lambda key: not key.startswith("..") and key != "."
)


@given(st.dictionaries(_KEYS, st.text(max_size=40), max_size=6))
def test_any_string_data_round_trips_to_base64_data(string_data: dict[str, str]) -> None:
    decoded = decode_typed(SECRETS, secret(stringData=string_data))
    data = decoded.get("data", {})
    assert {key: base64.b64decode(value).decode() for key, value in data.items()} == string_data
    assert validate_builtin("Secret", {**decoded, "type": "Opaque"}) == []


# --- defaulting and the store pipeline ---------------------------------------------------------


@pytest.mark.parametrize("given_type", [None, ""])
def test_unset_or_empty_type_defaults_to_opaque(core: Core, given_type: str | None) -> None:
    # Go clients send the zero values: type "", immutable false, empty maps.
    body = secret(type=given_type, immutable=False, data={}, stringData={})
    created = core.store.create(SECRETS, "default", body).entry.obj
    assert created["type"] == "Opaque"
    assert created["immutable"] is False
    assert "data" not in created and "stringData" not in created


def test_a_written_secret_never_keeps_string_data(core: Core) -> None:
    core.store.create(SECRETS, "default", secret(stringData={"user": "admin"}))
    assert stored(core)["data"] == {"user": b64("admin")}
    core.store.update(SECRETS, "default", "creds", secret(stringData={"pass": "pw"}))
    # an update replaces the object: data keys the body does not name are gone
    assert stored(core)["data"] == {"pass": b64("pw")}
    patch = b'{"stringData": {"pass": "new", "more": "m"}}'
    core.store.patch(SECRETS, "default", "creds", "application/strategic-merge-patch+json", patch)
    assert stored(core)["data"] == {"pass": b64("new"), "more": b64("m")}
    assert "stringData" not in stored(core)


def test_rewriting_the_same_string_data_is_a_no_op(core: Core) -> None:
    first = core.store.create(SECRETS, "default", secret(stringData={"a": "1"})).entry
    again = core.store.update(SECRETS, "default", "creds", secret(stringData={"a": "1"})).entry
    assert again.obj["metadata"]["resourceVersion"] == first.obj["metadata"]["resourceVersion"]


def test_type_cannot_change_even_through_the_empty_default(core: Core) -> None:
    tls = {"tls.crt": b64("c"), "tls.key": b64("k")}
    core.store.create(SECRETS, "default", secret(type="kubernetes.io/tls", data=tls))
    with pytest.raises(ApiError) as caught:
        core.store.update(SECRETS, "default", "creds", secret(type="", data=tls))
    assert caught.value.code == 422
    assert 'type: Invalid value: "Opaque": field is immutable' in caught.value.message


def test_string_data_cannot_change_an_immutable_secret(core: Core) -> None:
    core.store.create(SECRETS, "default", secret(stringData={"a": "1"}, immutable=True))
    with pytest.raises(ApiError, match="data: Forbidden: field is immutable when `immutable`"):
        core.store.update(
            SECRETS, "default", "creds", secret(stringData={"a": "2"}, immutable=True)
        )
    labelled = secret(stringData={"a": "1"}, immutable=True)
    labelled["metadata"]["labels"] = {"tier": "db"}
    core.store.update(SECRETS, "default", "creds", labelled)
    assert stored(core)["metadata"]["labels"] == {"tier": "db"}


def test_kubectl_create_secret_generic_from_literals(core: Core) -> None:
    # kubectl sends an empty type, which protobuf leaves out and the server defaults.
    body = decode_request((SAMPLES / "create-secret-generic-from-literal.bin").read_bytes())
    assert body == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds"},
        "data": {"password": b64("s3cr=t"), "user": b64("admin")},
    }
    assert core.store.create(SECRETS, "default", body).entry.obj["type"] == "Opaque"


def test_kubectl_create_secret_from_files_keeps_binary_data_and_type() -> None:
    body = decode_request(
        (SAMPLES / "create-secret-generic-from-files-save-config.bin").read_bytes()
    )
    assert body["data"] == {
        "blob.bin": b64(b"\x00\x01\xff\xfebinary"),
        "note.txt": b64("hello\nworld\n"),
    }
    assert body["type"] == "example.com/custom"


def test_kubectl_create_secret_docker_registry_passes_its_type_rule() -> None:
    body = decode_request((SAMPLES / "create-secret-docker-registry.bin").read_bytes())
    assert body["type"] == "kubernetes.io/dockerconfigjson"
    config = base64.b64decode(body["data"][".dockerconfigjson"])
    assert b'"registry.example.com"' in config
    assert validate_builtin("Secret", {**body, "metadata": {"name": "regcred"}}) == []


# --- validation --------------------------------------------------------------------------------


def test_keys_follow_the_configmap_key_rule() -> None:
    found = messages(secret(data={"a b": b64("x"), "..x": b64("y"), "ok.key_1-A": b64("z")}))
    assert len(found) == 2
    assert any(m.startswith('data[a b]: Invalid value: "a b": a valid config key') for m in found)
    assert "data[..x]: Invalid value: \"..x\": must not start with '..'" in found


def test_the_size_limit_counts_decoded_bytes_up_to_exactly_one_mib() -> None:
    full = b64(b"x" * (MIB - 1))
    assert messages(secret(data={"a": full, "b": b64("y")})) == []
    assert messages(secret(data={"a": full, "b": b64("yz")})) == [
        f"data: Too long: may not be more than {MIB} bytes"
    ]


_REQUIRED = "data[%s]: Required value"


@pytest.mark.parametrize(
    ("secret_type", "data", "expected"),
    [
        ("kubernetes.io/tls", {}, [_REQUIRED % "tls.crt", _REQUIRED % "tls.key"]),
        ("kubernetes.io/tls", {"tls.crt": "", "tls.key": ""}, []),  # present, even empty
        ("kubernetes.io/dockerconfigjson", {}, [_REQUIRED % ".dockerconfigjson"]),
        ("kubernetes.io/dockerconfigjson", {".dockerconfigjson": b64('{"auths":{}}')}, []),
        ("kubernetes.io/dockerconfigjson", {".dockerconfigjson": b64("null")}, []),
        ("kubernetes.io/dockercfg", {}, [_REQUIRED % ".dockercfg"]),
        ("kubernetes.io/basic-auth", {}, [_REQUIRED % "username", _REQUIRED % "password"]),
        ("kubernetes.io/basic-auth", {"password": ""}, []),
        ("kubernetes.io/ssh-auth", {"ssh-privatekey": ""}, [_REQUIRED % "ssh-privatekey"]),
        ("kubernetes.io/ssh-auth", {"ssh-privatekey": b64("k")}, []),
        ("Opaque", {}, []),
        ("example.com/anything", {}, []),
    ],
)
def test_typed_secrets_need_their_keys(
    secret_type: str, data: dict[str, str], expected: list[str]
) -> None:
    assert messages(secret(type=secret_type, data=data)) == expected


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("[1]", "json: cannot unmarshal array into Go value of type map[string]interface {}"),
        ("{nope", '"<secret contents redacted>": '),
    ],
)
def test_docker_configs_must_hold_a_json_object(content: str, fragment: str) -> None:
    found = messages(secret(type="kubernetes.io/dockercfg", data={".dockercfg": b64(content)}))
    assert len(found) == 1
    assert found[0].startswith('data[.dockercfg]: Invalid value: "<secret contents redacted>": ')
    assert fragment in found[0]


def test_service_account_tokens_need_the_account_name_annotation() -> None:
    token = secret(type="kubernetes.io/service-account-token")
    assert messages(token) == [
        "metadata.annotations[kubernetes.io/service-account.name]: Required value"
    ]
    token["metadata"]["annotations"] = {"kubernetes.io/service-account.name": "default"}
    assert messages(token) == []


def test_immutable_freezes_data_and_itself_but_not_metadata() -> None:
    old = secret(type="Opaque", data={"a": b64("1")}, immutable=True)
    assert messages({**old, "metadata": {**old["metadata"], "labels": {"x": "y"}}}, old) == []
    assert messages({**old, "data": {"a": b64("2")}}, old) == [
        "data: Forbidden: field is immutable when `immutable` is set"
    ]
    assert messages({**old, "immutable": False}, old) == [
        "immutable: Forbidden: field is immutable when `immutable` is set"
    ]
    mutable = {**old, "immutable": False}
    assert messages({**mutable, "data": {}, "immutable": True}, mutable) == []


def test_type_is_immutable_whatever_the_immutable_flag() -> None:
    old = secret(type="Opaque", data={"tls.crt": "", "tls.key": ""})
    assert messages({**old, "type": "kubernetes.io/tls"}, old) == [
        'type: Invalid value: "kubernetes.io/tls": field is immutable'
    ]


# --- printing ----------------------------------------------------------------------------------


def test_kubectl_get_columns_are_name_type_data_age() -> None:
    now = datetime.datetime(2025, 6, 1, 12, 0, 0, tzinfo=datetime.UTC)
    obj = secret(type="kubernetes.io/tls", data={"tls.crt": "", "tls.key": ""})
    obj["metadata"]["creationTimestamp"] = "2025-06-01T11:59:55Z"
    table = to_table(SECRETS, [obj], list_metadata={}, now=now)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Type", "Data", "Age"]
    assert table["rows"][0]["cells"] == ["creds", "kubernetes.io/tls", 2, "5s"]
