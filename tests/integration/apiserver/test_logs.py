"""The pod log subresource, served from the files the node writes."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from tests.integration.apiserver.conftest import pod


def _write(server: RunningApiServer, name: str, text: str) -> None:
    directory = server.logs_dir / "default" / "a"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text(text)


def test_log_of_a_container_not_started_is_400(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod("a"))
    with pytest.raises(client.ApiException) as error:
        core.read_namespaced_pod_log("a", "default")
    assert error.value.status == 400
    message = json.loads(error.value.body)["message"]
    assert message == 'container "main" in pod "a" is waiting to start: ContainerCreating'


def test_log_tail_and_previous(server: RunningApiServer, core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod("a"))
    _write(server, "main.log", "one\ntwo\nthree\n")
    _write(server, "main.previous.log", "before\n")
    assert core.read_namespaced_pod_log("a", "default") == "one\ntwo\nthree\n"
    assert core.read_namespaced_pod_log("a", "default", tail_lines=2) == "two\nthree\n"
    assert core.read_namespaced_pod_log("a", "default", previous=True) == "before\n"


def test_container_must_be_named_when_there_are_several(
    server: RunningApiServer, core: client.CoreV1Api
) -> None:
    body = pod("a")
    body["spec"]["containers"].append({"name": "side", "image": "busybox"})
    core.create_namespaced_pod("default", body)
    _write(server, "side.log", "side says hi\n")
    with pytest.raises(client.ApiException) as error:
        core.read_namespaced_pod_log("a", "default")
    assert "a container name must be specified" in json.loads(error.value.body)["message"]
    assert core.read_namespaced_pod_log("a", "default", container="side") == "side says hi\n"


def test_follow_ends_when_the_container_terminates(
    server: RunningApiServer, core: client.CoreV1Api
) -> None:
    core.create_namespaced_pod("default", pod("a"))
    _write(server, "main.log", "done\n")
    terminated = {
        "status": {
            "containerStatuses": [
                {
                    "name": "main",
                    "ready": False,
                    "restartCount": 0,
                    "image": "busybox",
                    "imageID": "",
                    "state": {"terminated": {"exitCode": 0}},
                }
            ]
        }
    }
    core.patch_namespaced_pod_status("a", "default", terminated)
    assert core.read_namespaced_pod_log("a", "default", follow=True) == "done\n"
