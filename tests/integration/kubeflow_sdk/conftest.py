"""One `jobmachine up` in simulate mode per test module, as a user starts it: the Kubeflow
SDK finds Trainer's runtimes and its ConfigMap there because `up` applies them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engine.app.up import LocalCluster, UpOptions, running_local_cluster
from engine.cluster.node import Capacity
from tests.integration.engine.helpers import FAST, FAST_NODE
from tests.integration.kubeflow_sdk.support import sdk  # noqa: F401 (needs_sdk's fixture)


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    # Room for a few nodes that each ask for a CPU, whatever this machine has.
    options = UpOptions(port=0, node_mode="simulate", settings=FAST, restart_backoff=FAST_NODE,
                        node_capacity=Capacity.parse("cpu=16,memory=64Gi"))
    with running_local_cluster(options) as up:
        yield up
