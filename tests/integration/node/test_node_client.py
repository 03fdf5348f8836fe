"""The node's client: it names itself `jobmachine-node` to the API server (whose audit log,
request metrics and managedFields name clients by their User-Agent)."""

from __future__ import annotations

from tests.integration.node.conftest import Cluster
from tests.integration.node.test_simulate import sim


def test_the_node_writes_as_jobmachine_node(simulated: Cluster) -> None:
    simulated.create(sim("named"))
    done = simulated.wait_phase("named", "Succeeded", "Failed")
    managers = {(entry["manager"], entry.get("subresource"))
                for entry in done["metadata"].get("managedFields") or ()}
    assert ("jobmachine-node", "status") in managers, managers
    node = simulated.api.sanitize_for_serialization(simulated.core.read_node("jobmachine-local"))
    assert "jobmachine-node" in {entry["manager"] for entry in node["metadata"]["managedFields"]}
