"""The embedded cluster's node: runs the pods bound to it as local processes or simulations.

`LocalNode` is the node itself; `running_node` runs one against a running
embedded API server for the length of a `with` block; `RestartBackoff` says how
containers restarted in place back off; `Capacity` what pods may request of it.
The node has no client of its own: it reaches the API server through the client
layer (`engine.kube`), as the engine does, and never imports the `kubernetes` package.

The four names are loaded when first used (PEP 562): a module of the node that runs in
a pod of its own (the kubectl-delivery stand-in) must not load the node and the API
server with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.cluster.node.node import LocalNode
    from engine.cluster.node.running import running_node
    from engine.cluster.node.scheduling.capacity import Capacity
    from engine.cluster.node.status.backoff import RestartBackoff

__all__ = ["Capacity", "LocalNode", "RestartBackoff", "running_node"]

_HOMES = {
    "Capacity": "engine.cluster.node.scheduling.capacity",
    "LocalNode": "engine.cluster.node.node",
    "RestartBackoff": "engine.cluster.node.status.backoff",
    "running_node": "engine.cluster.node.running",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
