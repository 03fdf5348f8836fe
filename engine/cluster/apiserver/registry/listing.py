"""List: selectors, consistent pagination (limit/continue) and resourceVersion semantics.

A continue token carries the list's resourceVersion and the last key served;
the next page shows the objects as they were at that resourceVersion, rebuilt
from the watch history, so a paginated list is one consistent snapshot as with
etcd. A token older than the history is answered 410 Expired, like a token
whose revision etcd has compacted.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import orjson

from engine.cluster.apiserver.errors import ApiError, bad_request, gone, too_large_version
from engine.cluster.apiserver.registry.resources import ResourceType
from engine.cluster.apiserver.registry.selectors import FieldSelector, LabelSelector
from engine.cluster.apiserver.storage.objects import Bucket, Entry, ObjKey

if TYPE_CHECKING:
    from engine.cluster.apiserver.registry.store import Store

_TOKEN_VERSION = "meta.k8s.io/v1"
_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. "
    "You can start a new list without the continue parameter."
)


@dataclass(frozen=True)
class ListQuery:
    """The list-shaping parameters of a request."""

    namespace: str | None = None
    labels: LabelSelector | None = None
    fields: FieldSelector | None = None
    limit: int | None = None
    continue_token: str | None = None
    resource_version: str | None = None
    resource_version_match: str | None = None

    def matches(self, entry: Entry) -> bool:
        obj = entry.obj
        if self.labels is not None and not self.labels.matches(
            obj["metadata"].get("labels") or {}
        ):
            return False
        return self.fields is None or self.fields.matches(obj)

    def not_older_than(self, current: int) -> int | None:
        """The resourceVersion the answer must not be older than (None: any, for an unset or
        "0" one); 504 for one this server has not reached, as the watch cache answers once
        it has waited. The parameter was checked to parse when the query was built."""
        if self.resource_version in (None, "", "0"):
            return None
        wanted = int(self.resource_version or "")
        if wanted > current:
            raise too_large_version(wanted, current)
        return wanted


@dataclass(frozen=True)
class Page:
    entries: list[Entry]
    rv: int
    continue_token: str | None = None
    remaining: int | None = None


def encode_continue(rv: int, last: ObjKey) -> str:
    raw = orjson.dumps({"v": _TOKEN_VERSION, "rv": rv, "start": list(last)})
    return base64.urlsafe_b64encode(raw).decode()


def decode_continue(token: str) -> tuple[int, ObjKey]:
    try:
        data = orjson.loads(base64.urlsafe_b64decode(token.encode()))
        if data.get("v") != _TOKEN_VERSION:
            raise ValueError("unknown token version")
        ns, name = data["start"]
        return int(data["rv"]), (str(ns), str(name))
    except (ValueError, KeyError, TypeError, binascii.Error, orjson.JSONDecodeError) as exc:
        raise bad_request(f"continue key is not valid: {exc}") from exc


def list_page(store: Store, rt: ResourceType, query: ListQuery) -> Page:
    """One page of the objects of `rt` that the query selects."""
    after: ObjKey | None = None
    snapshot = store.table.rv
    if query.continue_token:
        snapshot, after = decode_continue(query.continue_token)
        if snapshot < store.hub.oldest(rt.key):
            raise gone(_EXPIRED)
    elif query.resource_version_match == "Exact":
        snapshot = _exact_version(store, query.resource_version)
    else:
        query.not_older_than(snapshot)
    if query.limit is not None and query.limit < 0:
        raise bad_request("limit must not be negative")
    bucket = store.table.bucket(rt.key)
    if snapshot == store.table.rv:
        overrides: dict[ObjKey, Entry | None] = {}
    else:
        overrides = _as_of(store, rt, snapshot)
    keys = list(_keys(bucket, overrides, query.namespace, after))
    entries: list[Entry] = []
    name = query.fields.exact("metadata.name") if query.fields else None
    for index, key in enumerate(keys):
        if name is not None and key[1] != name:
            continue
        entry = overrides[key] if key in overrides else bucket.entries.get(key)
        if entry is None or not query.matches(entry):
            continue
        entries.append(entry)
        if query.limit and len(entries) == query.limit and index + 1 < len(keys):
            selective = query.labels is not None or query.fields is not None
            remaining = None if selective else len(keys) - index - 1
            return Page(entries, snapshot, encode_continue(snapshot, key), remaining)
    return Page(entries, snapshot)


def _exact_version(store: Store, text: str | None) -> int:
    try:
        rv = int(text or "")
    except ValueError as exc:
        message = f"resourceVersionMatch=Exact needs a resourceVersion, got {text!r}"
        raise bad_request(message) from exc
    if rv > store.table.rv:
        raise too_large_version(rv, store.table.rv)
    return rv


def _as_of(store: Store, rt: ResourceType, rv: int) -> dict[ObjKey, Entry | None]:
    """How each object changed since `rv` looked at `rv` (None: it did not exist)."""
    try:
        changes = store.hub.changes_since(rt.key, rv)
    except ApiError as exc:
        raise gone(_EXPIRED) from exc
    overrides: dict[ObjKey, Entry | None] = {}
    for change in changes:
        metadata = change.entry.obj["metadata"]
        key = (metadata.get("namespace") or "", metadata["name"])
        if key not in overrides:
            overrides[key] = change.prev if change.type != "ADDED" else None
    return overrides


def _keys(
    bucket: Bucket, overrides: dict[ObjKey, Entry | None], namespace: str | None,
    after: ObjKey | None,
) -> Iterator[ObjKey]:
    if not overrides:
        yield from bucket.keys_after(namespace, after)
        return
    merged = sorted(set(bucket.entries) | set(overrides))
    for key in merged:
        if after is not None and key <= after:
            continue
        if namespace is None or key[0] == namespace:
            yield key
