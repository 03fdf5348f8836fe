"""The embedded single-machine cluster: a Kubernetes-compatible API server and a local node.

It knows nothing about jobs or machines; the engine talks to it over HTTP through the
client layer (`engine.kube`), exactly as it would talk to a real cluster.

`running_apiserver` is served from here lazily (PEP 562): importing the node, or the
kubectl-delivery stand-in that runs in a pod of its own, must not load the whole API
server (1.4 of the stand-in's 1.6 s of imports).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.cluster.apiserver.endpoints.serve import running_apiserver

__all__ = ["running_apiserver"]


def __getattr__(name: str) -> Any:
    if name == "running_apiserver":
        from engine.cluster.apiserver.endpoints.serve import running_apiserver

        return running_apiserver
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
