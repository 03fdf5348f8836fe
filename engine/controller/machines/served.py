"""Which job kinds the API server serves, read from the CustomResourceDefinitions it has.

A machine governs a kind only once a CRD serves it; the engine watches the CRDs
so that a machine applied before its CRD is picked up when the CRD appears.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from engine.api.kind_schemas import crd_schemas, schema_lookup
from engine.definition.cel_types import SchemaLookup
from engine.kube.resources import Resource

CRDS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
    namespaced=False,
)

Obj = dict[str, Any]

BUILT_IN_JOB_KINDS: Mapping[tuple[str, str], Resource] = {
    ("batch/v1", "Job"): Resource("batch", "v1", "jobs", "Job", namespaced=True),
    ("batch/v1", "CronJob"): Resource("batch", "v1", "cronjobs", "CronJob", namespaced=True),
    ("apps/v1", "ReplicaSet"): Resource("apps", "v1", "replicasets", "ReplicaSet",
                                        namespaced=True),
    ("v1", "ReplicationController"): Resource("", "v1", "replicationcontrollers",
                                              "ReplicationController", namespaced=True),
    ("apps/v1", "Deployment"): Resource("apps", "v1", "deployments", "Deployment",
                                        namespaced=True),
}
"""The resource of each of the language's `BUILT_IN_KINDS` (served without a CRD, by the
embedded API server too): (apiVersion, kind) -> resource."""

STAND_IN_ONLY: frozenset[tuple[str, str]] = frozenset(
    {("apps/v1", "ReplicaSet"), ("v1", "ReplicationController"), ("apps/v1", "Deployment")})
"""Built-in kinds without `managedBy`: kube-controller-manager runs every one of them in a
cluster, so the engine watches them only where it stands in for it (`jobmachine up`)."""


def project_crd(obj: Obj) -> Obj:
    """What serving a kind needs: group, names, scope, served versions, conditions; and each
    version's schema, which the machines governing the kind are typed against."""
    spec = obj.get("spec") or {}
    metadata = obj.get("metadata") or {}
    return {
        "metadata": {k: metadata[k] for k in ("name", "resourceVersion") if k in metadata},
        "spec": {
            "group": spec.get("group"),
            "scope": spec.get("scope"),
            "names": dict(spec.get("names") or {}),
            "versions": [
                {"name": v.get("name"), "served": v.get("served"),
                 "schema": v.get("schema") or {}}
                for v in spec.get("versions") or ()
            ],
        },
        "status": {"conditions": list((obj.get("status") or {}).get("conditions") or ())},
    }


def served_resources(crds: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], Resource]:
    """(apiVersion, kind) -> the resource serving it: the built-in job kinds, and every
    established CRD version."""
    found: dict[tuple[str, str], Resource] = dict(BUILT_IN_JOB_KINDS)
    for crd in crds:
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        if not _established(crd) or not names.get("kind") or not names.get("plural"):
            continue
        for version in spec.get("versions") or ():
            if not version.get("served"):
                continue
            resource = Resource(
                str(spec.get("group")), str(version.get("name")), str(names["plural"]),
                str(names["kind"]), namespaced=spec.get("scope") != "Cluster",
            )
            found[(resource.api_version, resource.kind)] = resource
    return found


def crd_schema_lookup(crds: Iterable[Mapping[str, Any]]) -> SchemaLookup:
    """(apiVersion, kind) -> the schema of that version of an established CRD."""
    return schema_lookup({key: schema for crd in crds if _established(crd)
                          for key, schema in crd_schemas(crd).items()})


def resource_of_crd(crd: Mapping[str, Any]) -> Resource:
    """The resource of a CRD's storage version (for the CRDs jobmachine installs itself)."""
    spec = crd["spec"]
    version = next(v["name"] for v in spec["versions"] if v.get("storage", True))
    return Resource(spec["group"], version, spec["names"]["plural"], spec["names"]["kind"],
                    namespaced=spec.get("scope") != "Cluster")


def _established(crd: Mapping[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)
