"""The local node against a server that faults: it keeps going, as a kubelet does.

A 409 on a pod status write is not the pod being replaced unless a fresh read says so:
the node writes status with a uid precondition, so a pod deleted and created again under
its name answers 409, but a 409 can also be a passing conflict. The node must keep the
pod it runs and write its status once the server takes it, instead of abandoning it
half-way (it stayed Pending forever). And a node that starts while the server refuses
its registration (429, 5xx) tries again instead of failing to start.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config

from engine.cluster import running_apiserver
from engine.cluster.apiserver.endpoints.faults import FaultInjector, FaultPlan, FaultRule
from engine.cluster.apiserver.endpoints.serve import ServerOptions
from engine.cluster.node import running_node
from tests.integration.node.conftest import FAST_BACKOFF, Cluster
from tests.integration.node.test_simulate import sim
from tests.polling import eventually


@pytest.fixture
def conflicts() -> FaultInjector:
    return FaultInjector(FaultPlan((FaultRule("conflict", verbs=("patch",),
                                              resources=("pods/status",)),), seed=3))


@pytest.fixture
def faulty(conflicts: FaultInjector, tmp_path: Path) -> Iterator[Cluster]:
    with running_apiserver(tls=True, options=ServerOptions(faults=conflicts)) as server:
        api = config.new_client_from_config(config_file=str(server.kubeconfig))
        try:
            with running_node(server, mode="simulate", state_dir=tmp_path / "node",
                              restart_backoff=FAST_BACKOFF) as node:
                yield Cluster(server, client.CoreV1Api(api), api, node, tmp_path / "node")
        finally:
            api.close()


def test_the_node_keeps_writing_through_conflicts(faulty: Cluster,
                                                  conflicts: FaultInjector) -> None:
    faulty.create(sim("steady", codes="0"))
    eventually(lambda: sum(conflicts.injected.values()) >= 2, timeout=20)
    assert faulty.read("steady")["status"].get("phase") == "Pending"
    conflicts.enabled = False
    done = faulty.wait_phase("steady", "Succeeded", "Failed", timeout=30)
    assert done["status"]["phase"] == "Succeeded"


def test_the_node_registers_once_the_server_takes_it(tmp_path: Path) -> None:
    busy = FaultInjector(FaultPlan((FaultRule("throttle", verbs=("create",),
                                              resources=("nodes",)),), seed=1))
    with running_apiserver(tls=True, options=ServerOptions(faults=busy)) as server:
        def calm_down() -> None:
            eventually(lambda: sum(busy.injected.values()) >= 2, timeout=20)
            busy.enabled = False

        calming = threading.Thread(target=calm_down, daemon=True)
        calming.start()
        with running_node(server, mode="simulate", state_dir=tmp_path / "node") as node:
            api = config.new_client_from_config(config_file=str(server.kubeconfig))
            try:
                registered = client.CoreV1Api(api).read_node(node.name)
            finally:
                api.close()
        calming.join(20)
    assert registered.metadata.name == "jobmachine-local"
    assert sum(busy.injected.values()) >= 2
