"""Pods get their service account's credentials as kube-apiserver gives them, seen through the
official client: the kube-api-access volume and mounts, the opt-outs, the 403 for a missing
account, the `kube-root-ca.crt` ConfigMap, and the year-long kube-api-access token."""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from engine.cluster import running_apiserver
from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from tests.integration.apiserver.conftest import pod, raw
from tests.polling import eventually

MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
YEAR_S = 365 * 24 * 3600


def _stored(server: RunningApiServer, namespace: str, name: str) -> dict[str, Any]:
    """The pod as JSON (the client's models hide which fields were sent)."""
    stored: dict[str, Any] = raw(server, "GET", f"/api/v1/namespaces/{namespace}/pods/{name}"
                                 ).json()
    return stored


def _claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    padded = payload + "=" * (-len(payload) % 4)
    claims: dict[str, Any] = json.loads(base64.urlsafe_b64decode(padded))
    return claims


def test_a_pod_gets_the_kube_api_access_volume_and_mounts(
        server: RunningApiServer, core: client.CoreV1Api) -> None:
    body = pod("web")
    body["spec"]["initContainers"] = [{"name": "init", "image": "busybox"}]
    core.create_namespaced_pod("default", body)
    spec = _stored(server, "default", "web")["spec"]
    assert spec["serviceAccountName"] == "default" and spec["serviceAccount"] == "default"
    [volume] = spec["volumes"]
    assert re.fullmatch(r"kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}", volume["name"])
    assert volume["projected"] == {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt",
                       "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ]}
    mount = {"name": volume["name"], "readOnly": True, "mountPath": MOUNT_PATH}
    assert spec["containers"][0]["volumeMounts"] == [mount]
    assert spec["initContainers"][0]["volumeMounts"] == [mount]


def test_the_stored_pod_can_be_sent_back_and_patched(
        server: RunningApiServer, core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod("web"))
    stored = core.read_namespaced_pod("web", "default")
    stored.metadata.labels = {"app": "web"}
    replaced = core.replace_namespaced_pod("web", "default", stored)
    patched = core.patch_namespaced_pod("web", "default", {"metadata": {"labels": {"x": "y"}}})
    assert replaced.spec.volumes == patched.spec.volumes == stored.spec.volumes
    assert len(patched.spec.volumes) == 1 and patched.metadata.labels == {"app": "web", "x": "y"}


@pytest.mark.parametrize("where", ["pod", "account"])
def test_automount_false_mounts_nothing(
        server: RunningApiServer, core: client.CoreV1Api, where: str) -> None:
    core.create_namespaced_service_account("default", {
        "metadata": {"name": "quiet"},
        **({"automountServiceAccountToken": False} if where == "account" else {})})
    spec = {"serviceAccountName": "quiet",
            **({"automountServiceAccountToken": False} if where == "pod" else {})}
    core.create_namespaced_pod("default", pod("web", **spec))
    stored = _stored(server, "default", "web")["spec"]
    assert "volumes" not in stored and "volumeMounts" not in stored["containers"][0]
    assert stored["serviceAccount"] == "quiet"


def test_the_pod_choice_wins_over_the_account(
        server: RunningApiServer, core: client.CoreV1Api) -> None:
    core.create_namespaced_service_account("default", {
        "metadata": {"name": "quiet"}, "automountServiceAccountToken": False})
    core.create_namespaced_pod("default", pod("web", serviceAccountName="quiet",
                                              automountServiceAccountToken=True))
    assert len(_stored(server, "default", "web")["spec"]["volumes"]) == 1


def test_a_missing_account_is_403_as_upstream(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod("default", pod("web", serviceAccountName="ghost"))
    assert refused.value.status == 403
    assert json.loads(refused.value.body) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'pods "web" is forbidden: error looking up service account default/ghost: '
                   'serviceaccount "ghost" not found',
        "reason": "Forbidden", "details": {"name": "web", "kind": "pods"}, "code": 403,
    }


def test_an_explicit_mount_at_the_path_prevents_injection(
        server: RunningApiServer, core: client.CoreV1Api) -> None:
    body = pod("web", volumes=[{"name": "mine", "emptyDir": {}}])
    body["spec"]["containers"][0]["volumeMounts"] = [{"name": "mine", "mountPath": MOUNT_PATH}]
    body["spec"]["containers"].append({"name": "side", "image": "busybox"})
    core.create_namespaced_pod("default", body)
    spec = _stored(server, "default", "web")["spec"]
    assert spec["containers"][0]["volumeMounts"] == [{"name": "mine", "mountPath": MOUNT_PATH}]
    [_, injected] = spec["volumes"]
    assert spec["containers"][1]["volumeMounts"] == [
        {"name": injected["name"], "readOnly": True, "mountPath": MOUNT_PATH}]


def test_a_pod_right_after_its_namespace_is_admitted(core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "fresh"}})
    created = core.create_namespaced_pod("fresh", pod("web"))
    assert created.spec.service_account_name == "default"
    eventually(lambda: core.read_namespaced_service_account("default", "fresh"))


