"""What a pod knows about its cluster: the service-account files and the service address.

Kubernetes mounts the service account's token, the cluster CA and the pod's
namespace under one folder and sets KUBERNETES_SERVICE_HOST and _PORT; an
engine run with `--in-cluster` reads exactly those, and says which one is
missing in one line instead of failing deep inside the client. The folder can
be moved (`--service-account-dir`), so the same path runs from an image on a
laptop and is tested without a pod.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
HOST_ENV = "KUBERNETES_SERVICE_HOST"
PORT_ENV = "KUBERNETES_SERVICE_PORT"


class InClusterError(ValueError):
    """The pod's configuration is missing or unreadable; the message names what and where."""


@dataclass(frozen=True)
class PodIdentity:
    """Where the API server is, and the files that prove who this pod is."""

    host: str
    port: str
    token_file: Path
    ca_file: Path
    namespace: str


def pod_identity(root: Path, environ: Mapping[str, str]) -> PodIdentity:
    """The pod's identity under `root`; InClusterError naming the first thing missing."""
    host, port = environ.get(HOST_ENV, ""), environ.get(PORT_ENV, "")
    if not host or not port:
        raise InClusterError(f"--in-cluster needs {HOST_ENV} and {PORT_ENV}, which Kubernetes "
                             f"sets in every pod; outside a pod use --kubeconfig")
    contents = {name: _read(root / name) for name in ("token", "ca.crt", "namespace")}
    try:
        ssl.create_default_context(cadata=contents["ca.crt"])
    except ssl.SSLError as exc:
        raise InClusterError(f"--in-cluster: {root / 'ca.crt'} holds no usable CA "
                             f"certificate ({exc.reason})") from None
    return PodIdentity(host, port, root / "token", root / "ca.crt",
                       contents["namespace"].strip())


def _read(path: Path) -> str:
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise InClusterError(f"--in-cluster: {path} does not exist (the pod's service-account "
                             f"files; see --service-account-dir)") from None
    except OSError as exc:
        raise InClusterError(f"--in-cluster: cannot read {path}: {exc.strerror}") from None
    if not text.strip():
        raise InClusterError(f"--in-cluster: {path} is empty")
    return text
