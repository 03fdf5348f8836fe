"""Pod specs and pod templates, validated wherever they appear: a Pod, a Job's template.

The checks of ValidatePodSpec this server makes (containers: names, images,
ports, env; the restart policy; volumes) take the path of the spec they judge,
so a Job's template reads `spec.template.spec.containers[0].image` exactly as a
Pod reads `spec.containers[0].image`. A template adds ValidatePodTemplateSpec's
own: its labels and annotations (upstream names them `<template>.labels` and
`<template>.annotations`, without `metadata`) and no ephemeral containers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from engine.cluster.apiserver.errors import Cause
from engine.cluster.apiserver.validation.field_errors import (
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    too_long,
)
from engine.cluster.apiserver.validation.names import (
    dns1123_label_errors,
    label_key_errors,
    label_value_errors,
)

_PORT_RANGE = "must be between 1 and 65535, inclusive"
PROTOCOLS = ("SCTP", "TCP", "UDP")
RESTART_POLICIES = ("Always", "OnFailure", "Never")
_IANA_NAME = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?")
_ANNOTATIONS_LIMIT = 256 * 1024
Spec = Mapping[str, Any]


def port_errors(path: str, value: Any) -> list[Cause]:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        return [invalid(path, value, _PORT_RANGE)]
    return []


def port_name_errors(path: str, name: str) -> list[Cause]:
    if len(name) > 15:
        return [invalid(path, name, "must be no more than 15 characters")]
    if not _IANA_NAME.fullmatch(name) or "--" in name or not re.search("[a-z]", name):
        return [
            invalid(
                path,
                name,
                "must contain only alpha-numeric characters (a-z, 0-9), and "
                "hyphens (-), must contain at least one letter (a-z), hyphens cannot be "
                "adjacent to other hyphens, and must start and end with alphanumeric",
            )
        ]
    return []


def pod_spec_causes(spec: Spec, path: str) -> list[Cause]:
    """What is wrong with the pod spec at `path` ("spec" for a pod)."""
    containers = spec.get("containers") or []
    causes: list[Cause] = [] if containers else [required(f"{path}.containers")]
    seen: set[str] = set()
    for key in ("initContainers", "containers"):
        for index, container in enumerate(spec.get(key) or []):
            where = f"{path}.{key}[{index}]"
            causes += _container_causes(container, where)
            if container.get("name") in seen:
                causes.append(duplicate(f"{where}.name", container["name"]))
            seen.add(container.get("name") or "")
    policy = spec.get("restartPolicy")
    if policy is not None and policy not in RESTART_POLICIES:
        causes.append(not_supported(f"{path}.restartPolicy", policy, RESTART_POLICIES))
    volumes: set[str] = set()
    for index, volume in enumerate(spec.get("volumes") or []):
        name = volume.get("name") or ""
        where = f"{path}.volumes[{index}].name"
        causes += (
            [invalid(where, name, e) for e in dns1123_label_errors(name)]
            if name
            else [required(where)]
        )
        if name in volumes:
            causes.append(duplicate(where, name))
        volumes.add(name)
    return causes


def pod_template_causes(template: Spec, path: str) -> list[Cause]:
    """ValidatePodTemplateSpec for the template at `path` ("spec.template" for a Job)."""
    metadata = template.get("metadata") or {}
    causes: list[Cause] = []
    for key, value in (metadata.get("labels") or {}).items():
        causes += [invalid(f"{path}.labels", key, e) for e in label_key_errors(key)]
        causes += [invalid(f"{path}.labels", value, e) for e in label_value_errors(str(value))]
    annotations = metadata.get("annotations") or {}
    for key in annotations:
        causes += [invalid(f"{path}.annotations", key, e) for e in label_key_errors(key.lower())]
    if sum(len(k) + len(str(v)) for k, v in annotations.items()) > _ANNOTATIONS_LIMIT:
        causes.append(too_long(f"{path}.annotations", _ANNOTATIONS_LIMIT))
    spec = template.get("spec") or {}
    causes += pod_spec_causes(spec, f"{path}.spec")
    if spec.get("ephemeralContainers"):
        causes.append(forbidden(f"{path}.spec.ephemeralContainers",
                                "ephemeral containers not allowed in pod template"))
    return causes


def _container_causes(container: Spec, path: str) -> list[Cause]:
    causes: list[Cause] = []
    name = container.get("name")
    if not name:
        causes.append(required(f"{path}.name"))
    else:
        causes += [invalid(f"{path}.name", name, e) for e in dns1123_label_errors(name)]
    if not container.get("image"):
        causes.append(required(f"{path}.image"))
    for index, port in enumerate(container.get("ports") or []):
        port_path = f"{path}.ports[{index}]"
        causes += port_errors(f"{port_path}.containerPort", port.get("containerPort"))
        if port.get("hostPort") not in (None, 0):
            causes += port_errors(f"{port_path}.hostPort", port["hostPort"])
        if port.get("protocol", "TCP") not in PROTOCOLS:
            causes.append(not_supported(f"{port_path}.protocol", port["protocol"], PROTOCOLS))
        if port.get("name"):
            causes += port_name_errors(f"{port_path}.name", port["name"])
    for index, env in enumerate(container.get("env") or []):
        if not env.get("name"):
            causes.append(required(f"{path}.env[{index}].name"))
    return causes
