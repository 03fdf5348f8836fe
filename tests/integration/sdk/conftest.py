"""Fixtures for the SDK's integration tests: one `jobmachine up` in process mode for them all.

Pods run as local processes, so a replica's `command` is a tiny Python program whose
output is its log. Each test gets its own namespace and a `JobClient` in it, given
nothing but the cluster's kubeconfig, as a user's program would be. The example kind
ShardedJob (examples/custom-kind) is installed at run time, once, by the tests that
need it, and removed when they are done.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
import yaml

from engine.app.up import LocalCluster, UpOptions, running_local_cluster
from engine.controller.machines.install import wait_until_served
from engine.controller.machines.served import CRDS, resource_of_crd
from engine.kube.client import KubeClient
from engine.kube.errors import NotFound
from engine.kube.resources import STATE_MACHINES
from engine.sdk import JobClient
from tests.integration.engine.custom_kinds import get_cluster_obj, wait_for_verdict
from tests.integration.engine.helpers import FAST, FAST_NODE, WAIT_S, new_namespace, wait_for
from tests.kinds import REPO

CUSTOM_KIND = REPO / "examples" / "custom-kind"


@pytest.fixture(scope="package")
def cluster() -> Iterator[LocalCluster]:
    options = UpOptions(port=0, node_mode="process", settings=FAST, restart_backoff=FAST_NODE)
    with running_local_cluster(options) as up:
        yield up


@pytest.fixture(scope="package")
def client(cluster: LocalCluster) -> Iterator[KubeClient]:
    """The tests' own client, for what a user would do with kubectl."""
    kube = KubeClient.from_kubeconfig(cluster.server.kubeconfig)
    yield kube
    kube.close()


@pytest.fixture
def ns(client: KubeClient) -> str:
    return new_namespace(client)


@pytest.fixture
def jobs(cluster: LocalCluster, ns: str) -> Iterator[JobClient]:
    """A JobClient in the test's namespace, made from the kubeconfig alone."""
    with JobClient(cluster.server.kubeconfig, namespace=ns) as job_client:
        yield job_client


@pytest.fixture(scope="package")
def sharded_kind(client: KubeClient) -> Iterator[str]:
    """ShardedJob, added while the engine runs (its CRD, then its machine); its kind name."""
    crd = yaml.safe_load((CUSTOM_KIND / "shardedjob-crd.yaml").read_text())
    machine = yaml.safe_load((CUSTOM_KIND / "shardedjob-machine.yaml").read_text())
    client.create(CRDS, crd)
    try:
        wait_until_served(client, [resource_of_crd(crd)], timeout_s=WAIT_S)
        client.create(STATE_MACHINES, machine)
        wait_for_verdict(client, machine["metadata"]["name"], accepted="Valid",
                         governing="Governing")
        yield str(crd["spec"]["names"]["kind"])
    finally:
        for resource, name in ((CRDS, crd["metadata"]["name"]),
                               (STATE_MACHINES, machine["metadata"]["name"])):
            with contextlib.suppress(NotFound):
                client.delete(resource, name)
        wait_for(lambda: get_cluster_obj(client, CRDS, crd["metadata"]["name"]),
                 lambda found: found is None, what="the ShardedJob CRD deleted")
