"""Field ownership across writes: kube-apiserver's field manager, for updates and applies.

`tracked_update` gives the managedFields a create, update or patch leaves:
the writer owns what it added or changed, other managers lose it, removed
fields leave everyone. `tracked_apply` merges an applied configuration into
the live object: the applier owns exactly what it applied, fields it applied
before and dropped are pruned unless someone else owns them, and a field
another manager owns with a different value is a conflict unless forced.
Upstream's layers are kept in their order: the `kubectl` manager's
last-applied upgrade, `before-first-apply`, the cap on update managers,
timestamps only when something changed, and metadata no one may own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from engine.cluster.apiserver.patch.apply_schema import TypeNode
from engine.cluster.apiserver.patch.created_fields import remembered
from engine.cluster.apiserver.patch.field_paths import FieldSet, field
from engine.cluster.apiserver.patch.managed_fields import (
    APPLY,
    UPDATE,
    ApplyConflictError,
    Managed,
    ManagerFields,
    cap_update_managers,
    conflicts_of,
    decode,
    encode,
    identifier,
    is_reset,
)
from engine.cluster.apiserver.patch.typed_walks import (
    compare,
    ensure_named_fields,
    field_set,
    go_decoded,
    merge,
    remove_items,
)
from engine.cluster.apiserver.storage.objects import Obj

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
KUBECTL = "kubectl"
_CURRENT_OPERATION = "current-operation"
_BEFORE_FIRST_APPLY = "before-first-apply"
_MAX_ANNOTATIONS_SIZE = 256 * 1024
# What no manager ever owns (stripMetaManager: these exact paths, not what is below them).
_STRIPPED = FieldSet.of(
    (field("apiVersion"),),
    (field("kind"),),
    (field("metadata"),),
    *(
        (field("metadata"), field(name))
        for name in (
            "name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName",
            "generation", "managedFields", "resourceVersion",
        )
    ),
)


@dataclass(frozen=True)
class Scope:
    """What one write is about: the kind's schema, the request's version and subresource,
    the fields this subresource never owns, the time, and what a create starts from."""

    node: TypeNode
    api_version: str
    subresource: str
    ignored: FieldSet
    now: str
    empty: Obj
    go_typed: bool = False  # a built-in kind: the merged object is decoded into its Go type


def without_managed_fields(obj: Obj) -> Obj:
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict) or "managedFields" not in metadata:
        return obj
    return {**obj, "metadata": {k: v for k, v in metadata.items() if k != "managedFields"}}


def _live_entries(live: Obj | None) -> Any:
    return ((live or {}).get("metadata") or {}).get("managedFields")


def _live_managed(live: Obj | None) -> Managed:
    try:
        return decode(_live_entries(live))
    except ValueError:
        return Managed()


def tracked_update(
    scope: Scope, live: Obj | None, new: Obj, requested: Any, manager: str
) -> list[dict[str, Any]] | None:
    """The managedFields of `new` after `manager` wrote it over `live` (None on create).

    `requested` is the managedFields the request carried: used when valid (a
    client may rewrite them; `[]` or `[{}]` clears them), else the live ones.
    """
    # A body that carries the live managedFields unchanged (any patch that leaves them
    # alone, a PUT of what was read) reads as the live ones, which are known already.
    if scope.subresource or requested is None or requested == _live_entries(live):
        managed = _live_managed(live)
    elif is_reset(requested):
        managed = Managed()
    else:
        try:
            managed = decode(requested)
        except ValueError:
            managed = Managed()
        if not managed.managers:
            managed = _live_managed(live)
    live_uid = ((live or {}).get("metadata") or {}).get("uid")
    if not managed.managers and live_uid:
        return None  # upstream never starts tracking an existing object on an update
    key = identifier(manager or "unknown", UPDATE, scope.api_version, scope.subresource)
    if live is None and not managed.managers:
        return _created(scope, without_managed_fields(new), key)
    before = without_managed_fields(live) if live is not None else scope.empty
    _update(scope, before, without_managed_fields(new), managed, key)
    cap_update_managers(managed)
    return encode(managed)


def _created(scope: Scope, new: Obj, key: str) -> list[dict[str, Any]] | None:
    """What `_update` leaves a create by one manager with no managedFields of its own: the
    set and its FieldsV1 document from an earlier create of the same shape when there was
    one (`created_fields`)."""

    def work_out() -> FieldSet:
        managed = Managed()
        _update(scope, scope.empty, new, managed, key)
        owner = managed.managers.get(key)
        return owner.fields if owner is not None else FieldSet()

    scope_key = (scope.api_version, scope.subresource, orjson.dumps(scope.empty),
                 tuple(scope.ignored.paths()), key)
    fields, document = remembered(scope_key, scope.node, new, scope.empty, work_out)
    if fields.empty():
        return None
    managed = Managed()
    managed.managers[key] = ManagerFields(fields, scope.api_version, False)
    managed.times[key] = scope.now
    managed.sources[key] = (fields, document)
    return encode(managed)


def _filtered(fields: FieldSet, scope: Scope) -> FieldSet:
    return fields.recursive_difference(scope.ignored) if not scope.ignored.empty() else fields


def _take_changes(
    scope: Scope, live: Obj, new: Obj, managed: Managed, workflow: str, *, force: bool
) -> FieldSet:
    """Other managers lose what changed (a conflict unless `force`) and what was removed;
    returns what was added or modified."""
    comparison = compare(live, new, scope.node)
    changed = _filtered(comparison.changed(), scope)
    removed = _filtered(comparison.removed, scope)
    conflicts: dict[str, FieldSet] = {}
    for key, owner in managed.managers.items():
        if key == workflow:
            continue
        overlap = owner.fields.intersection(changed)
        if not overlap.empty():
            conflicts[key] = overlap
    if conflicts and not force:
        raise ApplyConflictError(conflicts_of(conflicts))
    for key, owner in list(managed.managers.items()):
        lost = conflicts.get(key)
        if key == workflow or (lost is None and owner.fields.intersection(removed).empty()):
            continue
        remaining = owner.fields.difference(lost) if lost is not None else owner.fields
        remaining = remaining.difference(removed)
        if remaining.empty():
            del managed.managers[key]
            managed.times.pop(key, None)
        else:
            managed.managers[key] = ManagerFields(remaining, owner.api_version, owner.applied)
    return changed


def _update(scope: Scope, live: Obj, new: Obj, managed: Managed, key: str) -> None:
    held = managed.managers.get(key)
    changed = _take_changes(scope, live, new, managed, _CURRENT_OPERATION, force=True)
    mine = changed.difference(_STRIPPED)
    if mine.empty():
        return
    previous = managed.managers.get(key)
    owned = mine.union(previous.fields) if previous is not None else mine
    if held is not None and owned == held.fields:
        # It changed only what it owned (a node writing a pod's status again): the very set
        # it held, so `encode` writes its FieldsV1 back as it was instead of encoding it.
        owned = held.fields
    managed.managers[key] = ManagerFields(owned, scope.api_version, False)
    managed.times[key] = scope.now


def tracked_apply(
    scope: Scope, live: Obj | None, config: Obj, manager: str, *, force: bool
) -> tuple[Obj, list[dict[str, Any]] | None]:
    """The object `config` applied over `live` makes, and its managedFields.

    Raises ApplyConflictError when fields other managers own would change and
    `force` is off (the `kubectl` manager may take the fields its
    last-applied annotation shows it set with client-side apply).
    """
    live_obj = without_managed_fields(live) if live is not None else scope.empty
    managed = _live_managed(live)
    try:
        merged, managed = _apply_layers(scope, live_obj, config, managed, manager, force=force)
    except ApplyConflictError as conflict:
        allowed = _allowed_by_last_applied(scope, live_obj) if manager == KUBECTL else None
        if allowed is None:
            raise
        remaining = [(m, p) for m, p in conflict.conflicts if not allowed.has(p)]
        if remaining:
            raise ApplyConflictError(remaining) from conflict
        merged, managed = _apply_layers(scope, live_obj, config, managed, manager, force=True)
    if manager == KUBECTL:
        merged = _with_last_applied(merged, config)
    return merged, encode(managed)


def _apply_layers(
    scope: Scope, live: Obj, config: Obj, managed: Managed, manager: str, *, force: bool
) -> tuple[Obj, Managed]:
    managed = managed.copy()
    if not managed.managers:
        key = identifier(_BEFORE_FIRST_APPLY, UPDATE, scope.api_version, scope.subresource)
        _update(scope, scope.empty, live, managed, key)
        cap_update_managers(managed)
    key = identifier(manager, APPLY, scope.api_version, scope.subresource)
    merged = _apply(scope, live, config, managed, key, force=force)
    owner = managed.managers.get(key)
    if owner is not None:
        stripped = owner.fields.difference(_STRIPPED)
        if stripped.empty():
            del managed.managers[key]
        else:
            owner.fields = stripped
    changed = orjson.dumps(merged, option=orjson.OPT_SORT_KEYS) != orjson.dumps(
        live, option=orjson.OPT_SORT_KEYS
    )
    if changed:
        managed.times[key] = scope.now
    cap_update_managers(managed)
    return (merged if changed else live), managed


def _apply(
    scope: Scope, live: Obj, config: Obj, managed: Managed, key: str, *, force: bool
) -> Obj:
    result: Any = merge(live, config, scope.node)
    merged: Obj = result if isinstance(result, dict) else {}
    last = managed.managers.get(key)
    managed.managers[key] = ManagerFields(
        _filtered(field_set(config, scope.node), scope), scope.api_version, True
    )
    if last is not None and not last.fields.empty():
        merged = _prune(scope, merged, managed, last.fields)
    if scope.go_typed:
        merged = go_decoded(merged, scope.node)
    _take_changes(scope, live, merged, managed, key, force=force)
    if key in managed.managers and managed.managers[key].fields.empty():
        del managed.managers[key]
    return merged


def _prune(scope: Scope, merged: Obj, managed: Managed, last: FieldSet) -> Obj:
    """Remove what the applier applied last time and no longer does, unless someone owns it."""
    node = scope.node

    def named(fields: FieldSet) -> FieldSet:
        return ensure_named_fields(fields, node)

    def removed(value: Obj, fields: FieldSet) -> Obj:
        result: Any = remove_items(value, fields, node)
        return result if isinstance(result, dict) else {}

    last_named = named(last)
    pruned = removed(merged, last_named)
    merged_set = named(field_set(merged, node))
    keep = named(field_set(pruned, node)).union(named(managed.owned()))
    pruned = removed(merged, merged_set.difference(keep))
    dangling = merged_set.difference(named(field_set(pruned, node))).intersection(last_named)
    return removed(merged, dangling)


def _allowed_by_last_applied(scope: Scope, live: Obj) -> FieldSet | None:
    """Fields the last-applied annotation set to what they still are (lastAppliedManager)."""
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(LAST_APPLIED)
    if not isinstance(text, str) or not text:
        return None
    try:
        last = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(last, dict) or last.get("apiVersion") != scope.api_version:
        return None
    comparison = compare(last, live, scope.node)
    return (
        field_set(last, scope.node)
        .difference(comparison.modified)
        .difference(comparison.added)
        .difference(comparison.removed)
    )


def _with_last_applied(obj: Obj, config: Obj) -> Obj:
    """The `kubectl` manager keeps an existing last-applied annotation in step with what it
    applies (lastAppliedUpdater)."""
    metadata = obj.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    if not annotations.get(LAST_APPLIED):
        return obj
    config_meta = dict(config.get("metadata") or {})
    config_annotations = dict(config_meta.get("annotations") or {})
    config_annotations.pop(LAST_APPLIED, None)
    if config_annotations:
        config_meta["annotations"] = config_annotations
    else:
        config_meta.pop("annotations", None)
    text = orjson.dumps({**config, "metadata": config_meta}, option=orjson.OPT_SORT_KEYS)
    annotations = {**annotations, LAST_APPLIED: text.decode() + "\n"}
    if sum(len(k) + len(v) for k, v in annotations.items()) > _MAX_ANNOTATIONS_SIZE:
        del annotations[LAST_APPLIED]
    return {**obj, "metadata": {**metadata, "annotations": annotations}}
