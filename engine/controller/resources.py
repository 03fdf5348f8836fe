"""The API resources the engine reads and writes, and the URL path of each.

One `Resource` per kind: the client builds every request path from it, so no
module spells a URL by hand. Job kinds come from `engine.api.kinds`, the same
records the CRDs are generated from, so the engine and its CRDs cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.api.kinds import KINDS


@dataclass(frozen=True)
class Resource:
    """A resource type of the API: group ("" for core), version, plural and kind."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        """`v1` for the core group, else `group/version`."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(
        self,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> str:
        """The URL path of the collection, or of one object (and its subresource)."""
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace is not None:
            prefix += f"/namespaces/{namespace}"
        path = f"{prefix}/{self.plural}"
        if name is not None:
            path += f"/{name}"
            if subresource is not None:
                path += f"/{subresource}"
        elif subresource is not None:
            raise ValueError(f"subresource {subresource!r} needs an object name")
        return path


PODS = Resource("", "v1", "pods", "Pod")
SERVICES = Resource("", "v1", "services", "Service")
EVENTS = Resource("", "v1", "events", "Event")
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")

JOB_RESOURCES: dict[str, Resource] = {
    kind.kind: Resource(kind.group, kind.version, kind.plural, kind.kind)
    for kind in KINDS
    if kind.scope == "Namespaced"
}
"""Every job kind the engine can run, by kind name (PyTorchJob, TFJob, MachineJob)."""

STATE_MACHINES = next(
    Resource(kind.group, kind.version, kind.plural, kind.kind, namespaced=False)
    for kind in KINDS
    if kind.kind == "StateMachine"
)
