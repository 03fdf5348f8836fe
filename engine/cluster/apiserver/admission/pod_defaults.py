"""Pod defaulting as kube-apiserver's SetObjectDefaults_Pod does it, zero values included.

The pod spec, every container (init and ephemeral too) with its ports, env
field references, probes, lifecycle hooks and resources, every volume with its
source, and the container statuses' resources take the defaults of
pkg/apis/core/v1 (`SetDefaults_Pod`, `SetDefaults_PodSpec`,
`SetDefaults_Container`, `SetDefaults_Probe`, `SetDefaults_Volume`,
`SetDefaults_ResourceList`...), so what a Go client leaves at its zero value is
stored as on a real cluster. A pod template (a Job's, a CronJob's) gets the same
defaults except SetDefaults_Pod's own (service links, requests from limits, host
ports): upstream applies those to pods only. The registry's part (status on
create) is here too. Objects are copied where changed, never mutated in place.
"""

from __future__ import annotations

import re
from typing import Any

from engine.cluster.apiserver.admission.qos import qos_class
from engine.cluster.apiserver.admission.zero_values import (
    in_field,
    in_items,
    in_path,
    is_zero,
    with_pointers,
    with_values,
)
from engine.cluster.apiserver.storage.objects import Obj
from engine.cluster.quantities import milli_rounded

_SPEC_VALUES = {
    "dnsPolicy": "ClusterFirst",
    "restartPolicy": "Always",
    "schedulerName": "default-scheduler",
}
_SPEC_POINTERS = {
    "securityContext": {},
    "terminationGracePeriodSeconds": 30,
}
_POD_POINTERS = {"enableServiceLinks": True}
_CONTAINER_VALUES = {
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
    "resources": {},
}
_PROBE_VALUES = {"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
                 "failureThreshold": 3}
_HTTP_GET_VALUES = {"path": "/", "scheme": "HTTP"}
_FILE_MODE = 0o644
# Every VolumeSource member: a volume that names none of them is an emptyDir.
_VOLUME_SOURCES = frozenset((
    "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret",
    "nfs", "iscsi", "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder",
    "cephfs", "flocker", "downwardAPI", "fc", "azureFile", "configMap", "vsphereVolume",
    "quobyte", "azureDisk", "photonPersistentDisk", "projected", "portworxVolume", "scaleIO",
    "storageos", "csi", "ephemeral", "image",
))
# Source -> (value-field defaults, pointer-field defaults).
_SOURCE_DEFAULTS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "hostPath": ({}, {"type": ""}),
    "secret": ({}, {"defaultMode": _FILE_MODE}),
    "configMap": ({}, {"defaultMode": _FILE_MODE}),
    "downwardAPI": ({}, {"defaultMode": _FILE_MODE}),
    "projected": ({}, {"defaultMode": _FILE_MODE}),
    "iscsi": ({"iscsiInterface": "default"}, {}),
    "rbd": ({"pool": "rbd", "user": "admin", "keyring": "/etc/ceph/keyring"}, {}),
    "scaleIO": ({"storageMode": "ThinProvisioned", "fsType": "xfs"}, {}),
    "azureDisk": ({}, {"cachingMode": "ReadWrite", "kind": "Shared", "fsType": "ext4",
                       "readOnly": False}),
}

# docker/distribution's reference grammar, which the image pull policy default parses with.
_DOMAIN_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_PATH_PART = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_REFERENCE = re.compile(
    rf"(?P<name>(?:{_DOMAIN_PART}(?:\.{_DOMAIN_PART})*(?::[0-9]+)?/)?"
    rf"{_PATH_PART}(?:/{_PATH_PART})*)"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?"
    r"(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?"
)
_MAX_NAME = 255
_CONTAINER_STATUSES = ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses")


