"""What each volume of a pod holds and where a container sees it, as the kubelet sets them up,
pure.

configMap, secret and downwardAPI volumes are projections: files from `items` (key -> path,
each with its own `mode`) or from every key, with `defaultMode` (0644) otherwise; a missing
ConfigMap or Secret is an empty volume when `optional`, else the volume is unavailable (the
kubelet's FailedMount). emptyDir is a directory that lives as long as the pod, hostPath an
existing path of this machine. A container's `volumeMounts` become `Mount`s; projections are
always read-only, as the kubelet mounts them.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from engine.cluster.node.env import ContainerConfigError, expand, field_value
from engine.cluster.node.sources import Kind, Sources

DEFAULT_MODE = 0o644
MAX_MODE = 0o777
PROJECTIONS = ("configMap", "secret", "downwardAPI")
SUPPORTED = (*PROJECTIONS, "emptyDir", "hostPath")
_DOWNWARD_FIELDS = ("metadata.name", "metadata.namespace", "metadata.uid", "metadata.labels",
                    "metadata.annotations")


@dataclass(frozen=True)
class File:
    data: bytes
    mode: int


@dataclass(frozen=True)
class Projection:
    """Files by relative path (configMap, secret, downwardAPI)."""

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


def go_quoted(value: str) -> str:
    """Go's %q: a double-quoted string with Go escapes (printable Unicode kept)."""
    escapes = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
               "\v": "\\v", "\\": "\\\\", '"': '\\"'}
    out = []
    for char in value:
        if char in escapes:
            out.append(escapes[char])
        elif char.isprintable():
            out.append(char)
        elif ord(char) < 0x80:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) <= 0xFFFF:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    return '"' + "".join(out) + '"'


def format_map(values: Mapping[str, Any]) -> str:
    """The kubelet's file format for all labels or annotations: `key="value"` lines, sorted."""
    return "\n".join(f"{key}={go_quoted(str(values[key]))}" for key in sorted(values))


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


def _object_volume(volume: Mapping[str, Any], kind_name: str, sources: Sources) -> Content:
    kind, name_field, missing_key = _OBJECT_VOLUMES[kind_name]
    source = volume[kind_name] or {}
    name, what = str(source.get(name_field) or ""), f"volume {volume.get('name')}"
    found = sources.get(kind, name)
    failed = f'MountVolume.SetUp failed for volume "{volume.get("name")}" : '
    if found is None:
        if source.get("optional"):
            return Projection()
        return Unavailable(f'{failed}{kind} "{name}" not found')
    try:
        return project(found.files, source, what=what, missing_key=missing_key)
    except _MissingKeyError as exc:
        return Unavailable(failed + str(exc))


def volume_type(volume: Mapping[str, Any]) -> str:
    """The volume's source type: the one key besides `name`."""
    return next((str(key) for key in volume if key != "name"), "")


def volume_contents(pod: Mapping[str, Any], sources: Sources) -> dict[str, Content]:
    """Every volume of a supported type, by name (the others are refused when mounted)."""
    contents: dict[str, Content] = {}
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        name, kind = str(volume.get("name")), volume_type(volume)
        if kind in _OBJECT_VOLUMES:
            contents[name] = _object_volume(volume, kind, sources)
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
