"""Installing CRDs and applying machines through the API: `jobmachine up` and `run --machines`.

The CRDs are the files of crds/ (generated from kinds/ and engine.api); an
existing CRD is replaced, so an upgrade brings its schema along. Machine files
become StateMachine objects, which the engine watches and judges.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from loguru import logger

from engine import yaml_documents
from engine.controller.machines.served import CRDS, resource_of_crd
from engine.definition.validate import definition_files
from engine.kube.client import KubeClient
from engine.kube.errors import AlreadyExists, ApiError, Invalid
from engine.kube.resources import STATE_MACHINES, Resource


def install_crds(client: KubeClient, directory: Path) -> list[str]:
    """Create or update every CRD in `directory`'s YAML files; the names installed."""
    names: list[str] = []
    for path in sorted(directory.glob("*.yaml")):
        crd = yaml_documents.load(path.read_text())
        create_or_replace(client, CRDS, crd)
        names.append(crd["metadata"]["name"])
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


def crd_resources(directory: Path) -> list[Resource]:
    """The resource each CRD file in `directory` serves (to wait until it is served)."""
    return [resource_of_crd(yaml_documents.load(path.read_text()))
            for path in sorted(directory.glob("*.yaml"))]


def apply_machines(client: KubeClient, paths: Iterable[Path]) -> list[str]:
    """Create or update a StateMachine object for every document in the files under `paths`.

    The engine judges each one and says on its status whether it is accepted; an
    invalid machine is still applied (its status says why it is refused). A file
    that is not YAML, or a document the API server refuses (its CRD's schema), is
    logged with the reason and skipped: one bad file never keeps the others out.
    The names applied.
    """
    names: list[str] = []
    for path in definition_files(paths):
        if not isinstance(path, Path):
            raise FileNotFoundError(str(path))
        try:
            documents = yaml_documents.load_all(path.read_text())
        except (OSError, yaml.YAMLError) as exc:
            logger.error(f"{path}: not applied, it cannot be read as YAML: {exc}")
            continue
        for document in documents:
            if isinstance(document, dict) and document.get("kind") == STATE_MACHINES.kind:
                try:
                    names.append(_create_or_update(client, document))
                except Invalid as exc:
                    logger.error(f"{path}: StateMachine not applied: {exc}")
    return names


def create_or_replace(client: KubeClient, resource: Resource, document: dict[str, Any],
                      namespace: str | None = None) -> bool:
    """Create `document`, or replace the object of its name with it (the current
    resourceVersion carried over): whether it was created."""
    metadata = dict(document.get("metadata") or {})
    name = str(metadata.get("name") or "")
    try:
        client.create(resource, document, namespace=namespace)
        return True
    except AlreadyExists:
        current = client.get(resource, name, namespace)
        metadata["resourceVersion"] = current["metadata"]["resourceVersion"]
        client.replace(resource, name, {**document, "metadata": metadata}, namespace=namespace)
        return False


def _create_or_update(client: KubeClient, document: dict[str, Any]) -> str:
    create_or_replace(client, STATE_MACHINES, document)
    return str((document.get("metadata") or {}).get("name") or "")


def prepare_cluster(client: KubeClient, *, crds: Iterable[Path], machines: Path) -> list[str]:
    """Install the CRDs in each folder of `crds`, wait until they are served, apply the
    machines in `machines` as StateMachine objects; the machines applied."""
    folders = list(crds)
    for folder in folders:
        install_crds(client, folder)
    wait_until_served(client, [r for folder in folders for r in crd_resources(folder)])
    return apply_machines(client, [machines])
