"""Walks over an object and its type: field sets, comparison, merge and removal.

These are structured-merge-diff's typed-value operations, which server-side
apply and managed fields are built from: `field_set` (what a configuration
sets), `compare` (what an update added, modified or removed), `merge` (an
applied configuration laid over the live object: list maps merged by key and
ordered as upstream orders them, atomic parts replaced), `remove_items`
(pruning what an applier dropped), `ensure_named_fields` and `validate` (the
checks upstream makes when it types an applied configuration). Values are
plain JSON; `MISSING` stands for an absent field. Nothing is mutated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from engine.cluster.apiserver.patch.apply_schema import DEDUCED, LIST, MAP, SCALAR, TypeNode
from engine.cluster.apiserver.patch.field_paths import (
    FieldSet,
    Path,
    PathElement,
    key_element,
    path_string,
    value_element,
)
from engine.cluster.apiserver.patch.values import json_equal


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()


class ItemError(ValueError):
    """A list item that cannot be named by its list's keys (or set value)."""


def list_element(item: Any, node: TypeNode) -> PathElement:
    """The path element of an associative list's item: its key fields, or its value."""
    if node.keys:
        if item is None:
            raise ItemError("associative list with keys may not have a null element")
        if not isinstance(item, dict):
            raise ItemError("associative list with keys may not have non-map elements")
        if len(node.keys) == 1:
            # Most list maps are keyed by one string (`name`, `type`): key_element's
            # answer for it, built directly, as every write names every item.
            value = item.get(node.keys[0])
            if type(value) is str:
                return ("k", ((node.keys[0], ("str", value)),))
        defaults = node.item_type().key_defaults
        fields = {k: item[k] if k in item else defaults[k] for k in node.keys
                  if k in item or k in defaults}
        if not fields:
            keys = "[" + " ".join(f'"{k}"' for k in node.keys) + "]"
            raise ItemError(
                f"associative list with keys has an element that omits all key fields {keys} "
                "(and doesn't have default values for any key fields)"
            )
        return key_element(fields)
    if isinstance(item, dict):
        raise ItemError("associative list without keys has an element that's a map type")
    if isinstance(item, list):
        raise ItemError("not supported: associative list with lists as elements")
    if item is None:
        raise ItemError("associative list without keys has an element that's an explicit null")
    return value_element(item)


def _shape(value: Any, node: TypeNode) -> str:
    """How a value is treated: "leaf", "map" or "list" (a value not of the node's shape is a
    leaf, so a broken live object never stops a write)."""
    if node.kind == MAP and not node.atomic and (value is None or isinstance(value, dict)):
        return "map"
    if node.associative and (value is None or isinstance(value, list)):
        return "list"
    return "leaf"


def list_elements(items: list[Any], node: TypeNode) -> list[PathElement] | None:
    """Each item's element, or None when one cannot be named (the list is then a leaf)."""
    try:
        return [list_element(item, node) for item in items]
    except ItemError:
        return None


# --- field sets -----------------------------------------------------------------------------


def field_set(value: Any, node: TypeNode) -> FieldSet:
    """The fields a value sets: leaves, list items, map keys, empty and null values."""
    out = FieldSet()
    _field_set(value, node, (), out)
    return out


def _field_set(value: Any, node: TypeNode, path: Path, out: FieldSet) -> None:
    node = node.for_value(value)
    shape = _shape(value, node)
    if shape == "leaf":
        out.insert(path)
        return
    if shape == "list":
        items = value or []
        elements = list_elements(items, node)
        if elements is None:
            out.insert(path)
            return
        counts: dict[PathElement, int] = {}
        for pe in elements:
            counts[pe] = counts.get(pe, 0) + 1
        item_type = node.item_type()
        for pe, item in zip(elements, items, strict=True):
            if counts[pe] > 1:
                out.insert((*path, pe))
                continue
            _field_set(item, item_type, (*path, pe), out)
            out.insert((*path, pe))
        return
    for key, child in (value or {}).items():
        child_path = (*path, ("f", key))
        _field_set(child, node.field_type(key) or DEDUCED, child_path, out)
        if child is None or child == {} or not node.has_field(key):
            out.insert(child_path)


