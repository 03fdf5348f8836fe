"""Applying the install to a cluster: what `jobmachine manifests install` does without `-o`.

Before anything is written, the server must be a Kubernetes release the CRDs work on
(kube_version) and serve every kind the install holds, so a cluster that cannot take the
install is refused whole instead of being left half installed. Then each object is
created, or replaced when it exists (its resourceVersion carried over), in the order
install_objects gives: the CRDs, waited for until served, then the rest, machines last.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.app.kube_version import version_notes, version_refusal
from engine.controller.machines.install import create_or_replace, wait_until_served
from engine.controller.machines.served import CRDS, resource_of_crd
from engine.kube.client import KubeClient
from engine.kube.errors import ApiError, NotFound
from engine.kube.resources import Resource

Obj = dict[str, Any]
Kind = tuple[str, str]
"""(apiVersion, kind)."""
_CRD: Kind = (CRDS.api_version, CRDS.kind)


class InstallError(Exception):
    """The cluster cannot take the install, or refused an object: one line saying which."""


@dataclass(frozen=True)
class Applied:
    """One object written, said as kubectl says it: `kind/name created|configured`."""

    kind: str
    name: str
    action: str

    def __str__(self) -> str:
        return f"{self.kind.lower()}/{self.name} {self.action}"


def install_into_cluster(kubeconfig: Path | None, objects: Sequence[Obj], *,
                         say: Callable[[str], None], note: Callable[[str], None]) -> None:
    """Check the cluster of `kubeconfig`, then apply `objects`, telling `say` each object
    written and `note` what works differently on this cluster; InstallError otherwise."""
    try:
        client = KubeClient.from_kubeconfig(kubeconfig)
    except Exception as exc:  # kubernetes' ConfigException, which only engine.kube may import
        where = kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
        raise InstallError(f"cannot read the kubeconfig {where}: {exc}") from None
    try:
        for line in check_server(client):
            note(line)
        for applied in apply_install(client, objects):
            say(str(applied))
    finally:
        client.close()


def check_server(client: KubeClient) -> list[str]:
    """Refuse (InstallError) a server older than jobmachine needs; the notes on what works
    differently on this one."""
    try:
        info = client.server_version()
    except ApiError as exc:
        raise InstallError(f"cannot read the version of the API server at "
                           f"{client.settings.server}: {exc}") from None
    refusal = version_refusal(info)
    if refusal is not None:
        raise InstallError(refusal)
    return version_notes(info)


def apply_install(client: KubeClient, objects: Sequence[Obj]) -> Iterator[Applied]:
    """Write `objects` (CRDs first) to the cluster, one `Applied` as each is written;
    InstallError before the first write when the cluster does not serve all their kinds."""
    crds = [obj for obj in objects if _kind_of(obj) == _CRD]
    resources = _resources(client, objects, crds)
    waited = False
    for obj in objects:
        if not waited and _kind_of(obj) != _CRD:
            _wait_until_served(client, crds)
            waited = True
        yield _create_or_replace(client, resources[_kind_of(obj)], obj)


def _kind_of(obj: Obj) -> Kind:
    return str(obj.get("apiVersion", "")), str(obj.get("kind", ""))


def _resources(
    client: KubeClient, objects: Iterable[Obj], crds: Sequence[Obj]
) -> dict[Kind, Resource]:
    """The resource of every kind in `objects`: from the install's CRDs, else from the
    server's discovery; InstallError naming every kind the server does not serve."""
    found = {(r.api_version, r.kind): r for r in map(resource_of_crd, crds)}
    listings: dict[str, list[Obj]] = {}
    missing: list[str] = []
    for api_version, kind in dict.fromkeys(map(_kind_of, objects)):
        if (api_version, kind) in found:
            continue
        if api_version not in listings:
            listings[api_version] = _served(client, api_version)
        resource = next((r for r in map(_resource, listings[api_version]) if r.kind == kind), None)
        if resource is None:
            missing.append(f"{api_version} {kind}")
        else:
            found[api_version, kind] = resource
    if missing:
        raise InstallError(f"the API server at {client.settings.server} does not serve "
                           f"{', '.join(missing)}: nothing was installed")
    return found


def _served(client: KubeClient, api_version: str) -> list[Obj]:
    """Discovery's resources of `api_version` (none when the server does not serve it),
    each with its group and version, subresources left out."""
    group, _, version = api_version.rpartition("/")
    try:
        listing = client.resources_of(group, version)
    except NotFound:
        return []
    except ApiError as exc:
        raise InstallError(f"cannot ask the API server at {client.settings.server} what it "
                           f"serves of {api_version}: {exc}") from None
    return [{**entry, "group": group, "version": version}
            for entry in listing.get("resources") or () if "/" not in str(entry.get("name"))]


def _resource(entry: Obj) -> Resource:
    return Resource(entry["group"], entry["version"], str(entry["name"]), str(entry["kind"]),
                    namespaced=bool(entry.get("namespaced")))


def _wait_until_served(client: KubeClient, crds: Sequence[Obj]) -> None:
    try:
        wait_until_served(client, [resource_of_crd(crd) for crd in crds])
    except TimeoutError as exc:
        raise InstallError(str(exc)) from None


def _create_or_replace(client: KubeClient, resource: Resource, obj: Obj) -> Applied:
    metadata = obj.get("metadata") or {}
    name = str(metadata.get("name", ""))
    namespace = metadata.get("namespace") if resource.namespaced else None
    try:
        created = create_or_replace(client, resource, obj, namespace)
    except ApiError as exc:
        raise InstallError(f"{resource.kind} {name}: {exc}") from None
    return Applied(resource.kind, name, "created" if created else "configured")