def pod_defaults(obj: Obj, *, creating: bool) -> Obj:
    """`obj` with its spec and status defaulted, and on create the status the registry
    starts it with."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return obj
    spec = pod_spec_defaults(spec)
    obj = {**obj, "spec": spec}
    if creating:
        status = obj.get("status")
        given = status if isinstance(status, dict) else {}
        obj["status"] = {"phase": "Pending", "qosClass": qos_class(spec), **given}
    return in_field(obj, "status", _status)


def _status(status: dict[str, Any]) -> dict[str, Any]:
    """The resources a container status reports, rounded as any resource list is."""
    def container_status(container: dict[str, Any]) -> dict[str, Any]:
        return in_field(rounded(container, "allocatedResources"), "resources", _requirements)
    for key in _CONTAINER_STATUSES:
        status = in_items(status, key, container_status)
    return status


def rounded(obj: dict[str, Any], key: str) -> dict[str, Any]:
    """SetDefaults_ResourceList on the resource list at `key`: quantities finer than a
    milli unit rounded up to one."""
    def change(resources: dict[str, Any]) -> dict[str, Any]:
        changed = {name: amount for name, value in resources.items()
                   if (amount := milli_rounded(value)) is not None}
        return {**resources, **changed} if changed else resources
    return in_field(obj, key, change)


def _requirements(requirements: dict[str, Any]) -> dict[str, Any]:
    return rounded(rounded(requirements, "limits"), "requests")


# Specs that default to themselves, by identity (each held, so its id stays its own): a
# stored pod's spec comes back unchanged with each of its status writes, and walking it
# again found nothing to add (about a tenth of a status write in the store). Only specs
# nothing changes in place get here (stored objects never are; admission copies what it
# changes). Oldest first out.
_SETTLED: dict[int, dict[str, Any]] = {}
_SETTLED_LIMIT = 2048


def pod_spec_defaults(spec: dict[str, Any]) -> dict[str, Any]:
    """A pod's spec defaulted (idempotent: a stored spec from before a default was added
    reads as it would have been stored, as kube-apiserver defaults what it reads): a
    template's defaults, then SetDefaults_Pod's."""
    if _SETTLED.get(id(spec)) is spec:
        return spec
    defaulted = _defaulted_pod_spec(spec)
    if defaulted is spec:
        if len(_SETTLED) >= _SETTLED_LIMIT:
            del _SETTLED[next(iter(_SETTLED))]
        _SETTLED[id(spec)] = spec
    return defaulted


def _defaulted_pod_spec(spec: dict[str, Any]) -> dict[str, Any]:
    spec = template_spec_defaults(with_pointers(spec, _POD_POINTERS))
    host_network = spec.get("hostNetwork") is True
    for key in ("containers", "initContainers"):
        spec = in_items(spec, key, lambda c: _pod_container(c, host_network=host_network))
    return spec


def template_spec_defaults(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec of a pod template defaulted: SetDefaults_PodSpec and the defaults of its
    containers, probes, resources and volumes, as the generated defaulters of the kinds that
    embed a PodTemplateSpec apply them."""
    spec = _service_account_alias(with_pointers(with_values(spec, _SPEC_VALUES), _SPEC_POINTERS))
    for key in ("containers", "initContainers", "ephemeralContainers"):
        spec = in_items(spec, key, container_defaults)
    spec = in_field(rounded(spec, "overhead"), "resources", _requirements)
    return in_items(spec, "volumes", _volume)


def _service_account_alias(spec: dict[str, Any]) -> dict[str, Any]:
    """The deprecated `serviceAccount` as v1's conversion treats it: read as the name when
    `serviceAccountName` is empty, and always written back equal to it."""
    name = spec.get("serviceAccountName") or spec.get("serviceAccount") or ""
    if not name:
        return spec
    if spec.get("serviceAccountName") == name and spec.get("serviceAccount") == name:
        return spec
    return {**spec, "serviceAccountName": name, "serviceAccount": name}


def image_pull_policy(image: str) -> str:
    """Always for the `latest` tag (also when no tag and no digest is given), else
    IfNotPresent, as is an image reference that does not parse."""
    match = _REFERENCE.fullmatch(image)
    if match is None or len(match["name"]) > _MAX_NAME:
        return "IfNotPresent"
    tag = match["tag"] or ("" if match["digest"] else "latest")
    return "Always" if tag == "latest" else "IfNotPresent"


def container_defaults(container: dict[str, Any]) -> dict[str, Any]:
    """SetDefaults_Container and what the generated defaulter calls for a container's parts."""
    container = with_values(container, _CONTAINER_VALUES)
    if is_zero(container.get("imagePullPolicy")):
        image = container.get("image")
        pull = image_pull_policy(image if isinstance(image, str) else "")
        container = {**container, "imagePullPolicy": pull}
    container = in_items(container, "ports", lambda port: with_values(port, {"protocol": "TCP"}))
    container = in_items(container, "env", _env_var)
    container = in_field(container, "resources", _requirements)
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        container = in_field(container, probe, _probe)
    return in_field(container, "lifecycle", _lifecycle)