# --- comparison -----------------------------------------------------------------------------


@dataclass
class Comparison:
    """What changed between two values, as field sets."""

    removed: FieldSet = field(default_factory=FieldSet)
    modified: FieldSet = field(default_factory=FieldSet)
    added: FieldSet = field(default_factory=FieldSet)

    def changed(self) -> FieldSet:
        return self.modified.union(self.added)


def compare(lhs: Any, rhs: Any, node: TypeNode) -> Comparison:
    result = Comparison()
    _compare(lhs, rhs, node, (), result)
    return result


def _pair_shape(lhs: Any, rhs: Any, node: TypeNode) -> tuple[TypeNode, str]:
    """How two values at one path are walked together: both maps, both lists, or as one leaf
    (atomic, scalar, of different shapes, or both empty: upstream keeps `{}` apart from null)."""
    node = node.for_value(rhs if rhs is not MISSING else lhs)
    if lhs is MISSING:
        return node, _shape(rhs, node) if rhs else "leaf"
    if rhs is MISSING:
        return node, _shape(lhs, node) if lhs else "leaf"
    if not lhs and not rhs:
        return node, "leaf"
    shape = _shape(lhs, node)
    return node, shape if shape == _shape(rhs, node) else "leaf"


def _compare(lhs: Any, rhs: Any, node: TypeNode, path: Path, out: Comparison) -> None:
    if lhs is rhs or (type(lhs) is type(rhs) and lhs == rhs):
        return  # unchanged (stored objects share what a write did not touch)
    if lhs is MISSING or rhs is MISSING:
        present = rhs if lhs is MISSING else lhs
        _every_node(present, node, path, out.added if lhs is MISSING else out.removed)
        return
    node, shape = _pair_shape(lhs, rhs, node)
    if shape == "leaf":
        _compare_leaf(lhs, rhs, path, out)
        return
    if shape == "list":
        if not _compare_lists(lhs, rhs, node, path, out):
            _compare_leaf(lhs, rhs, path, out)
            return
    else:
        left = lhs if isinstance(lhs, dict) else {}
        right = rhs if isinstance(rhs, dict) else {}
        for key in [*left, *(k for k in right if k not in left)]:
            _compare(
                left.get(key, MISSING),
                right.get(key, MISSING),
                node.field_type(key) or DEDUCED,
                (*path, ("f", key)),
                out,
            )
    if lhs is MISSING:
        out.added.insert(path)
    elif rhs is MISSING:
        out.removed.insert(path)


def _every_node(value: Any, node: TypeNode, path: Path, into: FieldSet) -> None:
    """Every path of a value that appeared or disappeared whole (what `_compare` would find
    walking it against nothing). A create's whole object goes through here, so the paths
    are added to their place in the set as the walk goes, not inserted one by one."""
    if not path:
        into.insert(path)
        return
    _add_every(value, node, into.below(path[:-1]), path[-1])


def _add_every(value: Any, node: TypeNode, parent: FieldSet, element: PathElement) -> None:
    node = node.for_value(value)
    parent.members.add(element)
    shape = _shape(value, node)
    if not value or shape == "leaf":
        return
    if shape == "map":
        below = parent.below((element,))
        for key, child in value.items():
            if isinstance(child, (dict, list)):
                _add_every(child, node.field_type(key) or DEDUCED, below, ("f", key))
            else:  # a scalar is a leaf whatever its type says: no walk below it
                below.members.add(("f", key))
        return
    elements = list_elements(value, node)
    if elements is None:
        return
    counts: dict[PathElement, int] = {}
    for pe in elements:
        counts[pe] = counts.get(pe, 0) + 1
    item_type = node.item_type()
    below = parent.below((element,))
    for pe, item in zip(elements, value, strict=True):
        if counts[pe] > 1:
            below.members.add(pe)
        else:
            _add_every(item, item_type, below, pe)


def _compare_leaf(lhs: Any, rhs: Any, path: Path, out: Comparison) -> None:
    if lhs is MISSING:
        out.added.insert(path)
    elif rhs is MISSING:
        out.removed.insert(path)
    elif not json_equal(lhs, rhs):
        out.modified.insert(path)


