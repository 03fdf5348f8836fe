"""Installing CRDs and applying machines through the API: `jobmachine up` and `run --machines`.

The CRDs are the files of crds/ (generated from kinds/ and engine.api); an
existing CRD is replaced, so an upgrade brings its schema along. Machine files
become StateMachine objects, which the engine watches and judges. The objects of
manifests/ (Kubeflow Trainer's default runtimes) are applied as they are.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from loguru import logger

from engine import yaml_documents
from engine.controller.machines.served import CRDS, resource_of_crd, served_resources
from engine.definition.validate import definition_files
from engine.kube.client import KubeClient
from engine.kube.errors import AlreadyExists, ApiError, Invalid
from engine.kube.resources import (
    CONFIGMAPS,
    NAMESPACES,
    ROLE_BINDINGS,
    ROLES,
    STATE_MACHINES,
    Resource,
)


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


_MANIFEST_KINDS: dict[tuple[str, str], Resource] = {
    (r.api_version, r.kind): r for r in (NAMESPACES, CONFIGMAPS, ROLES, ROLE_BINDINGS)}
"""The built-in kinds a shipped manifest may hold (beside the kinds the CRDs serve)."""


def apply_manifests(client: KubeClient, directory: Path) -> list[str]:
    """Create or replace every object of `directory`'s YAML files, in file and document
    order (Kubeflow Trainer's default runtimes and the ConfigMap its SDK reads); a kind the
    server does not serve, or an object it refuses, is logged and skipped. The objects
    applied, as `kind/name`."""
    served = {**_MANIFEST_KINDS, **served_resources(client.list(CRDS)[0])}
    applied: list[str] = []
    for path in sorted(directory.glob("*.yaml")):
        for document in yaml_documents.load_all(path.read_text()):
            if not isinstance(document, dict):
                continue
            kind = (str(document.get("apiVersion")), str(document.get("kind")))
            name = f"{kind[1]}/{(document.get('metadata') or {}).get('name')}"
            resource = served.get(kind)
            if resource is None:
                logger.error(f"{path}: {name} not applied: the server serves no {kind[1]} "
                             f"in {kind[0]}")
                continue
            namespace = (document.get("metadata") or {}).get("namespace") or (
                "default" if resource.namespaced else None)
            try:
                create_or_replace(client, resource, document, namespace)
            except ApiError as exc:
                logger.error(f"{path}: {name} not applied: {exc}")
                continue
            applied.append(name)
    return applied


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


def prepare_cluster(client: KubeClient, *, crds: Iterable[Path], machines: Path,
                    manifests: Path | None = None) -> list[str]:
    """Install the CRDs in each folder of `crds`, wait until they are served, apply the
    machines in `machines` as StateMachine objects and the objects of `manifests` (the
    shipped runtimes); the machines applied."""
    folders = list(crds)
    for folder in folders:
        install_crds(client, folder)
    wait_until_served(client, [r for folder in folders for r in crd_resources(folder)])
    applied = apply_machines(client, [machines])
    if manifests is not None:
        apply_manifests(client, manifests)
    return applied
