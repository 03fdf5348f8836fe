"""A container's environment and command line, resolved from the pod and the ConfigMaps and
Secrets it refers to, as the kubelet does, pure.

Supports `value`, `valueFrom.fieldRef` (the downward API fields a job needs),
`valueFrom.configMapKeyRef` and `valueFrom.secretKeyRef` (with `optional`), and `envFrom`
with `configMapRef`/`secretRef` and `prefix` (read first, so `env` overrides it and may
refer to it), and `$(VAR)` references in values, command and args. A missing ConfigMap,
Secret or key that is not optional is a `MissingSourceError`: the container waits for it,
as with the kubelet. What the local node cannot provide at all (resource fields, other
field paths) is a `ContainerConfigError` naming the variable, so the container fails with a
message instead of running with a silently missing value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from engine.cluster.node.config.sources import (
    Kind,
    MissingSourceError,
    SourceObject,
    Sources,
    not_found,
)
from engine.cluster.node.runtime.images import entrypoint

POD_IP = "127.0.0.1"

_REFERENCE = re.compile(r"\$(\$|\(([A-Za-z_][A-Za-z0-9_.-]*)\))")
_KEYED_FIELD = re.compile(r"^metadata\.(labels|annotations)\['([^']*)'\]$")
_SUPPORTED = (
    "metadata.name, metadata.namespace, metadata.uid, metadata.labels['KEY'], "
    "metadata.annotations['KEY'], status.podIP, status.hostIP, spec.nodeName, "
    "spec.serviceAccountName"
)


class ContainerConfigError(Exception):
    """The container's spec asks for something the local node cannot give it."""

    def __init__(self, message: str, *, reason: str = "CreateContainerConfigError") -> None:
        super().__init__(message)
        self.reason = reason


def expand(text: str, variables: Mapping[str, str]) -> str:
    """Kubernetes `$(VAR)` expansion: defined names are replaced, `$$` is a literal `$`,
    anything else is left as written."""

    def replace(match: re.Match[str]) -> str:
        if match.group(1) == "$":
            return "$"
        name = match.group(2)
        return variables.get(name, match.group(0))

    return _REFERENCE.sub(replace, text)


def field_value(pod: Mapping[str, Any], path: str) -> str:
    """The value of a downward API `fieldRef.fieldPath` for this pod."""
    metadata = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    keyed = _KEYED_FIELD.match(path)
    if keyed:
        return str((metadata.get(keyed.group(1)) or {}).get(keyed.group(2), ""))
    simple = {
        "metadata.name": metadata.get("name"),
        "metadata.namespace": metadata.get("namespace"),
        "metadata.uid": metadata.get("uid"),
        "status.podIP": POD_IP,
        "status.hostIP": POD_IP,
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName") or "default",
    }
    if path not in simple:
        raise ContainerConfigError(
            f"fieldRef.fieldPath {path!r} is not supported by the local node "
            f"(supported: {_SUPPORTED})"
        )
    return str(simple[path] or "")


_KEY_REFS: Mapping[str, tuple[Kind, str]] = {
    "configMapKeyRef": ("configmap", "ConfigMap"),
    "secretKeyRef": ("secret", "Secret"),
}


def _key_value(pod: Mapping[str, Any], ref_kind: str, ref: Mapping[str, Any],
               sources: Sources) -> str | None:
    """The value of a configMapKeyRef or secretKeyRef; None when optional and missing."""
    kind, title = _KEY_REFS[ref_kind]
    name, key, optional = str(ref.get("name") or ""), str(ref.get("key") or ""), bool(
        ref.get("optional"))
    found = sources.get(kind, name)
    if found is None:
        if optional:
            return None
        raise not_found(kind, name)
    if key not in found.strings:
        if optional:
            return None
        namespace = (pod.get("metadata") or {}).get("namespace")
        raise MissingSourceError(f"couldn't find key {key} in {title} {namespace}/{name}")
    return found.strings[key]


