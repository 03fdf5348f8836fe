"""Field paths and sets of them: what a manager owns, as structured-merge-diff writes it.

A path is a tuple of elements: a field name (`f:`), an associative list
item's key fields (`k:`), a set item's value (`v:`) or an atomic list index
(`i:`). A `FieldSet` is a trie of them; a path is a *member* when the set
holds the node itself, not just things below it (`.: {}` in FieldsV1).
`fields_v1` and `from_fields_v1` read and write `metadata.managedFields[].fieldsV1`
in upstream's element order, and `path_string` renders a path as conflicts
print it (`.spec.ports[port=80,protocol="TCP"]`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

# A JSON value made hashable, tagged so that `true` is not `1` (Python says it is).
Frozen = tuple[Any, ...]
# ("f", name) | ("k", ((name, frozen), ...)) | ("v", frozen) | ("i", index)
PathElement = tuple[str, Any]
Path = tuple[PathElement, ...]

_KIND_RANK = {"f": 0, "k": 1, "v": 2, "i": 3}
_VALUE_RANK = {"num": 0, "str": 1, "bool": 2, "list": 3, "map": 4, "null": 5}


def freeze(value: Any) -> Frozen:
    """A hashable, comparable stand-in for a JSON value."""
    if value is None:
        return ("null",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float)):
        return ("num", value)
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, list):
        return ("list", tuple(freeze(item) for item in value))
    if isinstance(value, dict):
        return ("map", tuple(sorted((key, freeze(item)) for key, item in value.items())))
    raise TypeError(f"not a JSON value: {value!r}")


def thaw(frozen: Frozen) -> Any:
    tag = frozen[0]
    if tag == "null":
        return None
    if tag == "list":
        return [thaw(item) for item in frozen[1]]
    if tag == "map":
        return {key: thaw(item) for key, item in frozen[1]}
    return frozen[1]


def field(name: str) -> PathElement:
    return ("f", name)


def key_element(fields: dict[str, Any]) -> PathElement:
    return ("k", tuple(sorted((name, freeze(value)) for name, value in fields.items())))


def value_element(value: Any) -> PathElement:
    return ("v", freeze(value))


def _value_order(frozen: Frozen) -> tuple[Any, ...]:
    tag = frozen[0]
    if tag in ("num", "str", "bool"):
        return (_VALUE_RANK[tag], frozen[1])
    if tag == "list":
        return (_VALUE_RANK[tag], tuple(_value_order(item) for item in frozen[1]))
    if tag == "map":
        return (_VALUE_RANK[tag], tuple((k, _value_order(v)) for k, v in frozen[1]))
    return (_VALUE_RANK[tag],)


def element_order(element: PathElement) -> tuple[Any, ...]:
    """Upstream's order: fields by name, then keys, then values, then indexes."""
    kind, payload = element
    if kind == "k":
        return (_KIND_RANK[kind], tuple((name, _value_order(v)) for name, v in payload))
    if kind == "v":
        return (_KIND_RANK[kind], _value_order(payload))
    return (_KIND_RANK[kind], payload)


