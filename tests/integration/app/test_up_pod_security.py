"""`jobmachine up` enforces Pod Security `baseline` in the default namespace unless told
otherwise, so a pod spec that asks for the host is refused before the local node runs it."""

from __future__ import annotations

from typing import Any

import pytest

from engine.app.up import UpOptions, running_local_server
from engine.kube.errors import ApiError
from engine.kube.resources import NAMESPACES, PODS


def privileged_pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox",
                                     "securityContext": {"privileged": True}}],
                     "volumes": [{"name": "root", "hostPath": {"path": "/"}}]}}


def test_the_default_namespace_enforces_baseline() -> None:
    with running_local_server(UpOptions(port=0, node_mode="simulate")) as (_, client):
        labels = client.get(NAMESPACES, "default")["metadata"]["labels"]
        assert labels["pod-security.kubernetes.io/enforce"] == "baseline"
        with pytest.raises(ApiError) as refused:
            client.create(PODS, privileged_pod("host"), "default")
        assert refused.value.status == 403
        assert str(refused.value) == (
            'pods "host" is forbidden: violates PodSecurity "baseline:latest": hostPath volumes '
            '(volume "root"), privileged (container "c" must not set '
            'securityContext.privileged=true)')


def test_privileged_turns_it_off() -> None:
    options = UpOptions(port=0, node_mode="simulate", pod_security="privileged")
    with running_local_server(options) as (_, client):
        created = client.create(PODS, privileged_pod("host"), "default")
        assert created["metadata"]["name"] == "host"
