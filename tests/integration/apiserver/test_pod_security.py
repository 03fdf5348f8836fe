"""Pod Security admission over HTTP, through the official client: a labelled namespace
refuses a privileged pod with a hostPath of `/` (403, upstream's message), warns through
the `Warning` header, admits a compliant pod, refuses invalid labels (422) and warns about
existing pods when its enforce level tightens; Jobs are warned about, not refused."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from tests.integration.apiserver.conftest import pod, raw

ENFORCE = "pod-security.kubernetes.io/enforce"
WARN = "pod-security.kubernetes.io/warn"


def _namespace(core: client.CoreV1Api, name: str, labels: dict[str, str]) -> None:
    core.create_namespace({"metadata": {"name": name, "labels": labels}})


def _root_pod(name: str = "root") -> dict[str, Any]:
    body = pod(name, volumes=[{"name": "host", "hostPath": {"path": "/"}}])
    body["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    body["spec"]["containers"][0]["volumeMounts"] = [{"name": "host", "mountPath": "/host"}]
    return body


def _restricted_pod(name: str) -> dict[str, Any]:
    body = pod(name, securityContext={"runAsNonRoot": True,
                                      "seccompProfile": {"type": "RuntimeDefault"}})
    body["spec"]["containers"][0]["securityContext"] = {
        "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    return body


def _warnings(headers: Any) -> list[str]:
    """The Warning headers' texts (`299 - "text"`, the text Go-quoted)."""
    values = headers.getlist("Warning") if hasattr(headers, "getlist") else (
        headers.get_all("Warning") or [])
    return [json.loads(value.removeprefix("299 - ")) for value in values]


def test_a_privileged_host_path_pod_is_refused_in_a_baseline_namespace(
        server: RunningApiServer, core: client.CoreV1Api) -> None:
    _namespace(core, "team", {ENFORCE: "baseline"})
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod("team", _root_pod())
    assert refused.value.status == 403
    status = json.loads(refused.value.body)
    assert status["reason"] == "Forbidden"
    assert status["message"] == (
        'pods "root" is forbidden: violates PodSecurity "baseline:latest": '
        'hostPath volumes (volume "host"), '
        'privileged (container "main" must not set securityContext.privileged=true)'
    )
    assert status["details"] == {"name": "root", "kind": "pods"}
    assert core.list_namespaced_pod("team").items == []


def test_the_same_pod_is_admitted_without_a_label(
        server: RunningApiServer, core: client.CoreV1Api) -> None:
    _namespace(core, "open", {})
    _, code, headers = core.create_namespaced_pod_with_http_info("open", _root_pod())
    assert code == 201 and _warnings(headers) == []


def test_warn_sends_a_warning_header_and_creates_the_pod(
        server: RunningApiServer, core: client.CoreV1Api) -> None:
    _namespace(core, "team", {ENFORCE: "baseline", WARN: "restricted"})
    created, code, headers = core.create_namespaced_pod_with_http_info("team", pod("web"))
    assert code == 201 and created.metadata.name == "web"
    assert _warnings(headers) == [
        'would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false '
        '(container "main" must set securityContext.allowPrivilegeEscalation=false), '
        'unrestricted capabilities (container "main" must set '
        'securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container '
        '"main" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container '
        '"main" must set securityContext.seccompProfile.type to "RuntimeDefault" or '
        '"Localhost")'
    ]
    # As sent on the wire: one header, Go-quoted.
    response = raw(server, "POST", "/api/v1/namespaces/team/pods", pod("web2"))
    assert response.status == 201
    assert response.headers.get_all("Warning")[0].startswith(
        '299 - "would violate PodSecurity \\"restricted:latest\\": allowPrivilegeEscalation')


def test_a_compliant_pod_is_created_in_a_restricted_namespace(
        server: RunningApiServer, core: client.CoreV1Api) -> None:
    _namespace(core, "tight", {ENFORCE: "restricted"})
    created, code, headers = core.create_namespaced_pod_with_http_info(
        "tight", _restricted_pod("ok"))
    assert code == 201 and _warnings(headers) == []
    # The service account volume the server adds is a projected one, which restricted allows.
    assert created.spec.volumes[0].projected is not None
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod("tight", pod("plain"))
    assert refused.value.status == 403
    assert 'violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false' in (
        json.loads(refused.value.body)["message"])


def test_invalid_labels_are_refused(server: RunningApiServer, core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as refused:
        _namespace(core, "team", {ENFORCE: "strict"})
    assert refused.value.status == 422
    assert json.loads(refused.value.body)["message"] == (
        'Namespace "team" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: '
        'Invalid value: "strict": must be one of privileged, baseline, restricted'
    )


def test_tightening_a_namespace_warns_about_its_existing_pods(
        server: RunningApiServer, core: client.CoreV1Api) -> None:
    _namespace(core, "team", {})
    core.create_namespaced_pod("team", _root_pod("root-a"))
    core.create_namespaced_pod("team", _root_pod("root-b"))
    core.create_namespaced_pod("team", _restricted_pod("fine"))
    _, code, headers = core.patch_namespace_with_http_info(
        "team", {"metadata": {"labels": {ENFORCE: "baseline"}}})
    assert code == 200
    assert _warnings(headers) == [
        'existing pods in namespace "team" violate the new PodSecurity enforce level '
        '"baseline:latest"',
        "root-a (and 1 other pod): hostPath volumes, privileged",
    ]
    assert core.read_namespace("team").metadata.labels[ENFORCE] == "baseline"
    # The existing pods stay; new ones like them are refused.
    assert len(core.list_namespaced_pod("team").items) == 3
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod("team", _root_pod("root-c"))
    assert refused.value.status == 403


def test_a_job_with_a_privileged_template_is_warned_about_not_refused(
        server: RunningApiServer, api: client.ApiClient, core: client.CoreV1Api) -> None:
    _namespace(core, "team", {ENFORCE: "baseline"})
    template = _root_pod()
    template["spec"]["restartPolicy"] = "Never"
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
           "spec": {"template": {"spec": template["spec"]}}}
    _, code, headers = client.BatchV1Api(api).create_namespaced_job_with_http_info("team", job)
    assert code == 201
    assert _warnings(headers) == [
        'would violate PodSecurity "baseline:latest": hostPath volumes (volume "host"), '
        'privileged (container "main" must not set securityContext.privileged=true)'
    ]
