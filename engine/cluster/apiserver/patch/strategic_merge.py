"""The strategic merge patch algorithm, following k8s.io/apimachinery's strategicpatch.

Separate from `patch.py` because it is the one format with state (the merge-key
table of the kind being patched) and the ordering rules of the real server:
after a merge, items named in the patch keep the patch's order and live-only
items are interleaved by their live order; `$setElementOrder` overrides both.
One deviation: a patch value for a key absent from the live object is merged
into an empty value, so directives inside it are applied, never stored.
"""

from __future__ import annotations

from typing import Any

from engine.cluster.apiserver.patch.merge_keys import PRIMITIVE_SET
from engine.cluster.apiserver.patch.values import PatchError, json_equal
from engine.definition.strategic_patch import normalized_order

DIRECTIVE = "$patch"
RETAIN_KEYS = "$retainKeys"
DELETE_FROM = "$deleteFromPrimitiveList/"
SET_ORDER = "$setElementOrder/"


class StrategicMerge:
    """Merges patches into (already copied) documents of one kind; mutates its arguments."""

    def __init__(self, merge_keys: dict[str, str]) -> None:
        self.merge_keys = merge_keys

    def merge_map(
        self, original: dict[str, Any], patch: dict[str, Any], path: str
    ) -> dict[str, Any]:
        directive = patch.pop(DIRECTIVE, "merge")
        if directive == "replace":
            return self.merge_map({}, patch, path)
        if directive == "delete":
            return {}
        if directive != "merge":
            raise PatchError(f"Unknown patch type: {directive} in map: {patch}", 400)
        self._retain_keys(original, patch)
        orders = {k[len(SET_ORDER) :]: patch.pop(k) for k in list(patch) if k.startswith(SET_ORDER)}
        live = {key: original.get(key) for key in orders}
        for key in [k for k in patch if k.startswith(DELETE_FROM)]:
            self._delete_from(original, key[len(DELETE_FROM) :], patch.pop(key))
        for key, value in patch.items():
            child = f"{path}.{key}" if path else key
            current = original.get(key)
            if value is None:
                original.pop(key, None)
            elif isinstance(value, dict):
                original[key] = self.merge_map(
                    current if isinstance(current, dict) else {}, value, child
                )
            elif isinstance(value, list):
                original[key] = self.merge_list(
                    current if isinstance(current, list) else [], value, child
                )
            else:
                original[key] = value
        for key, order in orders.items():
            child = f"{path}.{key}" if path else key
            self._set_order(original, key, order, patch.get(key), live=live[key], path=child)
        return original

    def merge_list(self, original: list[Any], patch: list[Any], path: str) -> list[Any]:
        if path not in self.merge_keys:
            return patch
        key = self.merge_keys[path]
        if key == PRIMITIVE_SET:
            for item in patch:
                if isinstance(item, (dict, list)):
                    raise PatchError(f"invalid list of primitives at {path}: {item!r}", 400)
            merged = _dedupe(original + patch)
            return _normalize(merged, patch, original, key)
        original, patch = self._special_elements(original, patch, path, key)
        merged = list(original)
        for item in patch:
            found = _find(merged, key, item[key])
            if found is None:
                merged.append(self.merge_map({}, item, path))
            else:
                merged[found] = self.merge_map(merged[found], item, path)
        return _normalize(merged, patch, original, key)

    def _special_elements(
        self, original: list[Any], patch: list[Any], path: str, key: str
    ) -> tuple[list[Any], list[Any]]:
        plain: list[dict[str, Any]] = []
        replace = False
        for item in patch:
            if not isinstance(item, dict):
                raise PatchError(
                    f"{path}: list item {item!r} is not an object with merge key {key}", 400
                )
            directive = item.get(DIRECTIVE)
            if directive is None:
                if key not in item:
                    raise PatchError(f"map: {item} does not contain declared merge key: {key}", 400)
                plain.append(item)
            elif directive == "delete":
                if key not in item:
                    raise PatchError(f"map: {item} does not contain declared merge key: {key}", 400)
                original = [o for o in original if not _key_equal(o, key, item[key])]
            elif directive == "replace":
                replace = True
            elif directive == "merge":
                raise PatchError("merging lists cannot yet be specified in the patch", 400)
            else:
                raise PatchError(f"Unknown patch type: {directive} in map: {item}", 400)
        if replace:
            return [self.merge_map({}, item, path) for item in plain], []
        return original, plain

    def _retain_keys(self, original: dict[str, Any], patch: dict[str, Any]) -> None:
        if RETAIN_KEYS not in patch:
            return
        retain = patch.pop(RETAIN_KEYS)
        if not isinstance(retain, list):
            raise PatchError("invalid patch format of retainKeys", 400)
        for key, value in patch.items():
            directive = key.startswith((DELETE_FROM, SET_ORDER))
            if value is not None and not directive and key not in retain:
                raise PatchError("invalid patch format of retainKeys", 409)
        for key in [k for k in original if k not in retain]:
            del original[key]

    @staticmethod
    def _delete_from(original: dict[str, Any], key: str, values: Any) -> None:
        if not isinstance(values, list):
            raise PatchError("invalid list of primitives", 400)
        current = original.get(key)
        if isinstance(current, list):
            original[key] = [v for v in current if not any(json_equal(v, d) for d in values)]

    def _set_order(
        self,
        original: dict[str, Any],
        key: str,
        order: Any,
        patch_list: Any,
        *,
        live: Any,
        path: str,
    ) -> None:
        if not isinstance(order, list):
            raise PatchError("invalid patch format of setElementOrder list", 400)
        current = original.get(key)
        if not isinstance(current, list):
            return
        merge_key = self.merge_keys.get(path, PRIMITIVE_SET)
        plain = [p for p in patch_list or [] if not (isinstance(p, dict) and DIRECTIVE in p)]
        if not _is_subsequence(plain, order, merge_key):
            raise PatchError(
                f"The order in patch list:\n{patch_list}\n doesn't match "
                f"$setElementOrder list:\n{order}\n",
                400,
            )
        server_order = live if isinstance(live, list) else []
        original[key] = _normalize(current, order, server_order, merge_key)


def _identity(item: Any, key: str) -> Any:
    return item.get(key) if key != PRIMITIVE_SET and isinstance(item, dict) else item


def _key_equal(item: Any, key: str, value: Any) -> bool:
    return isinstance(item, dict) and json_equal(item.get(key), value)


def _find(items: list[Any], key: str, value: Any) -> int | None:
    return next((i for i, item in enumerate(items) if _key_equal(item, key, value)), None)


def _position(items: list[Any], item: Any, key: str) -> int:
    target = _identity(item, key)
    return next((i for i, o in enumerate(items) if json_equal(_identity(o, key), target)), -1)


def _dedupe(items: list[Any]) -> list[Any]:
    result: list[Any] = []
    for item in items:
        if not any(json_equal(item, seen) for seen in result):
            result.append(item)
    return result


def _is_subsequence(items: list[Any], order: list[Any], key: str) -> bool:
    position = 0
    for entry in order:
        if position < len(items) and json_equal(
            _identity(items[position], key), _identity(entry, key)
        ):
            position += 1
    return position == len(items)


def _normalize(
    merged: list[Any], patch_order: list[Any], server_order: list[Any], key: str
) -> list[Any]:
    """Patch items in patch order, live-only items interleaved by their live order."""
    return normalized_order(merged, patch_order, server_order,
                            lambda items, item: _position(items, item, key))