def test_a_new_namespace_gets_the_root_ca_and_keeps_it(core: client.CoreV1Api) -> None:
    with running_apiserver(tls=True) as server:
        assert server.ca_file is not None
        ca = server.ca_file.read_text()
        api = config.new_client_from_config(config_file=str(server.kubeconfig))
        try:
            tls_core = client.CoreV1Api(api)
            tls_core.create_namespace({"metadata": {"name": "team"}})

            def published() -> client.V1ConfigMap | None:
                try:
                    return tls_core.read_namespaced_config_map("kube-root-ca.crt", "team")
                except ApiException:
                    return None

            first = eventually(published)
            assert first.data == {"ca.crt": ca}
            assert first.metadata.annotations["kubernetes.io/description"].startswith(
                "Contains a CA bundle that can be used to verify the kube-apiserver")
            tls_core.delete_namespaced_config_map("kube-root-ca.crt", "team")
            again = eventually(lambda: (cm := published()) and cm.metadata.uid
                               != first.metadata.uid and cm)
            assert again.data == {"ca.crt": ca}
            tls_core.patch_namespaced_config_map("kube-root-ca.crt", "team",
                                                 {"data": {"ca.crt": "forged"}})
            eventually(lambda: (cm := published()) is not None and cm.data == {"ca.crt": ca})
        finally:
            api.close()


def test_without_tls_the_root_ca_is_published_empty(core: client.CoreV1Api) -> None:
    def published() -> client.V1ConfigMap | None:
        try:
            return core.read_namespaced_config_map("kube-root-ca.crt", "default")
        except ApiException:
            return None
    assert eventually(published).data == {"ca.crt": ""}


@pytest.fixture
def robot_pod(core: client.CoreV1Api) -> client.V1Pod:
    created: client.V1Pod = core.create_namespaced_pod("default", pod("web"))
    return created


def _token_request(core: client.CoreV1Api, bound: client.V1Pod, seconds: int
                   ) -> client.AuthenticationV1TokenRequest:
    answer: client.AuthenticationV1TokenRequest = core.create_namespaced_service_account_token(
        "default", "default", {"spec": {"expirationSeconds": seconds, "boundObjectRef": {
            "kind": "Pod", "apiVersion": "v1", "name": bound.metadata.name,
            "uid": bound.metadata.uid}}})
    return answer


@pytest.fixture
def as_token(server: RunningApiServer) -> Iterator[Any]:
    opened: list[client.ApiClient] = []

    def open_with(token: str) -> client.ApiClient:
        configuration = client.Configuration()
        configuration.host = server.url
        configuration.api_key = {"authorization": f"Bearer {token}"}
        opened.append(client.ApiClient(configuration))
        return opened[-1]
    yield open_with
    for api in opened:
        api.close()


def test_the_kube_api_access_token_is_valid_for_a_year(
        core: client.CoreV1Api, robot_pod: client.V1Pod, as_token: Any) -> None:
    before = time.time()
    answer = _token_request(core, robot_pod, 3607)
    assert answer.spec.expiration_seconds == 3607
    said = answer.status.expiration_timestamp.timestamp()
    assert before + 3607 - 2 <= said <= time.time() + 3607 + 1
    claims = _claims(answer.status.token)
    assert claims["exp"] - claims["iat"] == YEAR_S
    assert claims["kubernetes.io"]["warnafter"] == claims["iat"] + 3607
    assert claims["kubernetes.io"]["pod"]["name"] == "web"
    review = client.AuthenticationV1Api(as_token(answer.status.token)).create_self_subject_review(
        {})
    assert review.status.user_info.username == "system:serviceaccount:default:default"


@pytest.mark.parametrize("spec", [{"expirationSeconds": 3600}, {"expirationSeconds": 3607,
                                                                 "audiences": ["vault"]}])
def test_other_tokens_are_not_extended(core: client.CoreV1Api, robot_pod: client.V1Pod,
                                       spec: dict[str, Any]) -> None:
    answer = core.create_namespaced_service_account_token("default", "default", {"spec": {
        **spec, "boundObjectRef": {"kind": "Pod", "apiVersion": "v1",
                                   "name": robot_pod.metadata.name}}})
    claims = _claims(answer.status.token)
    assert claims["exp"] - claims["iat"] == spec["expirationSeconds"]
    assert "warnafter" not in claims["kubernetes.io"]


def test_an_unbound_3607_token_is_not_extended(core: client.CoreV1Api) -> None:
    answer = core.create_namespaced_service_account_token(
        "default", "default", {"spec": {"expirationSeconds": 3607}})
    claims = _claims(answer.status.token)
    assert claims["exp"] - claims["iat"] == 3607
