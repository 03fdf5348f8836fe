"""The ServiceAccount admission of a pod being created, as kube-apiserver's plugin admits it:
the account set (default unless named; a named one must exist), its token and CA mounted
in every container that lacks the path (an existing kube-api-access volume reused), the
pod's or else the account's automount choice, the account's pull secrets when the pod has
none; and a mirror pod refused any account, secret or token projection."""

from __future__ import annotations

from typing import Any

import pytest

from engine.cluster.apiserver.admission.service_account_admission import (
    MIRROR_ANNOTATION,
    TOKEN_MOUNT_PATH,
    admit_pod,
    token_volume_source,
)
from engine.cluster.apiserver.errors import ApiError

ACCOUNTS = {("team", "default"): {"metadata": {"name": "default"}},
            ("team", "builder"): {"metadata": {"name": "builder"},
                                  "imagePullSecrets": [{"name": "registry"}],
                                  "automountServiceAccountToken": False}}
MOUNT = {"name": "kube-api-access-abcde", "readOnly": True, "mountPath": TOKEN_MOUNT_PATH}


def accounts(namespace: str, name: str) -> dict[str, Any] | None:
    return ACCOUNTS.get((namespace, name))


def pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "web"},
            "spec": {"containers": [{"name": "main", "image": "i"}], **spec}}


def admitted(body: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = admit_pod(body, accounts, namespace="team", name="web",
                                     suffix=lambda: "abcde")["spec"]
    return spec


def refusal(body: dict[str, Any], name: str = "web") -> tuple[int, str]:
    with pytest.raises(ApiError) as error:
        admit_pod(body, accounts, namespace="team", name=name)
    return error.value.code, error.value.message


def test_a_pod_gets_the_default_account_and_its_token_mounted() -> None:
    spec = admitted(pod(initContainers=[{"name": "setup", "image": "i"}]))
    assert (spec["serviceAccountName"], spec["serviceAccount"]) == ("default", "default")
    assert spec["containers"][0]["volumeMounts"] == [MOUNT]
    assert spec["initContainers"][0]["volumeMounts"] == [MOUNT]
    assert spec["volumes"] == [{"name": "kube-api-access-abcde",
                                "projected": token_volume_source()}]


def test_a_container_that_mounts_the_token_path_itself_is_left_alone() -> None:
    own = {"name": "own", "mountPath": TOKEN_MOUNT_PATH}
    spec = admitted(pod(containers=[{"name": "main", "image": "i", "volumeMounts": [own]}]))
    assert spec["containers"][0]["volumeMounts"] == [own]
    assert "volumes" not in spec


def test_an_existing_kube_api_access_volume_is_reused() -> None:
    volume = {"name": "kube-api-access-kept", "projected": {"sources": []}}
    spec = admitted(pod(volumes=[volume]))
    assert spec["volumes"] == [volume]
    assert spec["containers"][0]["volumeMounts"][0]["name"] == "kube-api-access-kept"


def test_the_pods_automount_choice_wins_over_the_accounts() -> None:
    assert "volumes" not in admitted(pod(serviceAccountName="builder"))
    mounted = admitted(pod(serviceAccountName="builder", automountServiceAccountToken=True))
    assert mounted["containers"][0]["volumeMounts"] == [MOUNT]
    assert "volumes" not in admitted(pod(automountServiceAccountToken=False))


def test_the_accounts_pull_secrets_apply_only_to_a_pod_without_its_own() -> None:
    assert admitted(pod(serviceAccountName="builder"))["imagePullSecrets"] == [
        {"name": "registry"}]
    own = [{"name": "mine"}]
    assert admitted(pod(serviceAccountName="builder",
                        imagePullSecrets=own))["imagePullSecrets"] == own


def test_a_named_account_must_exist_and_the_pod_is_named_as_sent() -> None:
    assert refusal(pod(serviceAccountName="ghost"), name="web-") == (
        403, 'pods "web-" is forbidden: error looking up service account team/ghost: '
             'serviceaccount "ghost" not found')


def test_a_missing_default_account_is_no_refusal() -> None:
    spec = admit_pod(pod(), lambda namespace, name: None, namespace="fresh", name="web",
                     suffix=lambda: "abcde")["spec"]
    assert spec["serviceAccountName"] == "default"


def mirror(**spec: Any) -> dict[str, Any]:
    body = pod(**spec)
    body["metadata"]["annotations"] = {MIRROR_ANNOTATION: "hash"}
    return body


def test_a_mirror_pod_is_admitted_untouched() -> None:
    body = mirror()
    assert admit_pod(body, accounts, namespace="team", name="web") is body


@pytest.mark.parametrize(("spec", "why"), [
    ({"serviceAccountName": "default"}, "a mirror pod may not reference service accounts"),
    ({"imagePullSecrets": [{"name": "s"}]}, "a mirror pod may not reference secrets"),
    ({"containers": [{"name": "c", "envFrom": [{"secretRef": {"name": "s"}}]}]},
     "a mirror pod may not reference secrets"),
    ({"containers": [{"name": "c", "env": [{"name": "E", "valueFrom": {
        "secretKeyRef": {"name": "s", "key": "k"}}}]}]},
     "a mirror pod may not reference secrets"),
    ({"volumes": [{"name": "v", "secret": {"secretName": "s"}}]},
     "a mirror pod may not reference secrets"),
    ({"volumes": [{"name": "v", "projected": {"sources": [{"secret": {"name": "s"}}]}}]},
     "a mirror pod may not reference secrets"),
    ({"volumes": [{"name": "v", "projected": {"sources": [
        {"serviceAccountToken": {"path": "t"}}]}}]},
     "a mirror pod may not use ServiceAccountToken volume projections"),
])
def test_a_mirror_pod_may_not_reference_what_nothing_would_provide(
    spec: dict[str, Any], why: str
) -> None:
    assert refusal(mirror(**spec)) == (403, f'pods "web" is forbidden: {why}')