class FieldSet:
    """A set of paths, as a trie; never holds an empty child.

    Only `insert` changes a set, and only while it is being built: the set
    operations return new sets that share the untouched subtrees of their inputs.
    """

    __slots__ = ("children", "members")

    def __init__(self) -> None:
        self.members: set[PathElement] = set()
        self.children: dict[PathElement, FieldSet] = {}

    @classmethod
    def of(cls, *paths: Path) -> FieldSet:
        result = cls()
        for path in paths:
            result.insert(path)
        return result

    def insert(self, path: Path) -> None:
        if path:
            self.below(path[:-1]).members.add(path[-1])

    def below(self, path: Path) -> FieldSet:
        """The set of what is below `path`, made when absent (only while building, and only
        to add to it: a set never holds an empty child)."""
        node = self
        for element in path:
            child = node.children.get(element)
            if child is None:
                child = node.children[element] = FieldSet()
            node = child
        return node

    def empty(self) -> bool:
        return not self.members and not self.children

    def has(self, path: Path) -> bool:
        node: FieldSet | None = self
        for element in path[:-1]:
            node = node.children.get(element) if node is not None else None
        return node is not None and bool(path) and path[-1] in node.members

    def child(self, element: PathElement) -> FieldSet:
        """The paths below `element`, without it (empty when there are none)."""
        return self.children.get(element) or FieldSet()

    def copy(self) -> FieldSet:
        result = FieldSet()
        result.members = set(self.members)
        result.children = {pe: sub.copy() for pe, sub in self.children.items()}
        return result

    def union(self, other: FieldSet) -> FieldSet:
        result = FieldSet()
        result.members = self.members | other.members
        for pe in self.children.keys() | other.children.keys():
            mine, theirs = self.children.get(pe), other.children.get(pe)
            if mine is None or theirs is None:
                chosen = mine if theirs is None else theirs
                assert chosen is not None
                result.children[pe] = chosen
            else:
                result.children[pe] = mine.union(theirs)
        return result

    def intersection(self, other: FieldSet) -> FieldSet:
        result = FieldSet()
        result.members = self.members & other.members
        for pe in self.children.keys() & other.children.keys():
            sub = self.children[pe].intersection(other.children[pe])
            if not sub.empty():
                result.children[pe] = sub
        return result

    def difference(self, other: FieldSet) -> FieldSet:
        """The paths of self that other lacks (a member removed keeps its children)."""
        result = FieldSet()
        result.members = self.members - other.members
        for pe, mine in self.children.items():
            theirs = other.children.get(pe)
            sub = mine if theirs is None else mine.difference(theirs)
            if not sub.empty():
                result.children[pe] = sub
        return result

    def recursive_difference(self, other: FieldSet) -> FieldSet:
        """As `difference`, but a member of other removes everything below it too."""
        result = FieldSet()
        result.members = self.members - other.members
        for pe, mine in self.children.items():
            if pe in other.members:
                continue
            theirs = other.children.get(pe)
            sub = mine if theirs is None else mine.recursive_difference(theirs)
            if not sub.empty():
                result.children[pe] = sub
        return result

    def paths(self, prefix: Path = ()) -> Iterator[Path]:
        """Every member path, in upstream's order: this level's members, then each child."""
        for pe in sorted(self.members, key=element_order):
            yield (*prefix, pe)
        for pe in sorted(self.children, key=element_order):
            yield from self.children[pe].paths((*prefix, pe))

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, FieldSet)
            and self.members == other.members
            and self.children == other.children
        )

    def __hash__(self) -> int:  # pragma: no cover - sets are mutable, never hashed
        raise TypeError("FieldSet is unhashable")

    def __repr__(self) -> str:
        return f"FieldSet({[path_string(p) for p in self.paths()]})"


def _go_json(value: Any) -> str:
    """JSON as Go's encoder writes it: compact, sorted keys, <, > and & escaped."""
    text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def element_key(element: PathElement) -> str:
    """The FieldsV1 key of an element: `f:name`, `k:{...}`, `v:...` or `i:N`."""
    kind, payload = element
    if kind == "f":
        return f"f:{payload}"
    if kind == "i":
        return f"i:{payload}"
    key = _KEYS.get(element)
    if key is None:
        if len(_KEYS) >= _KEYS_LIMIT:
            _KEYS.clear()
        key = _KEYS[element] = _value_key(kind, payload)
    return key


# Keys of list items (`k:{"name":"main"}`) are written again on every write of their object.
_KEYS: dict[PathElement, str] = {}
_KEYS_LIMIT = 8192


def _value_key(kind: str, payload: Any) -> str:
    if kind == "k":
        fields = ",".join(f"{_go_json(name)}:{_go_json(thaw(v))}" for name, v in payload)
        return "k:{" + fields + "}"
    return f"v:{_go_json(thaw(payload))}"


def fields_v1(fields: FieldSet) -> dict[str, Any]:
    """The FieldsV1 document of a set, keys in the order upstream writes them."""
    return _emit(fields, include_self=False)


def _emit(fields: FieldSet, *, include_self: bool) -> dict[str, Any]:
    items: list[tuple[str, dict[str, Any]]] = []
    if include_self and not fields.empty():
        items.append((".", _LEAF))
    children = fields.children
    for pe in _in_order(fields.members | children.keys()):
        child = children.get(pe)
        items.append((element_key(pe), _LEAF if child is None
                      else _emit(child, include_self=pe in fields.members)))
    return _shared_node(items)


