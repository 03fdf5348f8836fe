"""What each volume of a pod holds and where a container sees it, as the kubelet sets them up,
pure.

configMap, secret and downwardAPI volumes are projections: files from `items` (key -> path,
each with its own `mode`) or from every key, with `defaultMode` (0644) otherwise; a missing
ConfigMap or Secret is an empty volume when `optional`, else the volume is unavailable (the
kubelet's FailedMount). A projected volume gathers configMap, secret, downwardAPI and
serviceAccountToken sources into one directory under the volume's `defaultMode` (a token file
takes it too, as the kubelet writes it when no fsUser or fsGroup is set); a source that fails
makes the volume unavailable with the kubelet's aggregated message. emptyDir is a directory
that lives as long as the pod, hostPath an existing path of this machine. A container's
`volumeMounts` become `Mount`s; projections are always read-only, as the kubelet mounts them.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from engine.cluster.apiserver.encoding.go_text import go_quote
from engine.cluster.node.config.env import ContainerConfigError, expand, field_value
from engine.cluster.node.config.sources import Kind, Sources
from engine.cluster.node.config.tokens import TokenFailure, Tokens, token_ref

DEFAULT_MODE = 0o644
MAX_MODE = 0o777
PROJECTIONS = ("configMap", "secret", "downwardAPI", "projected")
PROJECTED_SOURCES = ("configMap", "secret", "downwardAPI", "serviceAccountToken")
SUPPORTED = (*PROJECTIONS, "emptyDir", "hostPath")
_DOWNWARD_FIELDS = ("metadata.name", "metadata.namespace", "metadata.uid", "metadata.labels",
                    "metadata.annotations")


@dataclass(frozen=True)
class File:
    data: bytes
    mode: int


@dataclass(frozen=True)
class Projection:
    """Files by relative path (configMap, secret, downwardAPI, projected)."""

    files: Mapping[str, File] = field(default_factory=dict)


@dataclass(frozen=True)
class EmptyDir:
    """A directory the pod's containers share, created empty with the pod."""


@dataclass(frozen=True)
class HostPath:
    path: PurePosixPath
    type: str


@dataclass(frozen=True)
class Unavailable:
    """Cannot be set up yet; `message` is the kubelet's FailedMount message."""

    message: str


Content = Projection | EmptyDir | HostPath | Unavailable


@dataclass(frozen=True)
class Mount:
    """One entry of a container's volumeMounts, resolved."""

    volume: str
    path: PurePosixPath
    # Relative path inside the volume ("" for the whole volume).
    sub_path: str
    read_only: bool


def absolute(path: str) -> PurePosixPath:
    """A path made absolute and normal, as the kubelet and runc see a mountPath."""
    return PurePosixPath(posixpath.normpath("/" + path.lstrip("/")))


def _mode(value: Any, what: str) -> int:
    mode = int(value)
    if not 0 <= mode <= MAX_MODE:
        raise ContainerConfigError(f"{what}: mode {mode:#o} is not between 0 and 0777")
    return mode


def _default_mode(source: Mapping[str, Any], what: str) -> int:
    """defaultMode, 0644 when absent or null (the API server's default)."""
    value = source.get("defaultMode")
    return DEFAULT_MODE if value is None else _mode(value, what)


def item_path(path: str, what: str) -> str:
    """A projected file's path, checked as the kubelet's atomic writer does: relative, no
    `..` element, not starting with `..` (those names are the writer's own)."""
    parts = path.split("/")
    normal = posixpath.normpath(path) if path else ""
    if path.startswith(("/", "..")) or ".." in parts or normal in ("", "."):
        raise ContainerConfigError(
            f"{what}: path {path!r} must be relative, without '..' and not start with '..'")
    return normal


class _MissingKeyError(Exception):
    """A listed key is missing from the object."""


def project(data: Mapping[str, bytes], source: Mapping[str, Any], *, what: str,
            missing_key: str) -> Projection:
    """The files of a ConfigMap or Secret volume from the object's data: every key, or the
    listed `items`; a listed key the object lacks is skipped when `optional`, else raises
    (with `missing_key` % key as the message)."""
    default = _default_mode(source, what)
    items = source.get("items")
    if not items:
        return Projection({item_path(key, what): File(value, default)
                           for key, value in sorted(data.items())})
    files: dict[str, File] = {}
    for item in items:
        key = str(item.get("key"))
        if key not in data:
            if source.get("optional"):
                continue
            raise _MissingKeyError(missing_key % key)
        mode = _mode(item["mode"], what) if item.get("mode") is not None else default
        files[item_path(str(item.get("path") or ""), what)] = File(data[key], mode)
    return Projection(files)


