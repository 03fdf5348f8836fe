"""The three PATCH formats kube-apiserver accepts, as pure functions over JSON values.

JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch
(lists merged by the merge keys in `merge_keys.py`, with the `$patch`,
`$deleteFromPrimitiveList`, `$setElementOrder` and `$retainKeys` directives).
None mutates its inputs; each returns a new document.

Errors raise `PatchError` with the HTTP code the real server answers with:
a malformed JSON patch document (not a list of operations, unknown `op`,
missing `path`) is 400 BadRequest; a JSON patch that does not apply (failed
`test`, missing path, bad index) is 422, as kube-apiserver answers errors from
evanphx/json-patch's Apply, with the same message wording. Malformed
strategic-merge directives are 400; a patch key outside `$retainKeys` is 409.
The errors and JSON equality they share live in `values.py`.
JSON patch is implemented here rather than with the `jsonpatch` package, whose
`test` compares with Python equality (so `true` would equal `1`).
"""

from __future__ import annotations

import copy
from typing import Any

from engine.cluster.apiserver.encoding.json_documents import json_copy
from engine.cluster.apiserver.patch.merge_keys import merge_keys_for
from engine.cluster.apiserver.patch.strategic_merge import StrategicMerge
from engine.cluster.apiserver.patch.values import PatchError, json_equal


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, `null` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return json_copy(patch)
    result = json_copy(target) if isinstance(target, dict) else {}
    _merge_into(result, json_copy(patch))
    return result


def _merge_into(result: dict[str, Any], patch: dict[str, Any]) -> None:
    """Merge `patch` into `result`, both private copies: the patch's values are moved into
    the result as they are (copying each again with copy.deepcopy was most of the cost of
    applying a pod's status patch)."""
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            current = result.get(key)
            if not isinstance(current, dict):
                current = {}
                result[key] = current
            _merge_into(current, value)
        else:
            result[key] = value


def _pointer(path: Any) -> list[str]:
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise PatchError(f'JSON pointer must be empty or start with a "/": {path!r}', 400)
    if not path:
        return []
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _index(container: list[Any], token: str, allow_end: bool) -> int:
    if allow_end and token == "-":
        return len(container)
    if not token.isdigit() or (token != "0" and token.startswith("0")):
        raise PatchError(f"Unable to access invalid index: {token}: invalid index referenced")
    index = int(token)
    if index > len(container) or (index == len(container) and not allow_end):
        raise PatchError(f"Unable to access invalid index: {index}: invalid index referenced")
    return index


def _parent(doc: Any, tokens: list[str], op: str, path: str) -> Any:
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, allow_end=False)]
        else:
            raise PatchError(
                f'{op} operation does not apply: doc is missing path: "{path}": missing value'
            )
    return node


def _get(doc: Any, path: str, op: str) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return doc
    parent = _parent(doc, tokens, op, path)
    last = tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, allow_end=False)]
    raise PatchError(
        f"{op} operation does not apply: doc is missing from path: {path}: missing value"
    )


def _add(doc: Any, path: str, value: Any) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return value
    parent = _parent(doc, tokens, "add", path)
    if isinstance(parent, dict):
        parent[tokens[-1]] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, tokens[-1], allow_end=True), value)
    else:
        raise PatchError(
            f'add operation does not apply: doc is missing path: "{path}": missing value'
        )
    return doc


def _remove(doc: Any, path: str, op: str = "remove") -> Any:
    tokens = _pointer(path)
    if not tokens:
        raise PatchError(f"{op} operation does not apply: cannot remove the whole document")
    parent = _parent(doc, tokens, op, path)
    last = tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(parent, last, allow_end=False))
    if op == "replace":
        raise PatchError(
            f"replace operation does not apply: doc is missing key: {path}: missing value"
        )
    raise PatchError(f"Unable to remove nonexistent key: {last}: missing value")


def _apply_one(doc: Any, operation: Any) -> Any:
    if not isinstance(operation, dict) or "op" not in operation:
        raise PatchError(f"Unexpected kind: {operation!r}", 400)
    op, path = operation["op"], operation.get("path")
    if path is None:
        raise PatchError(f"{op} operation is missing path", 400)
    if op in ("add", "replace", "test") and "value" not in operation:
        raise PatchError(f"{op} operation is missing value", 400)
    if op == "add":
        return _add(doc, path, copy.deepcopy(operation["value"]))
    if op == "remove":
        _remove(doc, path)
        return doc
    if op == "replace":
        if not _pointer(path):
            return copy.deepcopy(operation["value"])
        _remove(doc, path, "replace")
        return _add(doc, path, copy.deepcopy(operation["value"]))
    if op == "test":
        if not json_equal(_get(doc, path, "test"), operation["value"]):
            raise PatchError(f"testing value {path} failed: test failed")
        return doc
    if op in ("move", "copy"):
        source = operation.get("from")
        if not isinstance(source, str):
            raise PatchError(f"{op} operation is missing from", 400)
        value = copy.deepcopy(_get(doc, source, op))
        if op == "move":
            if path.startswith(source + "/"):
                raise PatchError(
                    f"move operation does not apply: cannot move {source} into its own child"
                )
            _remove(doc, source, op)
        return _add(doc, path, value)
    raise PatchError(f"Unexpected kind: {op}", 400)


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902: apply the operations in order to a copy of `target`."""
    if not isinstance(operations, list):
        raise PatchError("json: cannot unmarshal object into Go value of type jsonpatch.Patch", 400)
    doc = json_copy(target)
    for operation in operations:
        doc = _apply_one(doc, operation)
    return doc


def strategic_merge_patch(
    target: dict[str, Any], patch: dict[str, Any], kind: str
) -> dict[str, Any]:
    """Kubernetes strategic merge patch of a built-in object of `kind`."""
    if not isinstance(patch, dict):
        raise PatchError("unable to unmarshal patch: not a JSON object", 400)
    merger = StrategicMerge(merge_keys_for(kind))
    return merger.merge_map(json_copy(target), json_copy(patch), "")