def _pod_container(container: dict[str, Any], *, host_network: bool) -> dict[str, Any]:
    """A container or init container of a pod (not a template), already defaulted as a
    template's: SetDefaults_Pod's requests from limits and, with host networking, host ports
    from container ports."""
    container = _requests_from_limits(container)
    if host_network:
        container = in_items(container, "ports", _host_port)
    return container


def _host_port(port: dict[str, Any]) -> dict[str, Any]:
    if is_zero(port.get("hostPort")) and port.get("containerPort") is not None:
        return {**port, "hostPort": port["containerPort"]}
    return port


def _env_var(env: dict[str, Any]) -> dict[str, Any]:
    return in_path(env, ("valueFrom", "fieldRef"), _field_ref)


def _field_ref(selector: dict[str, Any]) -> dict[str, Any]:
    """SetDefaults_ObjectFieldSelector."""
    return with_values(selector, {"apiVersion": "v1"})


def _probe(probe: dict[str, Any]) -> dict[str, Any]:
    probe = in_field(with_values(probe, _PROBE_VALUES), "httpGet", _http_get)
    return in_field(probe, "grpc", lambda grpc: with_pointers(grpc, {"service": ""}))


def _http_get(action: dict[str, Any]) -> dict[str, Any]:
    return with_values(action, _HTTP_GET_VALUES)


def _lifecycle(lifecycle: dict[str, Any]) -> dict[str, Any]:
    for hook in ("postStart", "preStop"):
        lifecycle = in_path(lifecycle, (hook, "httpGet"), _http_get)
    return lifecycle


def _volume(volume: dict[str, Any]) -> dict[str, Any]:
    """SetDefaults_Volume (no source is an emptyDir) and the defaults of each source."""
    if not any(volume.get(source) is not None for source in _VOLUME_SOURCES):
        volume = {**volume, "emptyDir": {}}
    for source, (values, pointers) in _SOURCE_DEFAULTS.items():
        given = volume.get(source)
        if isinstance(given, dict):
            defaulted = with_pointers(with_values(given, values), pointers)
            if defaulted is not given:
                volume = {**volume, source: defaulted}
    volume = in_field(volume, "downwardAPI", _downward_api)
    volume = in_field(volume, "projected", lambda projected: in_items(projected, "sources",
                                                                      _projection))
    return in_field(volume, "ephemeral", _ephemeral)


def _downward_api(source: dict[str, Any]) -> dict[str, Any]:
    return in_items(source, "items", lambda item: in_field(item, "fieldRef", _field_ref))


def _projection(projection: dict[str, Any]) -> dict[str, Any]:
    projection = in_field(projection, "downwardAPI", _downward_api)
    return in_field(projection, "serviceAccountToken",
                    lambda token: with_pointers(token, {"expirationSeconds": 3600}))


def _ephemeral(source: dict[str, Any]) -> dict[str, Any]:
    """SetDefaults_PersistentVolumeClaimSpec and its resources' rounding on the claim
    template."""
    def claim_spec(spec: dict[str, Any]) -> dict[str, Any]:
        spec = with_pointers(spec, {"volumeMode": "Filesystem"})
        return in_field(spec, "resources", _requirements)
    return in_path(source, ("volumeClaimTemplate", "spec"), claim_spec)


def _requests_from_limits(container: dict[str, Any]) -> dict[str, Any]:
    """SetDefaults_Pod: a resource limited but not requested is requested at its limit.

    Pods only (not templates), containers and init containers (not ephemeral).
    """
    resources = container.get("resources")
    if not isinstance(resources, dict):
        return container
    limits = resources.get("limits")
    if not isinstance(limits, dict) or not limits:
        return container
    requests = resources.get("requests")
    if requests is not None and not isinstance(requests, dict):
        return container  # not a map: left as sent
    given = requests or {}
    missing = {name: value for name, value in limits.items() if name not in given}
    if not missing:
        return container
    return {**container, "resources": {**resources, "requests": {**given, **missing}}}
