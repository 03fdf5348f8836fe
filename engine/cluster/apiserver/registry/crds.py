"""CustomResourceDefinitions: acceptance, and the types they serve.

A valid CRD is accepted at once: its status says `NamesAccepted` and
`Established`, and the registry serves its versions before the create answers,
so a client can use the new kind right away. A new CRD gets the clean-up
finalizer; what it does on deletion is `controllers/crd_lifecycle.py`.
"""

from __future__ import annotations

from typing import Any

from engine.cluster.apiserver.errors import Cause, invalid
from engine.cluster.apiserver.registry.builtins import CRDS
from engine.cluster.apiserver.registry.registry import Registry
from engine.cluster.apiserver.registry.resources import ResourceType, ScalePaths
from engine.cluster.apiserver.storage.objects import Obj, TypeKey

CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"


def type_key(crd: Obj) -> TypeKey:
    spec = crd.get("spec") or {}
    return (spec.get("group", ""), (spec.get("names") or {}).get("plural", ""))


def crd_types(crd: Obj) -> tuple[list[ResourceType], ResourceType]:
    """The served versions of a CRD and its storage version, as ResourceTypes."""
    spec = crd["spec"]
    names = spec["names"]
    storage: ResourceType | None = None
    served: list[ResourceType] = []
    for version in spec["versions"]:
        subresources = version.get("subresources") or {}
        scale = scale_paths(subresources.get("scale"))
        served_subresources = {"status"} if subresources.get("status") is not None else set()
        if scale is not None:
            served_subresources.add("scale")
        rt = ResourceType(
            group=spec["group"],
            version=version["name"],
            kind=names["kind"],
            plural=names["plural"],
            singular=names.get("singular") or names["kind"].lower(),
            namespaced=spec.get("scope", "Namespaced") == "Namespaced",
            short_names=tuple(names.get("shortNames") or ()),
            categories=tuple(names.get("categories") or ()),
            subresources=frozenset(served_subresources),
            schema=(version.get("schema") or {}).get("openAPIV3Schema"),
            printer_columns=tuple(version.get("additionalPrinterColumns") or ()),
            strategic_merge=False,
            scale=scale,
        )
        if version.get("served", True):
            served.append(rt)
        if version.get("storage"):
            storage = rt
    if storage is None:
        name = crd["metadata"]["name"]
        raise ValueError(f"CustomResourceDefinition {name} has no storage version")
    return served, storage


def scale_paths(scale: Any) -> ScalePaths | None:
    """A CRD version's `subresources.scale` (validated when the CRD was written), or None."""
    if not isinstance(scale, dict):
        return None
    return ScalePaths(
        spec_replicas=scale["specReplicasPath"],
        status_replicas=scale["statusReplicasPath"],
        label_selector=scale.get("labelSelectorPath") or "",
    )


def prepare_crd(obj: Obj, old: Obj | None, registry: Registry, *, now: str) -> Obj:
    """Give a validated CRD the status (names, conditions, stored versions) and the cleanup
    finalizer the real server gives it; a CRD may not redefine a built-in type."""
    plural = obj["spec"]["names"]["plural"]
    if registry.is_builtin(type_key(obj)):
        cause = Cause("spec.names.plural", f'Invalid value: "{plural}": a built-in resource')
        raise invalid(CRDS.group, CRDS.kind, obj["metadata"].get("name", ""), [cause])
    spec = obj["spec"]
    names = spec["names"]
    accepted = {
        "plural": names["plural"],
        "singular": names.get("singular") or names["kind"].lower(),
        "kind": names["kind"],
        "listKind": names.get("listKind") or f"{names['kind']}List",
        **({"shortNames": names["shortNames"]} if names.get("shortNames") else {}),
        **({"categories": names["categories"]} if names.get("categories") else {}),
    }
    previous = (old or obj).get("status") or {}
    stored = list(previous.get("storedVersions") or [])
    storage_version = next(v["name"] for v in spec["versions"] if v.get("storage"))
    if storage_version not in stored:
        stored.append(storage_version)
    status = {
        **previous,
        "acceptedNames": accepted,
        "storedVersions": stored,
        "conditions": _conditions(previous.get("conditions") or [], now),
    }
    metadata = dict(obj["metadata"])
    finalizers = metadata.get("finalizers") or []
    if old is None and CLEANUP_FINALIZER not in finalizers:
        metadata["finalizers"] = [*finalizers, CLEANUP_FINALIZER]
    return {**obj, "metadata": metadata, "status": status}


def _conditions(current: list[dict[str, Any]], now: str) -> list[dict[str, Any]]:
    wanted = {
        "NamesAccepted": ("NoConflicts", "no conflicts found"),
        "Established": ("InitialNamesAccepted", "the initial names have been accepted"),
    }
    conditions = [c for c in current if c.get("type") not in wanted or c.get("status") == "True"]
    present = {c.get("type") for c in conditions}
    for kind, (reason, message) in wanted.items():
        if kind not in present:
            conditions.append(
                {"type": kind, "status": "True", "lastTransitionTime": now, "reason": reason,
                 "message": message}
            )
    return conditions
