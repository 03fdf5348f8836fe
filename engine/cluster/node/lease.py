"""The node's Lease in `kube-node-lease`, renewed at every heartbeat, as a kubelet keeps it.

Controllers and `kubectl describe node` read it to tell the node is alive; it is owned by
the Node, so it goes with it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from engine.cluster.node.api import ApiError, NodeApi

NAMESPACE = "kube-node-lease"
DURATION_S = 40
"""The kubelet's default (--node-lease-duration-seconds)."""


def _micro_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def renew_lease(api: NodeApi, node: dict[str, Any]) -> None:
    """Renew the node's Lease, creating it when missing (owned by `node`, the Node object)."""
    name = str(node["metadata"]["name"])
    path = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/{name}"
    spec = {"holderIdentity": name, "leaseDurationSeconds": DURATION_S,
            "renewTime": _micro_now()}
    try:
        api.merge_patch(path, {"spec": spec})
        return
    except ApiError as exc:
        if exc.status != 404:
            raise
    owner = {"apiVersion": "v1", "kind": "Node", "name": name,
             "uid": node["metadata"].get("uid")}
    body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": NAMESPACE, "ownerReferences": [owner]},
            "spec": spec}
    try:
        api.post(f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases", body)
    except ApiError as exc:
        if exc.status != 409:  # created meanwhile: renewed at the next heartbeat
            raise