def _group(items: list[Any], elements: list[PathElement]) -> dict[PathElement, list[Any]]:
    grouped: dict[PathElement, list[Any]] = {}
    for pe, item in zip(elements, items, strict=True):
        grouped.setdefault(pe, []).append(item)
    return grouped


def _compare_lists(lhs: Any, rhs: Any, node: TypeNode, path: Path, out: Comparison) -> bool:
    left_items = lhs if isinstance(lhs, list) else []
    right_items = rhs if isinstance(rhs, list) else []
    left_pes, right_pes = list_elements(left_items, node), list_elements(right_items, node)
    if left_pes is None or right_pes is None:
        return False
    left, right = _group(left_items, left_pes), _group(right_items, right_pes)
    item_type = node.item_type()
    for pe in [*left, *(p for p in right if p not in left)]:
        lefts, rights = left.get(pe, []), right.get(pe, [])
        item_path = (*path, pe)
        if len(lefts) <= 1 and len(rights) <= 1:
            _compare(
                lefts[0] if lefts else MISSING,
                rights[0] if rights else MISSING,
                item_type,
                item_path,
                out,
            )
        elif len(lefts) >= 2 and len(rights) >= 2:
            if not json_equal(lefts, rights):
                out.modified.insert(item_path)
        elif len(lefts) >= 2:
            if rights:
                _compare(MISSING, rights[0], item_type, item_path, out)
            out.removed.insert(item_path)
        else:
            if lefts:
                _compare(lefts[0], MISSING, item_type, item_path, out)
            out.added.insert(item_path)
    return True


# --- merge ----------------------------------------------------------------------------------


def merge(lhs: Any, rhs: Any, node: TypeNode) -> Any:
    """`rhs` laid over `lhs`: leaves and atomic parts from rhs, maps and list maps merged."""
    node, shape = _pair_shape(lhs, rhs, node)
    if shape == "leaf":
        return rhs if rhs is not MISSING else lhs
    if shape == "list":
        merged = _merge_lists(lhs, rhs, node)
        if merged is None:
            return rhs if rhs is not MISSING else lhs
        return merged if merged else MISSING
    left = lhs if isinstance(lhs, dict) else {}
    right = rhs if isinstance(rhs, dict) else {}
    out: dict[str, Any] = {}
    for key in [*left, *(k for k in right if k not in left)]:
        value = merge(left.get(key, MISSING), right.get(key, MISSING),
                      node.field_type(key) or DEDUCED)
        if value is not MISSING:
            out[key] = value
    return out if out else MISSING


def _merge_lists(lhs: Any, rhs: Any, node: TypeNode) -> list[Any] | None:
    """Upstream's list-map merge and order: shared items in the applied order, live-only
    items where they were. None when an item cannot be named."""
    left = lhs if isinstance(lhs, list) else []
    right = rhs if isinstance(rhs, list) else []
    left_pes, right_pes = list_elements(left, node), list_elements(right, node)
    if left_pes is None or right_pes is None:
        return None
    observed_left: dict[PathElement, Any] = {}
    for pe, item in zip(left_pes, left, strict=True):
        observed_left[pe] = None if pe in observed_left else item
    observed_right = dict(zip(right_pes, right, strict=True))
    shared = [pe for pe in right_pes if pe in observed_left]
    item_type = node.item_type()
    out: list[Any] = []

    def take(left_item: Any, right_item: Any) -> None:
        merged = merge(left_item, right_item, item_type)
        if merged is not MISSING:
            out.append(merged)

    next_shared = shared.pop(0) if shared else None
    merged_right: set[PathElement] = set()
    li = ri = 0
    while li < len(left_pes) or ri < len(right_pes):
        if li < len(left_pes) and ri < len(right_pes):
            pe = left_pes[li]
            if pe == right_pes[ri]:
                merged_right.add(pe)
                take(observed_left[pe], observed_right[pe])
                li, ri = li + 1, ri + 1
                next_shared = shared.pop(0) if shared else None
                continue
            if pe in observed_right and next_shared is not None and next_shared != pe:
                li += 1
                continue
        if li < len(left_pes):
            pe = left_pes[li]
            if pe not in observed_right:
                take(left[li], MISSING)
                li += 1
                continue
            if pe in merged_right:
                li += 1
        if ri < len(right_pes):
            pe = right_pes[ri]
            merged_right.add(pe)
            take(observed_left.get(pe, MISSING), observed_right[pe])
            ri += 1
            if next_shared is not None and next_shared == pe:
                next_shared = shared.pop(0) if shared else None
    return out


