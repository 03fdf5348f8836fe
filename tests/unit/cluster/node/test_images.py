"""The images the local node runs as a process when a container gives no command, matched by
repository whatever the registry, mirror path, tag or digest."""

from __future__ import annotations

import sys

import pytest

from engine.cluster.node.config.env import ContainerConfigError, command_line
from engine.cluster.node.runtime.images import entrypoint, repository

DELIVERY = [sys.executable, "-m", "engine.cluster.node.runtime.kubectl_delivery"]


@pytest.mark.parametrize(("image", "expected"), [
    ("mpioperator/kubectl-delivery", "mpioperator/kubectl-delivery"),
    ("mpioperator/kubectl-delivery:v0.3.0", "mpioperator/kubectl-delivery"),
    ("docker.io/mpioperator/kubectl-delivery:latest", "mpioperator/kubectl-delivery"),
    ("localhost:5000/mpioperator/kubectl-delivery@sha256:abc", "mpioperator/kubectl-delivery"),
    ("registry:5000/kubeflow/kubectl-delivery:1", "kubeflow/kubectl-delivery"),
    ("docker.io/library/busybox:1.36", "busybox"),
    ("busybox", "busybox"),
])
def test_the_repository_drops_registry_tag_and_digest(image: str, expected: str) -> None:
    assert repository(image) == expected


@pytest.mark.parametrize("image", [
    "mpioperator/kubectl-delivery:latest",
    "ghcr.io/mirror/mpioperator/kubectl-delivery:v1",
    "kubeflow/kubectl-delivery:latest",
])
def test_kubectl_delivery_runs_the_nodes_own_program(image: str) -> None:
    assert entrypoint(image) == DELIVERY


@pytest.mark.parametrize("image", ["busybox", "mpioperator/kubectl-delivery-fork",
                                   "other/kubectl-delivery", "mpioperator/kubectl"])
def test_other_images_are_unknown(image: str) -> None:
    assert entrypoint(image) is None


def test_a_known_image_without_command_runs_its_entrypoint_with_the_args() -> None:
    container = {"name": "d", "image": "mpioperator/kubectl-delivery", "args": ["$(X)"]}
    assert command_line(container, {"X": "x"}) == [*DELIVERY, "x"]
    own = {**container, "command": ["sh", "-c", "true"]}
    assert command_line(own, {}) == ["sh", "-c", "true", "$(X)"]


def test_an_unknown_image_without_command_names_the_image() -> None:
    with pytest.raises(ContainerConfigError, match="does not know how to run image 'busybox:1'"
                                                   r".*needs a command") as caught:
        command_line({"name": "main", "image": "busybox:1"}, {})
    assert caught.value.reason == "NoCommand"