def _entry_value(pod: Mapping[str, Any], entry: Mapping[str, Any], known: dict[str, str],
                 sources: Sources) -> str | None:
    """The variable's value; None when it is left out (an optional reference that is missing)."""
    name = entry.get("name")
    source = entry.get("valueFrom")
    if entry.get("value") or not source:
        return expand(str(entry.get("value") or ""), known)
    kinds = sorted(source) if isinstance(source, Mapping) else []
    for ref_kind in _KEY_REFS:
        if isinstance(source, Mapping) and source.get(ref_kind):
            return _key_value(pod, ref_kind, source[ref_kind], sources)
    field_ref = source.get("fieldRef") if isinstance(source, Mapping) else None
    if not field_ref:
        what = ", ".join(kinds) if kinds else repr(source)
        raise ContainerConfigError(
            f"env {name}: valueFrom.{what} is not supported by the local node "
            "(supported: value, valueFrom.fieldRef, configMapKeyRef and secretKeyRef)"
        )
    try:
        return field_value(pod, str(field_ref.get("fieldPath") or ""))
    except ContainerConfigError as exc:
        raise ContainerConfigError(f"env {name}: {exc}") from exc


def valid_env_name(name: str) -> bool:
    """Kubernetes 1.32's rule for names (RelaxedEnvironmentVariableValidation, on by default
    from 1.32): printable ASCII except `=`, not empty."""
    return bool(name) and all(" " <= c <= "~" and c != "=" for c in name)


_ENV_FROM_REFS: tuple[tuple[str, Kind], ...] = (("configMapRef", "configmap"),
                                                ("secretRef", "secret"))


def _env_from_source(entry: Mapping[str, Any], sources: Sources
                     ) -> tuple[Kind, str, SourceObject | None]:
    """The object an envFrom entry reads (None: optional and missing)."""
    for key, kind in _ENV_FROM_REFS:
        ref = entry.get(key)
        if isinstance(ref, Mapping):
            name = str(ref.get("name") or "")
            found = sources.get(kind, name)
            if found is None and not ref.get("optional"):
                raise not_found(kind, name)
            return kind, name, found
    raise ContainerConfigError(
        "envFrom: only configMapRef and secretRef are supported by the local node")


def _env_from(pod: Mapping[str, Any], container: Mapping[str, Any], sources: Sources
              ) -> tuple[dict[str, str], list[str]]:
    """The variables of envFrom (later sources win) and the kubelet's warning for each source
    whose keys were skipped as invalid names."""
    variables: dict[str, str] = {}
    warnings: list[str] = []
    namespace = (pod.get("metadata") or {}).get("namespace")
    for entry in container.get("envFrom") or ():
        kind, name, found = _env_from_source(entry, sources)
        prefix = str(entry.get("prefix") or "")
        invalid = []
        for key, value in (found.strings if found else {}).items():
            if valid_env_name(prefix + key):
                variables[prefix + key] = value
            else:
                invalid.append(prefix + key)
        if invalid:
            title = "configMap" if kind == "configmap" else "secret"
            warnings.append(
                f"Keys [{', '.join(sorted(invalid))}] from the EnvFrom {title} "
                f"{namespace}/{name} were skipped since they are considered invalid "
                "environment variable names."
            )
    return variables, warnings


def env_from_warnings(pod: Mapping[str, Any], container: Mapping[str, Any],
                      sources: Sources) -> list[str]:
    """The InvalidEnvironmentVariableNames event messages for the container's envFrom."""
    return _env_from(pod, container, sources)[1]


def container_env(pod: Mapping[str, Any], container: Mapping[str, Any],
                  sources: Sources | None = None) -> dict[str, str]:
    """The variables the container's spec defines: envFrom first, then env in order, later
    ones seeing earlier ones."""
    sources = sources or Sources()
    resolved, _ = _env_from(pod, container, sources)
    for entry in container.get("env") or ():
        value = _entry_value(pod, entry, resolved, sources)
        if value is not None:
            resolved[str(entry.get("name"))] = value
    return resolved


def command_line(container: Mapping[str, Any], env: Mapping[str, str]) -> list[str]:
    """command + args with `$(VAR)` expanded. Without a command, an image the local node
    knows (images.py) runs its stand-in entrypoint with the args; for any other image the
    args alone are the command line, and with neither there is nothing to run (the local
    node has no image entrypoints)."""
    command = [expand(str(part), env) for part in container.get("command") or ()]
    args = [expand(str(part), env) for part in container.get("args") or ()]
    if not command:
        command = entrypoint(str(container.get("image") or "")) or []
    if not command and not args:
        image = container.get("image")
        raise ContainerConfigError(
            f"container {container.get('name')} has neither command nor args, and the local "
            f"node does not know how to run image {image!r} as a process: process mode "
            "ignores images and needs a command",
            reason="NoCommand",
        )
    return [*command, *args]