def shared_fields_v1(document: dict[str, Any]) -> dict[str, Any]:
    """A FieldsV1 document read from elsewhere (the journal), made of the shared nodes
    `fields_v1` writes; a document holding a value that is no object is kept as it is."""
    shared = _shared_or_none(document)
    return document if shared is None else shared


def _shared_or_none(document: dict[str, Any]) -> dict[str, Any] | None:
    items = []
    for key, value in document.items():
        if not isinstance(value, dict):
            return None
        child = _shared_or_none(value) if value else _LEAF
        if child is None:
            return None
        items.append((key, child))
    return _shared_node(items)


# The nodes of the FieldsV1 documents stored objects carry, shared between documents: the
# pods of one template list the same fields per manager (the engine's, the node's status
# writer's) but for a volume or owner name, and a parsed document costs about ten times its
# JSON (21 KB of a running pod's 30 KB before). A node is known by its keys and its
# children's identities: the table holds every node it lists, so an identity in a key is
# always that child's. Stored objects are never mutated, so a node (and the one empty leaf)
# can be every document's. Least recently used first out.
_LEAF: dict[str, Any] = {}
_NODES: dict[tuple[tuple[str, int], ...], dict[str, Any]] = {}
_NODES_LIMIT = 16384


def _shared_node(items: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    key = tuple([(name, id(child)) for name, child in items])
    node = _NODES.pop(key, None)
    if node is None:
        node = dict(items)
        if len(_NODES) >= _NODES_LIMIT:
            del _NODES[next(iter(_NODES))]
    _NODES[key] = node
    return node


def _in_order(elements: set[PathElement]) -> list[PathElement]:
    """Elements in upstream's order. Most levels hold fields alone, which sort as plain
    tuples (by name): "f" is the first kind in tuple order, so when the last element
    sorted so is a field, every one is."""
    try:
        ordered = sorted(elements)
    except TypeError:  # keys or values of different JSON types: only element_order compares
        return sorted(elements, key=element_order)
    if not ordered or ordered[-1][0] == "f":
        return ordered
    return sorted(elements, key=element_order)


def parse_element(key: str) -> PathElement | None:
    """The element a FieldsV1 key names; None for a prefix upstream does not know."""
    if len(key) < 2 or key[1] != ":":
        raise ValueError(f"key must be 2 characters long: {key!r}")
    kind, text = key[0], key[2:]
    if kind == "f":
        return ("f", text)
    if kind == "i":
        return ("i", int(text))
    if kind == "v":
        return ("v", freeze(orjson.loads(text)))
    if kind == "k":
        fields = orjson.loads(text)
        if not isinstance(fields, dict):
            raise ValueError(f"key element is not an object: {key!r}")
        return key_element(fields)
    return None


def from_fields_v1(document: Any) -> FieldSet:
    """The set a FieldsV1 document describes; ValueError when it is malformed."""
    if not isinstance(document, dict):
        raise ValueError("fieldsV1 must be a JSON object")
    result, _ = _read(document)
    return result


def _read(document: dict[str, Any]) -> tuple[FieldSet, bool]:
    children = FieldSet()
    is_member = False
    for key, value in document.items():
        if key == ".":
            is_member = True
            continue
        pe = parse_element(key)
        if pe is None:
            continue
        if not isinstance(value, dict):
            raise ValueError(f"fieldsV1 entry {key!r} is not an object")
        grandchildren, child_is_member = _read(value)
        if child_is_member:
            children.members.add(pe)
        if not grandchildren.empty():
            children.children[pe] = grandchildren
    return children, is_member or children.empty()


def value_string(value: Any) -> str:
    """A value as structured-merge-diff prints it inside a path (Go's %q for strings)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return orjson.dumps(value).decode()
    if isinstance(value, list):
        return "[" + ",".join(value_string(item) for item in value) + "]"
    if isinstance(value, dict):
        return "".join(f"{k}={value_string(v)}" for k, v in value.items())
    return str(value)


def path_string(path: Path) -> str:
    parts = []
    for kind, payload in path:
        if kind == "f":
            parts.append(f".{payload}")
        elif kind == "k":
            keys = ",".join(f"{name}={value_string(thaw(v))}" for name, v in payload)
            parts.append(f"[{keys}]")
        elif kind == "v":
            parts.append(f"[={value_string(thaw(payload))}]")
        else:
            parts.append(f"[{payload}]")
    return "".join(parts)
