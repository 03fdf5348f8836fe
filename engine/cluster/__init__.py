"""The embedded single-machine cluster: a Kubernetes-compatible API server and a local node.

It knows nothing about jobs or machines; the engine talks to it over HTTP with
the official client, exactly as it would talk to a real cluster.
"""

from engine.cluster.apiserver.endpoints.serve import running_apiserver

__all__ = ["running_apiserver"]