def format_map(values: Mapping[str, Any]) -> str:
    """The kubelet's file format for all labels or annotations: `key="value"` lines, sorted."""
    return "\n".join(f"{key}={go_quote(str(values[key]))}" for key in sorted(values))


def downward_value(pod: Mapping[str, Any], path: str, what: str) -> str:
    metadata = pod.get("metadata") or {}
    if path in ("metadata.labels", "metadata.annotations"):
        return format_map(metadata.get(path.split(".")[1]) or {})
    if path in _DOWNWARD_FIELDS or path.startswith(("metadata.labels[", "metadata.annotations[")):
        return field_value(pod, path)
    raise ContainerConfigError(
        f"{what}: fieldRef.fieldPath {path!r} is not supported in a downwardAPI volume "
        f"(supported: {', '.join(_DOWNWARD_FIELDS)}, metadata.labels['KEY'], "
        "metadata.annotations['KEY'])")


def downward_projection(pod: Mapping[str, Any], source: Mapping[str, Any], what: str
                        ) -> Projection:
    default = _default_mode(source, what)
    files: dict[str, File] = {}
    for item in source.get("items") or ():
        path = item_path(str(item.get("path") or ""), what)
        field_ref = item.get("fieldRef")
        if not field_ref:
            raise ContainerConfigError(
                f"{what}: item {path}: only fieldRef is supported by the local node "
                "(resourceFieldRef is not)")
        value = downward_value(pod, str(field_ref.get("fieldPath") or ""), f"{what}: {path}")
        mode = _mode(item["mode"], what) if item.get("mode") is not None else default
        files[path] = File(value.encode(), mode)
    return Projection(files)


_OBJECT_VOLUMES: Mapping[str, tuple[Kind, str, str]] = {
    # volume type: (kind, name field, message for a listed key the object lacks)
    "configMap": ("configmap", "name", "configmap references non-existent config key: %s"),
    "secret": ("secret", "secretName", "references non-existent secret key: %s"),
}


def _failed(volume: Mapping[str, Any]) -> str:
    return f'MountVolume.SetUp failed for volume "{volume.get("name")}" : '


def _object_files(source: Mapping[str, Any], kind_name: str, name_field: str,
                  sources: Sources, what: str) -> Projection | str:
    """The files of a ConfigMap or Secret source, or the kubelet's error when it cannot be
    had (a missing object is no files when `optional`)."""
    kind, _, missing_key = _OBJECT_VOLUMES[kind_name]
    name = str(source.get(name_field) or "")
    found = sources.get(kind, name)
    if found is None:
        return Projection() if source.get("optional") else f'{kind} "{name}" not found'
    try:
        return project(found.files, source, what=what, missing_key=missing_key)
    except _MissingKeyError as exc:
        return str(exc)


def _object_volume(volume: Mapping[str, Any], kind_name: str, sources: Sources) -> Content:
    files = _object_files(volume[kind_name] or {}, kind_name, _OBJECT_VOLUMES[kind_name][1],
                          sources, f"volume {volume.get('name')}")
    return files if isinstance(files, Projection) else Unavailable(_failed(volume) + files)


def _token_file(pod: Mapping[str, Any], source: Mapping[str, Any], tokens: Tokens | None,
                mode: int, what: str) -> Projection | str:
    """The token of a serviceAccountToken source at its path; no file when tokens were not
    requested (simulate mode: no process reads it)."""
    path = item_path(str(source.get("path") or ""), what)
    if tokens is None:
        return Projection()
    token = tokens.get(token_ref(pod, source))
    if token is None:
        return "failed to fetch token: not requested"
    if isinstance(token, TokenFailure):
        return token.message
    return Projection({path: File(token.encode(), mode)})


