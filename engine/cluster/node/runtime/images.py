"""The images the local node knows how to run as a process, pure.

The local node ignores images: a container runs its `command` and `args`. A container that
gives no command runs its image's entrypoint, which is only known here for the few images a
job kind's own pods use: they are matched by repository (whatever the registry, mirror path,
tag or digest) and run as an equivalent program with the node's own Python.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

_KUBECTL_DELIVERY = (sys.executable, "-m", "engine.cluster.node.runtime.kubectl_delivery")

# Repository -> the entrypoint that stands in for the image's.
KNOWN_IMAGES: Mapping[str, tuple[str, ...]] = {
    # Kubeflow MPIJob's Launcher init container (mpi-operator, and the training operator's
    # MPIJob v1): kubectl into $TARGET_DIR, then wait until the hostfile's pods run.
    "mpioperator/kubectl-delivery": _KUBECTL_DELIVERY,
    "kubeflow/kubectl-delivery": _KUBECTL_DELIVERY,
}


def repository(image: str) -> str:
    """The image's repository path without registry, tag or digest (`library/` dropped, as
    for Docker Hub's official images)."""
    name = image.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    if colon > slash:
        name = name[:colon]
    parts = name.split("/")
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        parts = parts[1:]
    if len(parts) > 1 and parts[0] == "library":
        parts = parts[1:]
    return "/".join(parts)


def entrypoint(image: str) -> list[str] | None:
    """What the local node runs for the image when the container gives no command; None
    for an image it does not know (also under a mirror's path prefix)."""
    path = repository(image)
    for known, command in KNOWN_IMAGES.items():
        if path == known or path.endswith("/" + known):
            return list(command)
    return None
