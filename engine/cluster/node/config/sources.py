"""The ConfigMaps and Secrets a pod refers to (volumes, env, envFrom), read at each container
start, as the kubelet reads them before it creates a container: Secrets from the API server,
ConfigMaps from the node's watch when it holds them (`watched_config_maps.py`).

`Sources` is what the server answered, decoded (ConfigMap `data` and `binaryData`, Secret
`data` from base64); a name it does not hold is simply absent, and what that means (wait,
or skip an optional reference) is decided by env.py and volumes.py.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from engine.kube.client import KubeClient
from engine.kube.errors import NotFound
from engine.kube.resources import CONFIGMAPS, SECRETS, Resource

Kind = Literal["configmap", "secret"]


class SourceRef(NamedTuple):
    kind: Kind
    name: str


@dataclass(frozen=True)
class SourceObject:
    """One ConfigMap or Secret: `strings` is what env sees (ConfigMap `data`, Secret `data`
    as text), `files` what a volume sees (ConfigMap `data` and `binaryData`, Secret `data`)."""

    strings: Mapping[str, str]
    files: Mapping[str, bytes]


@dataclass(frozen=True)
class Sources:
    """The referenced objects the API server holds; a missing one is absent."""

    found: Mapping[SourceRef, SourceObject] = field(default_factory=dict)

    def get(self, kind: Kind, name: str) -> SourceObject | None:
        return self.found.get(SourceRef(kind, name))


class MissingSourceError(Exception):
    """A ConfigMap, Secret or key that is not optional does not exist (yet); the message is
    the kubelet's."""


def not_found(kind: Kind, name: str) -> MissingSourceError:
    return MissingSourceError(f'{kind} "{name}" not found')


def _ref(kind: Kind, reference: Any) -> list[SourceRef]:
    name = reference.get("name") if isinstance(reference, Mapping) else None
    return [SourceRef(kind, str(name))] if name else []


def _projected_references(projected: Any) -> list[SourceRef]:
    refs: list[SourceRef] = []
    sources = projected.get("sources") if isinstance(projected, Mapping) else None
    for source in sources or ():
        if isinstance(source, Mapping):
            refs += _ref("configmap", source.get("configMap"))
            refs += _ref("secret", source.get("secret"))
    return refs


def volume_references(pod: Mapping[str, Any]) -> list[SourceRef]:
    """Every ConfigMap and Secret of the pod's volumes, projected ones included (the kubelet
    sets up all of a pod's volumes before any container starts, mounted or not)."""
    refs: list[SourceRef] = []
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        refs += _ref("configmap", volume.get("configMap"))
        secret = volume.get("secret")
        if isinstance(secret, Mapping) and secret.get("secretName"):
            refs.append(SourceRef("secret", str(secret["secretName"])))
        refs += _projected_references(volume.get("projected"))
    return refs


def env_references(container: Mapping[str, Any]) -> list[SourceRef]:
    """The ConfigMaps and Secrets the container's env and envFrom read."""
    refs: list[SourceRef] = []
    for entry in container.get("envFrom") or ():
        refs += _ref("configmap", entry.get("configMapRef"))
        refs += _ref("secret", entry.get("secretRef"))
    for entry in container.get("env") or ():
        source = entry.get("valueFrom") or {}
        if isinstance(source, Mapping):
            refs += (_ref("configmap", source.get("configMapKeyRef"))
                     + _ref("secret", source.get("secretKeyRef")))
    return refs


def _decoded(values: Any) -> dict[str, bytes]:
    """base64 values (the API server refuses anything else on write)."""
    return {str(key): base64.b64decode(str(value)) for key, value in (values or {}).items()}


def source_object(kind: Kind, obj: Mapping[str, Any]) -> SourceObject:
    """The data of a ConfigMap or Secret as the API server serves it."""
    if kind == "configmap":
        data = {str(k): str(v) for k, v in (obj.get("data") or {}).items()}
        files = {k: v.encode() for k, v in data.items()}
        files.update(_decoded(obj.get("binaryData")))
        return SourceObject(strings=data, files=files)
    files = _decoded(obj.get("data"))
    # A server that keeps stringData as written (a real one folds it into data on write).
    files.update({str(k): str(v).encode() for k, v in (obj.get("stringData") or {}).items()})
    # Go's string(bytes): any bytes; surrogateescape hands them back unchanged to execve.
    strings = {k: v.decode(errors="surrogateescape") for k, v in files.items()}
    return SourceObject(strings=strings, files=files)


RESOURCES: Mapping[Kind, Resource] = {"configmap": CONFIGMAPS, "secret": SECRETS}
"""The API resource of each kind of source."""


Cached = Callable[[str, str], Mapping[str, Any] | None]
"""A ConfigMap by namespace and name from a watch-fed cache (None: not held there)."""


def fetch_sources(api: KubeClient, namespace: str, refs: Iterable[SourceRef],
                  config_maps: Cached | None = None) -> Sources:
    """Read each referenced object once, a ConfigMap from `config_maps` when it holds it;
    NotFound means absent, any other failure is an ApiError."""
    found: dict[SourceRef, SourceObject] = {}
    for ref in dict.fromkeys(refs):
        cached = config_maps(namespace, ref.name) if (
            config_maps is not None and ref.kind == "configmap") else None
        if cached is not None:
            found[ref] = source_object(ref.kind, cached)
            continue
        try:
            obj = api.get(RESOURCES[ref.kind], ref.name, namespace)
        except NotFound:
            continue
        found[ref] = source_object(ref.kind, obj)
    return Sources(found)
