"""The CEL function `strategicPatch`: Kubernetes' strategic merge patch over plain values.

A pure, directive-free form of k8s.io/apimachinery's strategicpatch, for machines that
build an object the way a Go controller does with `StrategicMergePatch` (Trainer applies
a TrainJob's runtimePatches to its runtime's JobSet spec so). The merge keys are given
with the call, by dotted field path (list items add no segment), as a Go type's
`patchMergeKey` tags would say; a list without one is replaced whole. The API server's
own strategic merge (with `$patch`, `$retainKeys` and `$setElementOrder`) lives in
engine/cluster/apiserver/patch/strategic_merge.py and orders lists with `normalized_order`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def strategic_patch(target: Any, patches: Any, keys: Any) -> dict[Any, Any]:
    """`strategicPatch(map, list(map), map(string, string))`: `target` with each patch
    applied in order; raises TypeError for arguments of the wrong kind."""
    if not isinstance(target, Mapping) or not isinstance(patches, list):
        raise TypeError(f"strategicPatch takes a map and a list of maps, not {target!r} "
                        f"and {patches!r}")
    if not isinstance(keys, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in keys.items()):
        raise TypeError(f"strategicPatch: the merge keys {keys!r} are not a map of strings")
    merged = dict(target)
    for patch in patches:
        if not isinstance(patch, Mapping):
            raise TypeError(f"strategicPatch: the patch {patch!r} is not a map")
        merged = _merge_map(merged, patch, keys, "")
    return merged


def _merge_map(target: Mapping[Any, Any], patch: Mapping[Any, Any], keys: Mapping[str, str],
               path: str) -> dict[Any, Any]:
    merged = dict(target)
    for key, value in patch.items():
        child = f"{path}.{key}" if path else str(key)
        current = merged.get(key)
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(current, Mapping):
            merged[key] = _merge_map(current, value, keys, child)
        elif isinstance(value, list) and isinstance(current, list) and child in keys:
            merged[key] = _merge_list(current, value, keys, child)
        else:
            merged[key] = without_nulls(value)
    return merged


def without_nulls(value: Any) -> Any:
    """`value` with every null in a map left out, at any depth; lists keep their items.
    Here a value new to the target, as apimachinery's discardNullValuesFromPatch leaves it
    (nothing below it is merged, as nothing was there); rendering.py drops a declared
    object's unset optional fields so."""
    if isinstance(value, Mapping):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value


def _merge_list(target: list[Any], patch: list[Any], keys: Mapping[str, str], path: str
                ) -> list[Any]:
    """Entries merged by the path's key, a new one appended as written; then apimachinery's
    order: the patch's entries in the patch's order, the others interleaved by their place
    in `target`. As apimachinery, a list whose entries are not all maps is refused."""
    key = keys[path]
    if not all(isinstance(item, Mapping) for item in (*target, *patch)):
        raise TypeError(f"strategicPatch: the entries of the list at {path} are not all "
                        f"maps: {target!r} and {patch!r}")
    merged = list(target)
    for item in patch:
        if key not in item:
            raise TypeError(f"strategicPatch: {item!r} at {path} is not a map with {key!r}")
        at = _position(merged, key, item[key])
        if at < 0:
            merged.append(without_nulls(item))
        else:
            merged[at] = _merge_map(merged[at], item, keys, path)
    return normalized_order(merged, patch, target,
                            lambda items, item: _position(items, key, item.get(key)))


def _position(items: list[Any], key: str, value: Any) -> int:
    return next((i for i, item in enumerate(items) if item.get(key) == value), -1)


def normalized_order(merged: list[Any], patch_order: list[Any], server_order: list[Any],
                     position: Callable[[list[Any], Any], int]) -> list[Any]:
    """apimachinery's normalizeElementOrder, shared with the API server's strategic merge:
    the entries the patch names in the patch's order, the others by their place in the
    server's list, interleaved so that an entry the patch does not name goes first only
    when both are in the server's list and it comes first there (so an entry new to the
    list goes before the entries the patch did not name). `position(items, item)` is the
    index of the entry with `item`'s identity in `items`, -1 when none has it."""
    named = sorted((m for m in merged if position(patch_order, m) >= 0),
                   key=lambda m: position(patch_order, m))
    others = sorted((m for m in merged if position(patch_order, m) < 0),
                    key=lambda m: position(server_order, m))
    result: list[Any] = []
    while others or named:
        if named and (not others or not (
                0 <= position(server_order, others[0]) < position(server_order, named[0]))):
            result.append(named.pop(0))
        else:
            result.append(others.pop(0))
    return result
