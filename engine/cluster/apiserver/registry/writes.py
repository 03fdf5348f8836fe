"""The metadata and status rules every write follows, as the real API server applies them.

Pure functions from (request body, stored object) to the object to store:
which metadata the server owns (uid, creationTimestamp, generation,
deletion fields), how the status subresource separates status from the rest,
when generation moves, and which preconditions turn into 400/409/422.
"""

from __future__ import annotations

import secrets
import uuid
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from engine.cluster.apiserver.errors import Cause, bad_request, conflict, invalid
from engine.cluster.apiserver.registry.builtins import Generation, Strategy
from engine.cluster.apiserver.registry.resources import ResourceType
from engine.cluster.apiserver.registry.storage_keys import precondition_failed
from engine.cluster.apiserver.storage.objects import Obj
from engine.cluster.apiserver.validation.field_errors import invalid as invalid_value

# What the server alone sets: a client's values for these are replaced.
SERVER_METADATA = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
)
# What a client may send but the server ignores on create.
_CLIENT_IGNORED = ("resourceVersion", "selfLink", "managedFields")
_NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_MAX_GENERATED_BASE = 58
LATEST_RV_MESSAGE = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def timestamp(seconds: float) -> str:
    """RFC 3339 in whole seconds, UTC, as Kubernetes writes its timestamps."""
    return _whole_seconds(int(seconds))


@lru_cache(maxsize=64)
def _whole_seconds(seconds: int) -> str:
    """Formatted once per second: a write reads the clock several times (creation time,
    managed fields), and datetime's strftime takes 10-17 µs each on the 2-core build
    machine."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_timestamp(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def generated_name(base: str) -> str:
    """generateName plus the real server's random five-character suffix."""
    suffix = "".join(secrets.choice(_NAME_SUFFIX_ALPHABET) for _ in range(5))
    return base[:_MAX_GENERATED_BASE] + suffix


def body_metadata(body: Obj) -> dict[str, Any]:
    metadata = body.get("metadata")
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise bad_request("metadata must be an object")
    return metadata


def check_type(rt: ResourceType, body: Obj) -> None:
    """400 when the body names another kind or version than the URL serves."""
    kind = body.get("kind")
    api_version = body.get("apiVersion")
    if kind not in (None, "", rt.kind) or api_version not in (None, "", rt.api_version):
        raise bad_request(
            f"the API version in the data ({api_version}) does not match the expected API version "
            f"({rt.api_version})"
            if api_version not in (None, "", rt.api_version)
            else f"{kind} in version \"{rt.version}\" cannot be handled as a {rt.kind}: "
            f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})"
        )


def check_identity(rt: ResourceType, body: Obj, namespace: str, name: str | None) -> None:
    """400 when the body names another object or namespace than the URL."""
    metadata = body_metadata(body)
    body_ns = metadata.get("namespace")
    if rt.namespaced and body_ns not in (None, "", namespace):
        raise bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    if name is not None and metadata.get("name") not in (None, name):
        raise bad_request(
            f"the name of the object ({metadata.get('name')}) does not match the name on the URL "
            f"({name})"
        )


_OMITTED_WHEN_EMPTY = ("labels", "annotations", "finalizers", "ownerReferences")
"""ObjectMeta's collections tagged omitempty: empty (or null) they are not stored, so a
patch that removes the last finalizer leaves no `finalizers: []` behind."""


def _without_empty_collections(metadata: dict[str, object]) -> dict[str, object]:
    for key in _OMITTED_WHEN_EMPTY:
        if key in metadata and metadata[key] in (None, {}, []):
            del metadata[key]
    return metadata


def prepare_create(
    rt: ResourceType, body: Obj, namespace: str, *, now: str, strategy: Strategy
) -> Obj:
    """The object to store for a create: the body with server-owned metadata set."""
    check_type(rt, body)
    check_identity(rt, body, namespace, None)
    metadata = {
        key: value
        for key, value in body_metadata(body).items()
        if key not in SERVER_METADATA and key not in _CLIENT_IGNORED
    }
    if rt.namespaced:
        metadata["namespace"] = namespace
    else:
        metadata.pop("namespace", None)
    metadata["uid"] = str(uuid.uuid4())
    metadata["creationTimestamp"] = now
    if strategy.generation is not Generation.NONE:
        metadata["generation"] = 1
    _without_empty_collections(metadata)
    obj = {**body, "apiVersion": rt.api_version, "kind": rt.kind, "metadata": metadata}
    if rt.has_status and not strategy.keep_status_on_create:
        obj.pop("status", None)
    return obj


def check_resource_version(
    rt: ResourceType, body: Obj, old: Obj, *, strategy: Strategy, name: str
) -> None:
    """409 on a stale resourceVersion; 422 when this kind needs one and none came."""
    wanted = body_metadata(body).get("resourceVersion")
    if wanted in (None, ""):
        if not strategy.unconditional_update:
            cause = Cause("metadata.resourceVersion", "must be specified for an update")
            raise invalid(rt.group, rt.kind, name, [cause])
        return
    if str(wanted) != old["metadata"]["resourceVersion"]:
        raise conflict(rt.group, rt.plural, name, LATEST_RV_MESSAGE)


