"""The local node as a kubelet shows itself: the Node it registers (labels, capacity equal
to allocatable, Ready and no pressure, its addresses and version) and the Lease in
kube-node-lease renewed at each heartbeat, made (owned by the Node) when missing and left
for the next beat when made meanwhile."""

from __future__ import annotations

import copy
from typing import Any

from engine.cluster.node.lease import DURATION_S, NAMESPACE, renew_lease
from engine.cluster.node.registration import conditions, node_object
from engine.cluster.node.scheduling.capacity import Capacity
from engine.kube.errors import AlreadyExists, NotFound
from engine.kube.resources import LEASES, Resource

NOW = "2026-11-30T12:00:00Z"
NODE = {"metadata": {"name": "local", "uid": "node-uid"}}


def test_the_node_is_ready_with_no_pressure_since_it_registered() -> None:
    found = {c["type"]: c for c in conditions(heartbeat=NOW, since="2026-11-30T11:00:00Z")}
    assert {kind: c["status"] for kind, c in found.items()} == {
        "MemoryPressure": "False", "DiskPressure": "False", "PIDPressure": "False",
        "Ready": "True"}
    assert found["Ready"]["reason"] == "KubeletReady"
    assert {c["lastHeartbeatTime"] for c in found.values()} == {NOW}
    assert {c["lastTransitionTime"] for c in found.values()} == {"2026-11-30T11:00:00Z"}


def test_the_node_object_carries_its_capacity_labels_and_version() -> None:
    capacity = Capacity({"cpu": "4", "memory": "8Gi", "pods": "110"})
    node = node_object("local", mode="simulate", version="v1.32.4", now=NOW,
                       capacity=capacity)
    labels = node["metadata"]["labels"]
    assert (labels["kubernetes.io/hostname"], labels["kubernetes.io/os"],
            labels["jobmachine.dev/node-mode"]) == ("local", "linux", "simulate")
    status = node["status"]
    assert status["capacity"] == status["allocatable"] == {"cpu": "4", "memory": "8Gi",
                                                           "pods": "110"}
    assert {"type": "Hostname", "address": "local"} in status["addresses"]
    assert status["nodeInfo"]["kubeletVersion"] == "v1.32.4"
    assert status["nodeInfo"]["containerRuntimeVersion"] == "jobmachine-simulate://0"
    assert status["nodeInfo"]["architecture"] == labels["kubernetes.io/arch"]


class FakeClient:
    """Leases by name; every call; the create answered AlreadyExists when `raced`."""

    def __init__(self, leases: dict[str, dict[str, Any]] | None = None, *,
                 raced: bool = False) -> None:
        self.leases = copy.deepcopy(leases or {})
        self.raced = raced
        self.calls: list[tuple[Any, ...]] = []

    def patch(self, res: Resource, name: str, body: Any, *,
              namespace: str | None = None) -> dict[str, Any]:
        self.calls.append(("patch", res.kind, namespace, name))
        if name not in self.leases:
            raise NotFound(404, "NotFound", f"{name} not found", {})
        self.leases[name]["spec"].update(body["spec"])
        return self.leases[name]

    def create(self, res: Resource, body: dict[str, Any], namespace: str | None = None
               ) -> dict[str, Any]:
        self.calls.append(("create", res.kind, namespace, body["metadata"]["name"]))
        if self.raced:
            raise AlreadyExists(409, "AlreadyExists", "already exists", {})
        self.leases[body["metadata"]["name"]] = body
        return body


def test_an_existing_lease_is_renewed_in_place() -> None:
    client = FakeClient({"local": {"spec": {"renewTime": "old"}}})
    renew_lease(client, NODE)  # type: ignore[arg-type]
    assert client.calls == [("patch", "Lease", NAMESPACE, "local")]
    spec = client.leases["local"]["spec"]
    assert (spec["holderIdentity"], spec["leaseDurationSeconds"]) == ("local", DURATION_S)
    assert spec["renewTime"] != "old" and spec["renewTime"].endswith("Z")
    assert "." in spec["renewTime"]  # a MicroTime


def test_a_missing_lease_is_made_owned_by_the_node() -> None:
    client = FakeClient()
    renew_lease(client, NODE)  # type: ignore[arg-type]
    assert client.calls == [("patch", "Lease", NAMESPACE, "local"),
                            ("create", "Lease", NAMESPACE, "local")]
    lease = client.leases["local"]
    assert lease["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "local", "uid": "node-uid"}]
    assert (lease["apiVersion"], lease["kind"], lease["metadata"]["namespace"]) == (
        "coordination.k8s.io/v1", LEASES.kind, "kube-node-lease")


def test_a_lease_made_meanwhile_is_left_for_the_next_beat() -> None:
    client = FakeClient(raced=True)
    renew_lease(client, NODE)  # type: ignore[arg-type]
    assert [call[0] for call in client.calls] == ["patch", "create"]
