"""Installing jobmachine's CRDs through the API, for `jobmachine up` and the benchmarks.

The CRDs are generated from the models in engine.api (the same text as crds/);
an existing CRD is replaced, so an upgrade brings its schema along.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import yaml

from engine.api.manifests import crd_files
from engine.controller.client import KubeClient
from engine.controller.errors import AlreadyExists, ApiError
from engine.controller.resources import Resource

CRDS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
    namespaced=False,
)


def install_crds(client: KubeClient) -> list[str]:
    """Create or update every jobmachine CRD; the names installed."""
    names: list[str] = []
    for text in crd_files().values():
        crd = yaml.safe_load(text)
        name = crd["metadata"]["name"]
        try:
            client.create(CRDS, crd)
        except AlreadyExists:
            current = client.get(CRDS, name)
            crd["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            client.replace(CRDS, name, crd)
        names.append(name)
    return names


def wait_until_served(
    client: KubeClient, resources: Iterable[Resource], *, timeout_s: float = 30.0
) -> None:
    """Wait until every resource can be listed (a new CRD takes a moment to be served)."""
    deadline = time.monotonic() + timeout_s
    for resource in resources:
        while True:
            try:
                client.list(resource, page_size=1)
                break
            except ApiError as exc:
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"{resource.plural} not served after {timeout_s}s: {exc}"
                    ) from exc
                time.sleep(0.1)
