"""The job kinds a `JobClient` reaches: every kind a machine on the cluster governs.

Kinds are data, added and removed at run time, so the client asks the cluster at each
call (its StateMachine objects and served CRDs, read the way `jobmachine graph --job`
reads them) instead of keeping a list; this module answers "which resource serves this
kind" from that answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.app.job_graph import governed_kinds
from engine.kube.client import KubeClient
from engine.kube.resources import Resource
from engine.sdk.errors import InvalidJobError, UnknownKindError


@dataclass(frozen=True)
class Kinds:
    """Kind -> the resource serving it, for the kinds the cluster's machines govern."""

    resources: Mapping[str, Resource]

    @classmethod
    def of_cluster(cls, client: KubeClient) -> Kinds:
        """The kinds governed now."""
        return cls(governed_kinds(client))

    def resource(self, kind: str) -> Resource:
        """The resource serving `kind`; UnknownKindError when no machine governs it."""
        found = self.resources.get(kind)
        if found is None:
            raise UnknownKindError(kind, self.resources)
        return found

    def searched(self, kind: str | None) -> dict[str, Resource]:
        """The kinds a lookup covers: `kind` alone when given, else every governed kind."""
        if kind is None:
            return dict(self.resources)
        return {kind: self.resource(kind)}

    def of_document(self, job: Mapping[str, Any]) -> Resource:
        """The resource a job document is created in, checked against its apiVersion."""
        kind = job.get("kind")
        if not isinstance(kind, str) or not kind:
            raise InvalidJobError("the job document has no kind")
        resource = self.resource(kind)
        api_version = job.get("apiVersion")
        if api_version != resource.api_version:
            raise InvalidJobError(
                f"{kind} is governed as {resource.api_version}, but the document says "
                f"apiVersion {api_version!r}"
            )
        return resource
