"""What a served resource type is: names, scope, verbs, subresources and schema.

One `ResourceType` per (group, version, plural). Built-in types are declared
once in `builtins.py`; a CustomResourceDefinition adds its own when it becomes
Established. Discovery, OpenAPI, Tables, routing and storage all read these
records, so the names a client sees can never disagree between endpoints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ALL_VERBS: tuple[str, ...] = (
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
)


@dataclass(frozen=True)
class ScalePaths:
    """Where a resource keeps what its `scale` subresource shows: a CRD version's
    `subresources.scale` paths (dot notation, leading dot; no selector path is ""), or for a
    built-in workload the path of the selector object its registry formats as text."""

    spec_replicas: str
    status_replicas: str
    label_selector: str = ""  # a string the resource keeps ready (custom resources)
    spec_selector: str = ""  # a LabelSelector or a plain label map (built-in workloads)


@dataclass(frozen=True)
class ResourceType:
    """One servable resource: enough for discovery, routing, storage and printing."""

    group: str  # "" for the core group
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: frozenset[str] = frozenset()  # e.g. {"status", "log", "binding", "scale"}
    verbs: tuple[str, ...] = ALL_VERBS
    # openAPIV3Schema of a CRD version; None for built-ins (validated in code).
    schema: dict[str, Any] | None = None
    # additionalPrinterColumns of a CRD version (dicts as in the CRD).
    printer_columns: tuple[dict[str, Any], ...] = ()
    # Built-in kinds get strategic merge patch; custom resources do not.
    strategic_merge: bool = True
    # The paths behind the `scale` subresource of a custom resource that declares it.
    scale: ScalePaths | None = None

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    @property
    def key(self) -> tuple[str, str]:
        """Storage identity: objects are stored per (group, plural), whatever the version."""
        return (self.group, self.plural)
