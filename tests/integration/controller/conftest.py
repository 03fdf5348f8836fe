"""Fixtures shared by the controller's integration tests: a client and a fresh namespace.

Each test module starts its own `server` (some need a small watch history); a module
may override `client` too (test_watch counts the requests it sends).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from engine.kube.client import KubeClient
from engine.kube.resources import NAMESPACES


@pytest.fixture
def client(server: RunningApiServer) -> Iterator[KubeClient]:
    kube = KubeClient.from_kubeconfig(server.kubeconfig)
    yield kube
    kube.close()


@pytest.fixture
def ns(client: KubeClient) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    client.create(NAMESPACES, {"metadata": {"name": name}})
    return name
