"""Resource paths: which type, namespace, object and subresource a URL names.

Covers the core group (`/api/v1/...`) and named groups (`/apis/G/V/...`),
namespaced and cluster-scoped types, all-namespace collections, subresources
and the legacy `/watch/` prefix, resolved against the registry so that a CRD's
paths exist exactly while it is established.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

from engine.cluster.apiserver.errors import ApiError, not_found
from engine.cluster.apiserver.registry.registry import Registry
from engine.cluster.apiserver.registry.resources import ResourceType


@dataclass(frozen=True)
class Target:
    """What a resource URL addresses."""

    rt: ResourceType
    namespace: str | None  # None: every namespace (or a cluster-scoped type)
    name: str | None = None
    subresource: str | None = None
    watch: bool = False


def not_found_path() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource")


def group_version(segments: list[str]) -> tuple[str, str, list[str]] | None:
    """(group, version, rest) of `/api/v1/...` or `/apis/G/V/...`; None for discovery roots."""
    if segments[:1] == ["api"]:
        if len(segments) < 3:
            return None
        if segments[1] != "v1":
            raise not_found_path()
        return "", "v1", segments[2:]
    if segments[:1] == ["apis"]:
        if len(segments) < 4:
            return None
        return segments[1], segments[2], segments[3:]
    raise not_found_path()


def parse_target(registry: Registry, path: str) -> Target | None:
    """The target of a resource path; None for the discovery documents above resources."""
    segments = [unquote(s) for s in path.strip("/").split("/")]
    parsed = group_version(segments)
    if parsed is None:
        return None
    group, version, rest = parsed
    watch = rest[:1] == ["watch"]
    if watch:
        rest = rest[1:]
    if not rest:
        raise not_found_path()
    namespace: str | None = None
    if rest[0] == "namespaces" and len(rest) >= 3:
        candidate = registry.lookup(group, version, rest[2])
        if group or (candidate is not None and candidate.namespaced):
            namespace, rest = rest[1], rest[2:]
    rt = registry.lookup(group, version, rest[0])
    if rt is None or len(rest) > 3 or (namespace is not None and not rt.namespaced):
        raise not_found_path()
    name = rest[1] if len(rest) > 1 else None
    subresource = rest[2] if len(rest) > 2 else None
    if name is not None and rt.namespaced and namespace is None:
        raise not_found_path()
    if subresource is not None and subresource not in rt.subresources:
        # The apiextensions server answers a custom resource's unknown subresource itself.
        if rt.schema is not None and name:
            raise not_found(rt.group, rt.plural, name)
        raise not_found_path()
    if not name and len(rest) > 1:
        raise not_found_path()
    return Target(rt, namespace, name, subresource, watch)
