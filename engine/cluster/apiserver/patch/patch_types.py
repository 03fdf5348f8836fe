"""Which PATCH content types the server accepts, per kind, and what the three patch formats do.

Merge patch, JSON patch and server-side apply work for every kind; strategic
merge patch only for built-in kinds (custom resources answer 415, as on a
real cluster). Server-side apply is not a patch of the stored object but a
merge with ownership, so the store runs it through `server_side_apply.py`.
"""

from __future__ import annotations

from typing import Any

import orjson

from engine.cluster.apiserver.encoding.json_documents import check_depth
from engine.cluster.apiserver.errors import ApiError, bad_request, unsupported_media_type
from engine.cluster.apiserver.patch.patch import (
    json_patch,
    merge_patch,
    strategic_merge_patch,
)
from engine.cluster.apiserver.patch.values import PatchError
from engine.cluster.apiserver.registry.resources import ResourceType
from engine.cluster.apiserver.storage.objects import Obj

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"

_REASONS = {400: "BadRequest", 409: "Conflict", 422: "Invalid", 500: "InternalError"}


def accepted_types(rt: ResourceType) -> list[str]:
    """In upstream's order, as its 415 lists them."""
    if rt.strategic_merge:
        return [JSON_PATCH, MERGE, STRATEGIC, APPLY]
    return [JSON_PATCH, MERGE, APPLY]


def patch_media_type(rt: ResourceType, content_type: str) -> str:
    """The media type of a PATCH's Content-Type, or 415 listing the kind's; kube-apiserver
    checks it first, before it reads the options or looks the object up (a PATCH of an
    unknown type to a missing object is 415, not 404)."""
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type not in accepted_types(rt):
        raise _unsupported(rt)
    return media_type


def _unsupported(rt: ResourceType) -> ApiError:
    return unsupported_media_type(
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(accepted_types(rt))
    )


def patched(rt: ResourceType, content_type: str, target: Obj, body: bytes) -> Obj:
    """`target` with the patch in `body` applied; never mutates `target`. Server-side apply
    is no patch of the object (`server_side_apply.py`): 415 here."""
    media_type = patch_media_type(rt, content_type)
    if media_type == APPLY:
        raise _unsupported(rt)
    document = _decode(body)
    try:
        if media_type == JSON_PATCH:
            result = json_patch(target, document)
        elif media_type == MERGE:
            result = merge_patch(target, document)
        else:
            result = strategic_merge_patch(target, document, rt.kind)
    except PatchError as exc:
        raise ApiError(exc.code, _REASONS.get(exc.code, "BadRequest"), str(exc)) from exc
    if not isinstance(result, dict):
        raise bad_request("the patched object is not a JSON object")
    if media_type != MERGE:
        # A merge patch nests no deeper than the larger of its target (a stored object,
        # within the limit) and itself (checked as decoded), so its result is not walked
        # again (test_merge_patch_nests_no_deeper_than_its_target_or_itself).
        check_depth(result, "the patched object")
    return result


def _decode(body: bytes) -> Any:
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise bad_request(f"error decoding patch: {exc}") from exc
    check_depth(document, "the patch")
    return document
