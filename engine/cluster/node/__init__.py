"""The embedded cluster's node: runs the pods bound to it as local processes or simulations.

`LocalNode` is the node itself; `running_node` runs one against a running
embedded API server for the length of a `with` block; `RestartBackoff` says how
containers restarted in place back off.
"""

from engine.cluster.node.backoff import RestartBackoff
from engine.cluster.node.node import LocalNode
from engine.cluster.node.running import running_node

__all__ = ["LocalNode", "RestartBackoff", "running_node"]
