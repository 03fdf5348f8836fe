"""What a process-mode container's environment holds besides its own variables, pure.

A process inherits the node's environment (so `python` and virtualenvs are found as in the
shell that started the node), but not the node's credentials: `KUBECONFIG` is replaced by
/dev/null, an empty config, so that kubectl and client-go in the pod neither read the
node's kubeconfig nor the user's ~/.kube/config (the pod shares the user's home) and fall
back to their in-cluster config. That config comes from the `kubernetes` Service variables
the kubelet sets in every container, here the address the node itself reaches the API
server at (pods share the machine's network), and from the pod's kube-api-access volume.
The container's own variables win over all of these, as with the kubelet.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple
from urllib.parse import urlsplit

# An empty kubeconfig: client-go then uses its in-cluster config.
EMPTY_KUBECONFIG = "/dev/null"
_NODE_ONLY = ("KUBECONFIG",)


class ApiAddress(NamedTuple):
    host: str
    port: int


def api_address(url: str) -> ApiAddress:
    """The host and port of the API server's URL (443 for https, 80 for http by default)."""
    parts = urlsplit(url)
    default = 443 if parts.scheme == "https" else 80
    return ApiAddress(parts.hostname or "127.0.0.1", parts.port or default)


def _join(host: str, port: int) -> str:
    """Go's net.JoinHostPort."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def kubernetes_service_env(address: ApiAddress) -> dict[str, str]:
    """The variables the kubelet derives from the `kubernetes` Service (its one port is
    named https)."""
    host, port = address
    link = f"KUBERNETES_PORT_{port}_TCP"
    return {
        "KUBERNETES_SERVICE_HOST": host,
        "KUBERNETES_SERVICE_PORT": str(port),
        "KUBERNETES_SERVICE_PORT_HTTPS": str(port),
        "KUBERNETES_PORT": f"tcp://{_join(host, port)}",
        link: f"tcp://{_join(host, port)}",
        f"{link}_PROTO": "tcp",
        f"{link}_PORT": str(port),
        f"{link}_ADDR": host,
    }


def process_environment(node_env: Mapping[str, str], variables: Mapping[str, str], *,
                        hostname: str, api: ApiAddress | None) -> dict[str, str]:
    """The node's environment without its credentials, the pod's host name, the API
    server's address and an empty kubeconfig, then the container's variables."""
    inherited = {k: v for k, v in node_env.items() if k not in _NODE_ONLY}
    service = kubernetes_service_env(api) if api is not None else {}
    return {**inherited, "HOSTNAME": hostname, **service, "KUBECONFIG": EMPTY_KUBECONFIG,
            **variables}
