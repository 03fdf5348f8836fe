"""The API resources the engine reads and writes, and the URL path of each.

One `Resource` per kind: the client builds every request path from it, so no
module spells a URL by hand. Job kinds are data: their resources come from the
CRDs that serve them (machines/served.py), never from a list here.
"""

from __future__ import annotations

from dataclasses import dataclass


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
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
SECRETS = Resource("", "v1", "secrets", "Secret")
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
BUILTIN_CHILDREN: dict[tuple[str, str], Resource] = {
    (r.api_version, r.kind): r
    for r in (CONFIGMAPS, SECRETS, PODS, SERVICES, SERVICE_ACCOUNTS, ROLES, ROLE_BINDINGS)
}
"""Built-in kinds a machine may declare as a job's child objects, by (apiVersion, kind)."""

STATE_MACHINES = Resource("jobmachine.dev", "v1alpha1", "statemachines", "StateMachine",
                          namespaced=False)
