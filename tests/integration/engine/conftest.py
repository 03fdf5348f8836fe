"""Fixtures for the engine's integration tests: `jobmachine up` in simulate mode, per module.

One local cluster (API server, simulated node, engine) serves a whole test module; each
test gets its own namespace, so tests never see each other's jobs, pods or events.
Restarts are fast (the engine's re-creation back-off and the node's crash-loop back-off
both 50 ms doubling to 0.5 s) so a test takes seconds.
Modules that run engines themselves (restarts, leader election) use `engineless` instead.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client as k8s

from engine.app.up import LocalCluster, UpOptions, running_local_cluster
from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from engine.kube.client import KubeClient
from tests.integration.engine.helpers import (
    FAST,
    FAST_NODE,
    PYTORCHJOBS,
    TRANSITIONS,
    get_job,
    new_namespace,
    official_client,
    running_engineless,
)


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    options = UpOptions(port=0, node_mode="simulate", settings=FAST, restart_backoff=FAST_NODE)
    with running_local_cluster(options) as up:
        up.engine.add_transition_listener(TRANSITIONS)
        yield up


@pytest.fixture(scope="module")
def engineless() -> Iterator[RunningApiServer]:
    """The API server with the CRDs and a simulated node, but no engine: tests run their own."""
    with running_engineless() as server:
        yield server


@pytest.fixture(scope="module")
def client(cluster: LocalCluster) -> Iterator[KubeClient]:
    """The tests' own client: `cluster.client.request_count` then counts the engine's alone."""
    kube = KubeClient.from_kubeconfig(cluster.server.kubeconfig)
    yield kube
    kube.close()


@pytest.fixture
def ns(client: KubeClient) -> str:
    return new_namespace(client)


@pytest.fixture
def held(client: KubeClient, ns: str) -> Iterator[str]:
    """The name of a job the test gives the HOLD finalizer; released afterwards so it can go."""
    yield "held"
    if get_job(client, ns, "held") is not None:
        client.patch(PYTORCHJOBS, "held", {"metadata": {"finalizers": None}}, namespace=ns)


@pytest.fixture
def batch(cluster: LocalCluster) -> Iterator[k8s.BatchV1Api]:
    """The official client's batch API, against the module's `jobmachine up`."""
    with official_client(cluster.server.kubeconfig) as api:
        yield k8s.BatchV1Api(api)


@pytest.fixture
def apps(cluster: LocalCluster) -> Iterator[k8s.AppsV1Api]:
    """The official client's apps API (Deployments, ReplicaSets), against the module's up."""
    with official_client(cluster.server.kubeconfig) as api:
        yield k8s.AppsV1Api(api)
