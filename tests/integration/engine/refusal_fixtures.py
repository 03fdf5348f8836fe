"""Module-scoped fixtures of the refusal tests: an embedded server whose chosen requests are
answered as a real kube-apiserver refused them (`Refusals`), an engine against it, and an
admin client. A test module imports the four by name to use them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engine.cluster.apiserver.endpoints.serve import RunningApiServer, ServerOptions
from engine.kube.client import KubeClient
from tests.integration.engine.helpers import FAST, EngineRun, running_engineless, start_engine
from tests.integration.refusing import Refusals


@pytest.fixture(scope="module")
def refusals() -> Refusals:
    return Refusals()


@pytest.fixture(scope="module")
def server(refusals: Refusals) -> Iterator[RunningApiServer]:
    with running_engineless(ServerOptions(faults=refusals)) as running:
        yield running


@pytest.fixture(scope="module")
def engine(server: RunningApiServer) -> Iterator[EngineRun]:
    run = start_engine(KubeClient.from_kubeconfig(server.kubeconfig), FAST)
    yield run
    run.stop()


@pytest.fixture(scope="module")
def admin(server: RunningApiServer) -> Iterator[KubeClient]:
    kube = KubeClient.from_kubeconfig(server.kubeconfig)
    yield kube
    kube.close()