def check_uid(rt: ResourceType, body: Obj, old: Obj, name: str) -> None:
    """409 when the body carries a uid that is not the stored object's (an update's implicit
    precondition; a patch's is `check_uid_kept`)."""
    uid = body_metadata(body).get("uid")
    metadata = old["metadata"]
    if uid not in (None, "") and uid != metadata.get("uid"):
        raise precondition_failed(rt, metadata.get("namespace", ""), name, "UID", wanted=uid,
                                  actual=metadata.get("uid"))


def check_uid_kept(rt: ResourceType, body: Obj, old: Obj, name: str) -> None:
    """422 when a patched or applied object carries a uid that is not the stored object's.
    A patch has no implicit precondition (kube-apiserver's patcher passes no object to take
    one from), so its uid meets ValidateObjectMetaUpdate: `metadata.uid` is immutable.
    Controllers rely on that 422 to learn that a name now holds another object."""
    uid = body_metadata(body).get("uid")
    if uid not in (None, "") and uid != old["metadata"].get("uid"):
        raise invalid(rt.group, rt.kind, name, [invalid_value("metadata.uid", uid,
                                                              "field is immutable")])


def prepare_update(rt: ResourceType, body: Obj, old: Obj, subresource: str | None) -> Obj:
    """The object to store for an update of the main resource or of its status."""
    if subresource == "status":
        return with_status(old, body.get("status"))
    if subresource == "finalize":
        spec = dict(old.get("spec") or {})
        spec["finalizers"] = list((body.get("spec") or {}).get("finalizers") or [])
        return {**old, "spec": spec, "metadata": dict(old["metadata"])}
    old_meta = old["metadata"]
    metadata = {
        key: value
        for key, value in body_metadata(body).items()
        if key not in SERVER_METADATA and key not in ("selfLink", "managedFields")
    }
    for key in (*SERVER_METADATA, "name", "namespace"):
        if key in old_meta:
            metadata[key] = old_meta[key]
        else:
            metadata.pop(key, None)
    _without_empty_collections(metadata)
    new = {**body, "apiVersion": rt.api_version, "kind": rt.kind, "metadata": metadata}
    if rt.has_status:
        new.pop("status", None)
        if "status" in old:
            new["status"] = old["status"]
    return new


def with_status(old: Obj, status: Any) -> Obj:
    """`old` with only its status replaced (what a /status write may change)."""
    new = {**old, "metadata": dict(old["metadata"])}
    if status is None:
        new.pop("status", None)
    else:
        new["status"] = status
    return new


def generation_moves(rt: ResourceType, new: Obj, old: Obj, generation: Generation) -> bool:
    """Whether an update moves metadata.generation, as the kind's PrepareForUpdate decides:
    a change of `spec` (built-in kinds that keep one), or of anything but metadata (and
    status, when it is a subresource) for custom resources."""
    if generation is Generation.SPEC:
        return new.get("spec") != old.get("spec")
    if generation is Generation.SPEC_OR_ANNOTATIONS:
        return new.get("spec") != old.get("spec") or (
            (new["metadata"].get("annotations") or {}) != (old["metadata"].get("annotations") or {})
        )
    if generation is not Generation.CONTENT:
        return False
    ignored = {"metadata", "apiVersion", "kind", "status"} if rt.has_status else {
        "metadata",
        "apiVersion",
        "kind",
    }
    keys = (set(new) | set(old)) - ignored
    return any(new.get(key) != old.get(key) for key in keys)


def unchanged(new: Obj, old: Obj) -> bool:
    """A write that changes nothing is not a write: no new resourceVersion, no event."""
    if new.keys() != old.keys():
        return False
    for key, value in new.items():
        if key == "metadata":
            old_meta = old["metadata"]
            meta_keys = (set(value) | set(old_meta)) - {"resourceVersion"}
            if any(value.get(k) != old_meta.get(k) for k in meta_keys):
                return False
        elif value != old[key]:
            return False
    return True


def new_finalizer_causes(new: Obj, old: Obj) -> list[Cause]:
    """No finalizer may be added once deletion has started (the real server's rule)."""
    if not old["metadata"].get("deletionTimestamp"):
        return []
    before = set(old["metadata"].get("finalizers") or ())
    added = [f for f in new["metadata"].get("finalizers") or () if f not in before]
    if not added:
        return []
    listed = ", ".join(f'"{f}"' for f in added)
    message = (
        "Forbidden: no new finalizers can be added if the object is being deleted, "
        f"found new finalizers []string{{{listed}}}"
    )
    return [Cause("metadata.finalizers", message, "FieldValueForbidden")]


def bump_generation(new: Obj, old: Obj) -> None:
    new["metadata"]["generation"] = int(old["metadata"].get("generation") or 0) + 1
