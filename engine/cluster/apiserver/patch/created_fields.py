"""What a create's manager owns, worked out once per shape of object.

A created object's manager owns what `compare` finds between the kind's zero value
and the object, less the fields no one owns; its managedFields entry carries that set
as a FieldsV1 document. Objects made from one template (the node's events, a job's
pods and Services) set the same fields with other values, so they get the same set
and the same document: about half of a created event's or pod's CPU at the server
went to comparing and encoding them again.

`shape` says everything about an object that comparing it with the zero value
depends on (in places more, never less): the keys of its maps; each associative list
item's key (and the types of its key fields) or a set's values; and, where the zero
value holds something, whether the object's value equals it (Python's `==`, which
`compare`'s shortcut uses, and JSON's) or the value itself (a list where it holds null
is walked as a list the zero value lacks: both add its items, only the path itself
differs). A scalar the zero value lacks is a leaf whatever it says. Two objects of one
shape give one set, so `remembered` hands out the set and document worked out for the
first (sets and documents are never changed in place once built, so every object can
share them).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import orjson

from engine.cluster.apiserver.patch.apply_schema import DEDUCED, TypeNode
from engine.cluster.apiserver.patch.field_paths import FieldSet, PathElement, fields_v1
from engine.cluster.apiserver.patch.typed_walks import MISSING, list_elements
from engine.cluster.apiserver.patch.values import json_equal

# A scalar the zero value lacks, and a list that is one leaf (atomic, empty, or with an
# item no key names).
_LEAF, _ATOMIC = "leaf", "atomic"
Remembered = tuple[FieldSet, dict[str, Any]]

# By (what the write's scope is, its manager, the object's shape): the kind's schema node
# (held, so the id in the key stays its own), the set and its FieldsV1 document. Least
# recently used first out.
_KNOWN: dict[Hashable, tuple[TypeNode, Remembered]] = {}
_KNOWN_LIMIT = 2048


def shape(value: Any, zero: Any, node: TypeNode) -> Hashable:
    """What `compare(zero, value, node)` depends on in `value` (see the module's note)."""
    node = node.for_value(value)
    if isinstance(value, dict):
        if zero is MISSING or isinstance(zero, dict):
            return _map_shape(value, zero, node)
        return ("=", orjson.dumps(value))
    if isinstance(value, list):
        if zero is None:  # a pod's containers: compared as a list with no items yet
            return ("null", _list_shape(value, node))
        if zero is not MISSING:
            return ("=", orjson.dumps(value))
        return _list_shape(value, node)
    if zero is MISSING:
        return _LEAF
    return (type(value), value == zero, json_equal(zero, value))


def _map_shape(value: dict[str, Any], zero: Any, node: TypeNode) -> Hashable:
    zeros = zero if isinstance(zero, dict) else {}
    shapes: list[tuple[str, Hashable]] = []
    for key, child in value.items():
        below = zeros.get(key, MISSING)
        if below is MISSING and not isinstance(child, (dict, list)):
            shapes.append((key, _LEAF))  # most values: a leaf, without a walk
        else:
            shapes.append((key, shape(child, below, node.field_type(key) or DEDUCED)))
    return tuple(shapes)


def _list_shape(items: list[Any], node: TypeNode) -> Hashable:
    if not items or not node.associative:
        return _ATOMIC
    elements = list_elements(items, node)
    if elements is None:
        return _ATOMIC
    if not node.keys:  # a set: its values are its elements
        return ("set", orjson.dumps(items))
    counts: dict[PathElement, int] = {}
    for element in elements:
        counts[element] = counts.get(element, 0) + 1
    item_type = node.item_type()
    return ("map", tuple([
        (element, tuple([type(item.get(key)) for key in node.keys]),
         None if counts[element] > 1 else shape(item, MISSING, item_type))
        for element, item in zip(elements, items, strict=True)
    ]))


def remembered(
    scope_key: Hashable, node: TypeNode, obj: Any, zero: Any, work_out: Callable[[], FieldSet]
) -> Remembered:
    """The set `work_out` gives for `obj` and its FieldsV1 document, from an earlier object
    of the same shape under the same scope when there was one."""
    key = (scope_key, id(node), shape(obj, zero, node))
    known = _KNOWN.pop(key, None)
    if known is None or known[0] is not node:
        fields = work_out()
        known = (node, (fields, fields_v1(fields)))
        if len(_KNOWN) >= _KNOWN_LIMIT:
            del _KNOWN[next(iter(_KNOWN))]
    _KNOWN[key] = known
    return known[1]
