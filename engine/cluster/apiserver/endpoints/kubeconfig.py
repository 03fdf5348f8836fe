"""The kubeconfig that points kubectl and the official client at the embedded server.

It is self-contained (the CA is embedded, not referenced) so it can be copied
elsewhere, and readable by its owner alone because it holds the bearer token.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

NAME = "jobmachine"


def kubeconfig_document(
    *,
    server: str,
    token: str,
    ca_file: Path | None = None,
    context: str = NAME,
    namespace: str = "default",
) -> dict[str, Any]:
    """The kubeconfig as a mapping: one cluster, one user and one context."""
    cluster: dict[str, Any] = {"server": server}
    if ca_file is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_file.read_bytes()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": NAME, "cluster": cluster}],
        "users": [{"name": NAME, "user": {"token": token}}],
        "contexts": [
            {"name": context, "context": {"cluster": NAME, "user": NAME, "namespace": namespace}}
        ],
        "current-context": context,
    }


def write_kubeconfig(
    path: Path,
    *,
    server: str,
    token: str,
    ca_file: Path | None = None,
    context: str = NAME,
    namespace: str = "default",
) -> Path:
    """Write the kubeconfig with mode 0600 (replacing any file there) and return its path."""
    document = kubeconfig_document(
        server=server, token=token, ca_file=ca_file, context=context, namespace=namespace
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.unlink(missing_ok=True)
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as stream:
        YAML().dump(document, stream)
    temporary.replace(path)
    return path