# --- removal --------------------------------------------------------------------------------


def remove_items(value: Any, fields: FieldSet, node: TypeNode) -> Any:
    """`value` without the members of `fields` (and what is below them)."""
    if fields.empty():
        return value
    node = node.for_value(value)
    shape = _shape(value, node)
    if shape == "list" and value:
        elements = list_elements(value, node)
        if elements is None:
            return value
        items = []
        for pe, item in zip(elements, value, strict=True):
            if pe in fields.members:
                continue
            below = fields.children.get(pe)
            items.append(item if below is None else remove_items(item, below, node.item_type()))
        return items or None
    if shape == "map" and value:
        out: dict[str, Any] = {}
        for key, child in value.items():
            name: PathElement = ("f", key)
            if name in fields.members:
                continue
            below = fields.children.get(name)
            out[key] = (
                child if below is None
                else remove_items(child, below, node.field_type(key) or DEDUCED)
            )
        return out or None
    return value


def go_decoded(value: Any, node: TypeNode) -> Any:
    """What decoding into a built-in kind's Go type leaves of a merged object: no nulls, and no
    empty maps of strings (`map[string]string` fields are all `omitempty`)."""
    node = node.for_value(value)
    if isinstance(value, dict) and node.kind == MAP:
        out = {}
        for key, child in value.items():
            if child is None:
                continue
            child_type = (node.field_type(key) or DEDUCED).for_value(child)
            decoded = go_decoded(child, child_type)
            if decoded == {} and child_type.kind == MAP and not child_type.fields and (
                child_type.element is not None and child_type.item_type().kind == SCALAR
            ):
                continue
            out[key] = decoded
        return out
    if isinstance(value, list) and node.kind == LIST:
        item_type = node.item_type()
        return [go_decoded(item, item_type) for item in value if item is not None]
    return value


def ensure_named_fields(fields: FieldSet, node: TypeNode) -> FieldSet:
    """`fields` plus every struct field that has something below it, as a member."""
    out = FieldSet()
    out.members = set(fields.members)
    for pe, sub in fields.children.items():
        kind, name = pe
        child_type: TypeNode | None = None
        if kind == "f" and node.kind == MAP:
            if node.has_field(name):
                out.members.add(pe)
            child_type = node.field_type(name)
        elif kind == "k" and node.kind == LIST:
            child_type = node.item_type()
        out.children[pe] = ensure_named_fields(sub, child_type) if child_type else sub.copy()
    return out


# --- validation of an applied configuration -------------------------------------------------


def validate(value: Any, node: TypeNode) -> list[str]:
    """What upstream refuses when it types an applied configuration, as `.path: message`."""
    errors: list[str] = []
    _validate(value, node, (), errors)
    return errors


def _validate(value: Any, node: TypeNode, path: Path, errors: list[str]) -> None:
    node = node.for_value(value)
    where = path_string(path)
    if node.kind == MAP and isinstance(value, dict):
        for key, child in value.items():
            child_type = node.field_type(key)
            if child_type is None:
                errors.append(f"{where}.{key}: field not declared in schema")
                return
            _validate(child, child_type, (*path, ("f", key)), errors)
    elif node.kind == LIST and isinstance(value, list):
        seen: set[PathElement] = set()
        for index, item in enumerate(value):
            pe: PathElement = ("i", index)
            if node.associative:
                try:
                    pe = list_element(item, node)
                except ItemError as exc:
                    errors.append(f"{where}: element {index}: {exc}")
                    return
                if pe in seen:
                    errors.append(f"{where}: duplicate entries for key {path_string((pe,))}")
                seen.add(pe)
            _validate(item, node.item_type(), (*path, pe), errors)
    elif node.kind in (MAP, LIST) and value is not None:
        wanted = "map" if node.kind == MAP else "list"
        errors.append(f"{where}: expected {wanted}, got {value!r}")
