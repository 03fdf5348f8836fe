"""A container's environment and command line, resolved from the pod as the kubelet does, pure.

Supports `value` and `valueFrom.fieldRef` (the downward API fields a job needs)
and `$(VAR)` references in values, command and args. Anything the local node
cannot provide (secrets, config maps, resource fields, `envFrom`) is a
`ContainerConfigError` naming the variable, so the container fails with a message
instead of running with a silently missing value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

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


def _entry_value(pod: Mapping[str, Any], entry: Mapping[str, Any], known: dict[str, str]) -> str:
    name = entry.get("name")
    source = entry.get("valueFrom")
    if not source:
        return expand(str(entry.get("value") or ""), known)
    field_ref = source.get("fieldRef") if isinstance(source, Mapping) else None
    if not field_ref:
        kinds = ", ".join(sorted(source)) if isinstance(source, Mapping) else repr(source)
        raise ContainerConfigError(
            f"env {name}: valueFrom.{kinds} is not supported by the local node "
            "(supported: value and valueFrom.fieldRef)"
        )
    try:
        return field_value(pod, str(field_ref.get("fieldPath") or ""))
    except ContainerConfigError as exc:
        raise ContainerConfigError(f"env {name}: {exc}") from exc


def container_env(pod: Mapping[str, Any], container: Mapping[str, Any]) -> dict[str, str]:
    """The variables the container's spec defines, in order, later ones seeing earlier ones."""
    if container.get("envFrom"):
        raise ContainerConfigError(
            "envFrom is not supported by the local node (use env with value or valueFrom.fieldRef)"
        )
    resolved: dict[str, str] = {}
    for entry in container.get("env") or ():
        resolved[str(entry.get("name"))] = _entry_value(pod, entry, resolved)
    return resolved


def command_line(container: Mapping[str, Any], env: Mapping[str, str]) -> list[str]:
    """command + args with `$(VAR)` expanded; an image's entrypoint is not available, so a
    container with neither cannot run."""
    argv = [*(container.get("command") or ()), *(container.get("args") or ())]
    if not argv:
        raise ContainerConfigError(
            f"container {container.get('name')} has neither command nor args: the local node "
            "ignores images, so it has nothing to run",
            reason="NoCommand",
        )
    return [expand(str(part), env) for part in argv]
