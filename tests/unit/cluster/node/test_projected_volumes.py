"""Projected volumes as the kubelet writes them: configMap, secret, downwardAPI and
serviceAccountToken sources in one directory, per-item modes over the volume's defaultMode,
optional sources, missing ones (the kubelet's FailedMount message, every failing source at
once) and sources the local node cannot provide."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

import pytest

from engine.cluster.node.config.env import ContainerConfigError
from engine.cluster.node.config.sources import SourceObject, SourceRef, Sources, volume_references
from engine.cluster.node.config.tokens import TokenFailure, TokenRef
from engine.cluster.node.config.volumes import (
    File,
    Mount,
    Projection,
    Unavailable,
    container_mounts,
    volume_contents,
)

SOURCES = Sources({
    SourceRef("configmap", "kube-root-ca.crt"): SourceObject({"ca.crt": "CA"}, {"ca.crt": b"CA"}),
    SourceRef("secret", "creds"): SourceObject({"user": "u", "pass": "p"},
                                               {"user": b"u", "pass": b"p"}),
})
FAILED = 'MountVolume.SetUp failed for volume "v" : '
API_TOKEN = TokenRef("runner", "", 3607)


def pod(*sources: dict[str, Any], default_mode: int | None = None,
        account: str | None = "runner") -> dict[str, Any]:
    projected: dict[str, Any] = {"sources": list(sources)}
    if default_mode is not None:
        projected["defaultMode"] = default_mode
    spec: dict[str, Any] = {"volumes": [{"name": "v", "projected": projected}]}
    if account:
        spec["serviceAccountName"] = account
    return {"metadata": {"name": "w-0", "namespace": "team", "uid": "u1"}, "spec": spec}


def content(*sources: dict[str, Any], default_mode: int | None = None,
            tokens: dict[TokenRef, str | TokenFailure] | None = None,
            account: str | None = "runner") -> Any:
    found = pod(*sources, default_mode=default_mode, account=account)
    return volume_contents(found, SOURCES, tokens=tokens)["v"]


TOKEN = {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}
CA = {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}
NAMESPACE = {"downwardAPI": {"items": [{"path": "namespace",
                                        "fieldRef": {"fieldPath": "metadata.namespace"}}]}}


def test_the_kube_api_access_volume_holds_token_ca_and_namespace() -> None:
    assert content(TOKEN, CA, NAMESPACE, default_mode=0o644, tokens={API_TOKEN: "jwt"}) == (
        Projection({"token": File(b"jwt", 0o644), "ca.crt": File(b"CA", 0o644),
                    "namespace": File(b"team", 0o644)}))


def test_the_volume_default_mode_applies_to_every_source_and_item_modes_win() -> None:
    secret = {"secret": {"name": "creds", "items": [{"key": "user", "path": "a/user",
                                                     "mode": 0o400},
                                                    {"key": "pass", "path": "a/pass"}]}}
    downward = {"downwardAPI": {"items": [{"path": "name", "mode": 0o444,
                                           "fieldRef": {"fieldPath": "metadata.name"}}]}}
    assert content(secret, downward, TOKEN, default_mode=0o600, tokens={API_TOKEN: "t"}) == (
        Projection({"a/user": File(b"u", 0o400), "a/pass": File(b"p", 0o600),
                    "name": File(b"w-0", 0o444), "token": File(b"t", 0o600)}))


def test_without_default_mode_files_are_0644() -> None:
    assert content({"secret": {"name": "creds"}}) == Projection(
        {"pass": File(b"p", 0o644), "user": File(b"u", 0o644)})


def test_a_missing_object_is_the_kubelets_failed_mount_unless_optional() -> None:
    missing = {"configMap": {"name": "gone"}}
    assert content(missing) == Unavailable(FAILED + 'configmap "gone" not found')
    assert content({"configMap": {"name": "gone", "optional": True}}, CA) == Projection(
        {"ca.crt": File(b"CA", 0o644)})
    assert content({"secret": {"name": "gone", "optional": True}}) == Projection()


def test_a_missing_key_fails_unless_optional() -> None:
    listed = {"key": "nope", "path": "nope"}
    assert content({"secret": {"name": "creds", "items": [listed]}}) == Unavailable(
        FAILED + "references non-existent secret key: nope")
    assert content({"configMap": {"name": "kube-root-ca.crt", "items": [listed],
                                  "optional": True}}) == Projection()


def test_every_failing_source_is_reported_at_once() -> None:
    failure = TokenFailure('failed to fetch token: serviceaccounts "runner" not found')
    assert content({"configMap": {"name": "gone"}}, TOKEN, tokens={API_TOKEN: failure}) == (
        Unavailable(FAILED + '[configmap "gone" not found, failed to fetch token: '
                    'serviceaccounts "runner" not found]'))


def test_tokens_are_asked_per_audience_and_expiry_for_the_pods_account() -> None:
    vault = {"serviceAccountToken": {"audience": "vault", "path": "vault/token"}}
    tokens: dict[TokenRef, str | TokenFailure] = {
        TokenRef("default", "vault", 3600): "v", TokenRef("default", "", 3607): "k"}
    assert content(vault, TOKEN, tokens=tokens, account=None) == Projection(
        {"vault/token": File(b"v", 0o644), "token": File(b"k", 0o644)})


def test_without_requested_tokens_the_token_file_is_left_out() -> None:
    """Simulate mode: no process reads it, and the volume must not wait for it."""
    assert content(TOKEN, CA) == Projection({"ca.crt": File(b"CA", 0o644)})


def test_a_token_not_among_those_requested_fails() -> None:
    assert content(TOKEN, tokens={}) == Unavailable(
        FAILED + "failed to fetch token: not requested")


@pytest.mark.parametrize("source", [
    {"clusterTrustBundle": {"name": "bundle", "path": "ca.pem"}},
    {"podCertificate": {"signerName": "x", "keyType": "ED25519", "credentialBundlePath": "c"}},
])
def test_sources_the_local_node_cannot_provide_are_refused(source: dict[str, Any]) -> None:
    with pytest.raises(ContainerConfigError, match=r"volume v: projected \w+ sources are not "
                                                    "supported by the local node"):
        content(source)


def test_paths_are_checked_as_the_atomic_writer_does() -> None:
    with pytest.raises(ContainerConfigError, match="must be relative"):
        content({"serviceAccountToken": {"path": "../token"}}, tokens={})


def test_a_projected_volume_is_mounted_read_only() -> None:
    container = {"name": "main", "volumeMounts": [{"name": "v", "mountPath": "/var/run/x"}]}
    assert container_mounts(pod(TOKEN), container, {}) == [
        Mount("v", PurePosixPath("/var/run/x"), "", True)]


def test_the_objects_of_projected_sources_are_read() -> None:
    found = pod(CA, {"secret": {"name": "creds"}}, TOKEN, NAMESPACE)
    assert volume_references(found) == [SourceRef("configmap", "kube-root-ca.crt"),
                                        SourceRef("secret", "creds")]