def _projected_source(pod: Mapping[str, Any], entry: Mapping[str, Any], sources: Sources,
                      tokens: Tokens | None, *, default: int, what: str) -> Projection | str:
    kind = next((str(key) for key in entry if entry[key] is not None), "")
    if kind not in PROJECTED_SOURCES:
        raise ContainerConfigError(
            f"{what}: projected {kind or 'empty'} sources are not supported by the local node "
            f"(supported: {', '.join(PROJECTED_SOURCES)})")
    source = {**(entry[kind] or {}), "defaultMode": default}
    if kind == "downwardAPI":
        return downward_projection(pod, source, what)
    if kind == "serviceAccountToken":
        return _token_file(pod, source, tokens, default, what)
    return _object_files(source, kind, "name", sources, what)


def _projected_volume(pod: Mapping[str, Any], volume: Mapping[str, Any], sources: Sources,
                      tokens: Tokens | None) -> Content:
    """Every source's files in one volume (later sources win a path); the kubelet reports the
    errors of all failing sources at once."""
    projected = volume["projected"] or {}
    what = f"volume {volume.get('name')}"
    default = _default_mode(projected, what)
    files: dict[str, File] = {}
    errors: list[str] = []
    for entry in projected.get("sources") or ():
        result = _projected_source(pod, entry or {}, sources, tokens, default=default, what=what)
        if isinstance(result, Projection):
            files.update(result.files)
        else:
            errors.append(result)
    if errors:
        # Go's utilerrors.NewAggregate: one error as it is, several as "[a, b]".
        return Unavailable(_failed(volume) + (errors[0] if len(errors) == 1
                                              else "[" + ", ".join(errors) + "]"))
    return Projection(files)


def volume_type(volume: Mapping[str, Any]) -> str:
    """The volume's source type: the one key besides `name`."""
    return next((str(key) for key in volume if key != "name"), "")


def volume_contents(pod: Mapping[str, Any], sources: Sources, *, tokens: Tokens | None = None
                    ) -> dict[str, Content]:
    """Every volume of a supported type, by name (the others are refused when mounted);
    `tokens` for the projected serviceAccountToken sources, None: leave their files out."""
    contents: dict[str, Content] = {}
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        name, kind = str(volume.get("name")), volume_type(volume)
        if kind in _OBJECT_VOLUMES:
            contents[name] = _object_volume(volume, kind, sources)
        elif kind == "projected":
            contents[name] = _projected_volume(pod, volume, sources, tokens)
        elif kind == "downwardAPI":
            contents[name] = downward_projection(pod, volume[kind] or {}, f"volume {name}")
        elif kind == "emptyDir":
            contents[name] = EmptyDir()
        elif kind == "hostPath":
            host = volume[kind] or {}
            contents[name] = HostPath(absolute(str(host.get("path") or "")),
                                      str(host.get("type") or ""))
    return contents


def _sub_path(mount: Mapping[str, Any], env: Mapping[str, str]) -> str:
    """subPath, or subPathExpr expanded with the container's variables; relative, no `..`."""
    sub_path = str(mount.get("subPath") or "")
    if mount.get("subPathExpr"):
        sub_path = expand(str(mount["subPathExpr"]), env)
    if sub_path.startswith("/"):
        raise ContainerConfigError(f"error SubPath `{sub_path}` must not be an absolute path")
    if ".." in sub_path.split("/"):
        raise ContainerConfigError(
            f"unable to provision SubPath `{sub_path}`: must not contain '..'")
    return posixpath.normpath(sub_path) if sub_path else ""


def container_mounts(pod: Mapping[str, Any], container: Mapping[str, Any],
                     env: Mapping[str, str]) -> list[Mount]:
    """The container's volumeMounts; a mount of an unknown volume or of a type the local node
    cannot provide is a ContainerConfigError."""
    volumes = {str(v.get("name")): volume_type(v)
               for v in (pod.get("spec") or {}).get("volumes") or ()}
    mounts = []
    for mount in container.get("volumeMounts") or ():
        name = str(mount.get("name"))
        kind = volumes.get(name)
        if kind is None:
            raise ContainerConfigError(
                f'cannot find volume "{name}" to mount into container "{container.get("name")}"')
        if kind not in SUPPORTED:
            raise ContainerConfigError(
                f"volume {name}: {kind} volumes are not supported by the local node "
                f"(supported: {', '.join(SUPPORTED)})")
        path = absolute(str(mount.get("mountPath") or ""))
        if path == PurePosixPath("/"):
            raise ContainerConfigError(f"volume {name}: cannot be mounted at /")
        read_only = bool(mount.get("readOnly")) or kind in PROJECTIONS
        mounts.append(Mount(name, path, _sub_path(mount, env), read_only))
    return mounts
