"""The embedded cluster's node: runs the pods bound to it as local processes or simulations.

`LocalNode` is the node itself; `running_node` runs one against a running
embedded API server for the length of a `with` block; `RestartBackoff` says how
containers restarted in place back off; `Capacity` what pods may request of it.
The node has no client of its own: it reaches the API server through the client
layer (`engine.kube`), as the engine does, and never imports the `kubernetes` package.
"""

from engine.cluster.node.node import LocalNode
from engine.cluster.node.running import running_node
from engine.cluster.node.scheduling.capacity import Capacity
from engine.cluster.node.status.backoff import RestartBackoff

__all__ = ["Capacity", "LocalNode", "RestartBackoff", "running_node"]
