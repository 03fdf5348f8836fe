"""Discovery documents: /version, /api, /apis, /apis/G and the APIResourceLists.

kubectl and the official client learn every resource name, short name, verb
and scope from these documents, so they are built from the same
`ResourceType` records the server routes by. Only the legacy (unaggregated)
documents are served: kubectl asks for aggregated discovery first and, given a
plain `application/json` answer, falls back to these.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.cluster.apiserver.registry.resources import ResourceType

# The kubectl dispatcher runs `kubectl.<major>.<minor>` for the version it
# reads here, so this must look like a real release.
KUBERNETES_VERSION = "v1.32.4"
_BUILD_DATE = "2025-04-22T16:02:27Z"
_GO_VERSION = "go1.23.6"


@dataclass(frozen=True)
class _Subresource:
    kind: str
    verbs: tuple[str, ...]
    group: str | None = None  # set when the subresource's kind lives in another group
    version: str | None = None


# What each subresource accepts and which kind it takes or returns, as the
# real API server advertises them.
_SUBRESOURCES: dict[str, _Subresource] = {
    "status": _Subresource("", ("get", "patch", "update")),
    "log": _Subresource("Pod", ("get",)),
    "binding": _Subresource("Binding", ("create",)),
    "eviction": _Subresource("Eviction", ("create",), "policy", "v1"),
    "exec": _Subresource("PodExecOptions", ("create", "get")),
    "attach": _Subresource("PodAttachOptions", ("create", "get")),
    "portforward": _Subresource("PodPortForwardOptions", ("create", "get")),
    "ephemeralcontainers": _Subresource("", ("get", "patch", "update")),
    "finalize": _Subresource("", ("update",)),
    "scale": _Subresource("Scale", ("get", "patch", "update"), "autoscaling", "v1"),
    "token": _Subresource("TokenRequest", ("create",), "authentication.k8s.io", "v1"),
}

# Built-in kinds a real server stores in another version than it serves (the
# storage version hash is derived from the stored one).
_BUILTIN_STORAGE_VERSIONS: dict[tuple[str, str], str] = {
    ("apiextensions.k8s.io", "customresourcedefinitions"): "v1beta1",
}

_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_info() -> dict[str, str]:
    """The /version document, shaped like a real kube-apiserver's."""
    major, minor, _ = KUBERNETES_VERSION.removeprefix("v").split(".")
    return {
        "major": major,
        "minor": minor,
        "gitVersion": f"{KUBERNETES_VERSION}-jobmachine",
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": _BUILD_DATE,
        "goVersion": _GO_VERSION,
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def api_versions(*, server_address: str = "127.0.0.1:6443") -> dict[str, Any]:
    """The /api document: the legacy core group, served only as v1."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def api_group_list(types: Sequence[ResourceType]) -> dict[str, Any]:
    """The /apis document: every named group with its versions, preferred first."""
    groups = [_api_group_body(name, types) for name in _group_names(types)]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(group: str, types: Sequence[ResourceType]) -> dict[str, Any]:
    """The /apis/G document; raises KeyError when no type belongs to the group."""
    if group == "" or not any(rt.group == group for rt in types):
        raise KeyError(group)
    return {"kind": "APIGroup", "apiVersion": "v1", **_api_group_body(group, types)}


def api_resource_list(
    group: str,
    version: str,
    types: Sequence[ResourceType],
    *,
    storage_versions: Mapping[tuple[str, str], str] | None = None,
) -> dict[str, Any]:
    """The /api/v1 or /apis/G/V document: resources and their subresources.

    `storage_versions` maps a type's storage key (group, plural) to the version
    its objects are stored in (a multi-version CRD's storage version); by
    default a type is stored in the version it is served in. Raises KeyError
    when nothing is served at that group version.
    """
    served = [rt for rt in types if rt.group == group and rt.version == version]
    if not served:
        raise KeyError(f"{group}/{version}")
    resources: list[dict[str, Any]] = []
    for rt in sorted(served, key=lambda rt: rt.plural):
        stored = (storage_versions or {}).get(rt.key) or _BUILTIN_STORAGE_VERSIONS.get(rt.key)
        resources.append(_resource_entry(rt, stored or rt.version))
        resources.extend(_subresource_entry(rt, name) for name in sorted(rt.subresources))
    group_version = f"{group}/{version}" if group else version
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }


def storage_version_hash(group: str, version: str, kind: str) -> str:
    """The opaque hash the real server derives from the storage version of a kind."""
    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def version_sort_key(version: str) -> tuple[int, int, int, str]:
    """Kubernetes' version priority: GA before beta before alpha, higher numbers first."""
    match = _VERSION_RE.match(version)
    if match is None:
        return (3, 0, 0, version)
    major, stability, minor = match.groups()
    rank = {None: 0, "beta": 1, "alpha": 2}[stability]
    return (rank, -int(major), -int(minor or 0), version)


def group_versions(group: str, types: Sequence[ResourceType]) -> list[str]:
    """The versions served for a group, the preferred one first."""
    versions = {rt.version for rt in types if rt.group == group}
    return sorted(versions, key=version_sort_key)


def _group_names(types: Sequence[ResourceType]) -> list[str]:
    names: dict[str, None] = {}
    for rt in types:
        if rt.group:
            names.setdefault(rt.group)
    return list(names)


def _api_group_body(group: str, types: Sequence[ResourceType]) -> dict[str, Any]:
    versions = [
        {"groupVersion": f"{group}/{version}", "version": version}
        for version in group_versions(group, types)
    ]
    return {"name": group, "versions": versions, "preferredVersion": versions[0]}


def _resource_entry(rt: ResourceType, storage_version: str) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": rt.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    if rt.verbs != ("create",):  # reviews are never stored, so they have no storage version
        entry["storageVersionHash"] = storage_version_hash(rt.group, storage_version, rt.kind)
    return entry


def _subresource_entry(rt: ResourceType, name: str) -> dict[str, Any]:
    known = _SUBRESOURCES.get(name)
    if known is None:
        raise ValueError(f"subresource {rt.plural}/{name} has no discovery entry; add it here")
    entry: dict[str, Any] = {
        "name": f"{rt.plural}/{name}",
        "singularName": "",
        "namespaced": rt.namespaced,
        "kind": known.kind or rt.kind,
        "verbs": list(known.verbs),
    }
    if known.group is not None:
        entry["group"] = known.group
        entry["version"] = known.version
    return entry
