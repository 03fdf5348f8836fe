"""Who a write is by, and the `metadata.managedFields` the stored object ends up with.

Every create, update and patch through the API credits its manager (the
`fieldManager` parameter, else the User-Agent's product name) with what it
changed, as upstream's field manager does; an apply arrives with its
managedFields already worked out. The store calls `with_managed_fields` once
the object to store is final; the server's own bookkeeping writes (garbage
collection, deletion, bindings) bypass it, as they bypass upstream's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.cluster.apiserver.patch.field_manager import Scope, tracked_update
from engine.cluster.apiserver.patch.ownership_rules import as_sent, empty_object, reset_fields
from engine.cluster.apiserver.registry.registry import Registry
from engine.cluster.apiserver.registry.resources import ResourceType
from engine.cluster.apiserver.storage.objects import Obj

SERVER_MANAGER = "kube-apiserver"


@dataclass(frozen=True)
class Ownership:
    """The manager of a write, what its client sent, and (for an apply) the result."""

    manager: str
    sent: Obj | None = None  # the object the client asked for, before defaulting
    # managedFields worked out before the write (an apply's, a /scale write's)
    applied: tuple[list[dict[str, Any]] | None] | None = None

    @classmethod
    def of_apply(cls, manager: str, managed: list[dict[str, Any]] | None) -> Ownership:
        return cls(manager, applied=(managed,))

    @classmethod
    def precomputed(cls, manager: str, managed: list[dict[str, Any]] | None) -> Ownership:
        """A write whose managedFields were worked out before (through /scale)."""
        return cls(manager, applied=(managed,))


def requested_managed_fields(body: Obj) -> Any:
    """The managedFields a request body carries (None when it names none)."""
    metadata = body.get("metadata")
    return metadata.get("managedFields") if isinstance(metadata, dict) else None


def with_managed_fields(
    registry: Registry,
    rt: ResourceType,
    ownership: Ownership,
    *,
    old: Obj | None,
    new: Obj,
    subresource: str | None,
    now: str,
    before_admission: Obj | None = None,
) -> Obj:
    """`new` with the managedFields this write leaves (the key dropped when there are none).

    `before_admission` is the object as it was before mutating admission changed it, when
    it did: upstream's field manager runs before the admission plugins, so what they add (a
    pod's service account, its token volume and mounts) is no manager's."""
    if ownership.applied is not None:
        managed = ownership.applied[0]
    else:
        sent = ownership.sent if ownership.sent is not None else new
        scope = Scope(
            registry.apply_type(rt), rt.api_version, subresource or "",
            reset_fields(rt, subresource), now, empty_object(rt),
        )
        tracked = as_sent(rt, new if before_admission is None else before_admission, sent)
        managed = tracked_update(scope, old, tracked, requested_managed_fields(sent),
                                 ownership.manager)
    metadata = {k: v for k, v in new["metadata"].items() if k != "managedFields"}
    if managed:
        metadata["managedFields"] = managed
    return {**new, "metadata": metadata}
