"""The node's Lease in `kube-node-lease`, renewed at every heartbeat, as a kubelet keeps it.

Controllers and `kubectl describe node` read it to tell the node is alive; it is owned by
the Node, so it goes with it.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from typing import Any

from engine.kube.client import KubeClient
from engine.kube.errors import AlreadyExists, Conflict, NotFound
from engine.kube.resources import LEASES

NAMESPACE = "kube-node-lease"
DURATION_S = 40
"""The kubelet's default (--node-lease-duration-seconds)."""


def _micro_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def renew_lease(api: KubeClient, node: dict[str, Any]) -> None:
    """Renew the node's Lease, creating it when missing (owned by `node`, the Node object)."""
    name = str(node["metadata"]["name"])
    spec = {"holderIdentity": name, "leaseDurationSeconds": DURATION_S,
            "renewTime": _micro_now()}
    try:
        api.patch(LEASES, name, {"spec": spec}, namespace=NAMESPACE)
        return
    except NotFound:
        pass
    owner = {"apiVersion": "v1", "kind": "Node", "name": name,
             "uid": node["metadata"].get("uid")}
    body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": NAMESPACE, "ownerReferences": [owner]},
            "spec": spec}
    with contextlib.suppress(AlreadyExists, Conflict):  # created meanwhile: renewed next beat
        api.create(LEASES, body, NAMESPACE)
