"""The node's client to the API server: named `jobmachine-node`, with no rate limit.

The node talks only to the embedded cluster's own server, and a burst of hundreds of pods
starting at once (a binding, status writes and events for each) must not wait behind a
token bucket: a kubelet's 50 qps would keep 300 pods waiting for seconds. The programs the
node runs in pods of their own (the kubectl-delivery stand-in) build their client here
too, without loading the node.
"""

from __future__ import annotations

import math
from pathlib import Path

from engine.kube.client import KubeClient

USER_AGENT = "jobmachine-node"
"""How the node names itself to the API server (its audit log and request metrics)."""
_QPS = math.inf
_BURST = 1000


def node_client(server: str, *, token: str, ca_file: Path | None) -> KubeClient:
    """A client of `server` with a bearer token and the CA that signed the server's
    certificate (None: the system's CAs)."""
    return KubeClient.for_server(server, token=token, ca_file=ca_file, qps=_QPS, burst=_BURST,
                                 user_agent=USER_AGENT)
