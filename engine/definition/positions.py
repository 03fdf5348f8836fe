"""YAML nodes -> plain data plus an index from data paths to file positions.

Pydantic and the checks work on plain dicts and lists; this module keeps, for
every key and value, where it was written, so any problem can be reported at
the exact node, and a CEL error at the exact character inside an expression.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from ruamel.yaml.constructor import SafeConstructor
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from engine.definition.errors import Diagnostic, Position, error, warning

PathItem = str | int
Path = tuple[PathItem, ...]


@dataclass(frozen=True)
class NodeInfo:
    """Where one value was written (and its key, for mapping values)."""

    value: Position
    key: Position | None = None
    # For single-line quoted or plain scalars: the raw source text between the
    # delimiters and the quote style, so expression columns map to file columns.
    raw: str | None = None
    style: str | None = None


@dataclass(frozen=True)
class PositionIndex:
    """Positions of every key and value of one YAML document, by data path."""

    file: str
    nodes: dict[Path, NodeInfo] = field(default_factory=dict)

    def _nearest(self, path: Path) -> NodeInfo:
        for end in range(len(path), -1, -1):
            info = self.nodes.get(path[:end])
            if info is not None:
                return info
        return NodeInfo(Position(self.file, 1, 1))

    def value(self, path: Iterable[PathItem]) -> Position:
        """The value at `path`, or the nearest enclosing node that exists."""
        return self._nearest(tuple(path)).value

    def key(self, path: Iterable[PathItem]) -> Position:
        """The key of the mapping entry at `path` (its value when it has no key)."""
        info = self._nearest(tuple(path))
        return info.key or info.value

    def has(self, path: Iterable[PathItem]) -> bool:
        return tuple(path) in self.nodes

    def expression(self, path: Iterable[PathItem], line: int, column: int) -> Position | None:
        """The file position of (line, column) inside the string at `path`, 1-based.

        None when the scalar spans several lines or is not indexed: callers then
        report at the node and name the column in the message.
        """
        info = self.nodes.get(tuple(path))
        if info is None or info.raw is None or line != 1:
            return None
        offset = _raw_offset(info.raw, info.style, column - 1)
        start = 1 if info.style in ("'", '"') else 0
        return Position(info.value.file, info.value.line, info.value.column + start + offset,
                        info.value.path)


def _raw_offset(raw: str, style: str | None, index: int) -> int:
    """How many raw source characters precede decoded character `index`."""
    if style not in ("'", '"'):
        return index
    position = decoded = 0
    while decoded < index and position < len(raw):
        position += _raw_width(raw, position, style)
        decoded += 1
    return position


_ESCAPE_WIDTHS = {"x": 4, "u": 6, "U": 10}


def _raw_width(raw: str, position: int, style: str) -> int:
    """Source width of the one decoded character starting at `position`."""
    if style == "'" and raw.startswith("''", position):
        return 2
    if style == '"' and raw[position] == "\\" and position + 1 < len(raw):
        return _ESCAPE_WIDTHS.get(raw[position + 1], 2)
    return 1


class _Converter:
    """Walks one composed document, building data, the index and diagnostics."""

    def __init__(self, file: str, source_lines: list[str], constructor: SafeConstructor) -> None:
        self.file = file
        self.lines = source_lines
        self.index = PositionIndex(file)
        self.diagnostics: list[Diagnostic] = []
        self._constructor = constructor

    def position(self, node: Node, path: Path = ()) -> Position:
        return Position(self.file, node.start_mark.line + 1, node.start_mark.column + 1, path)

    def convert(self, node: Node, path: Path, key: Position | None = None) -> Any:
        self.index.nodes[path] = self._info(node, key, path)
        if isinstance(node, MappingNode):
            return self._mapping(node, path)
        if isinstance(node, SequenceNode):
            return [self.convert(item, (*path, i)) for i, item in enumerate(node.value)]
        return self._constructor.construct_object(node, deep=True)

    def _info(self, node: Node, key: Position | None, path: Path) -> NodeInfo:
        if key is not None and isinstance(node, ScalarNode) and node.value == "" and not node.style:
            return NodeInfo(key, key)  # `field:` with nothing after it: point at the field
        position = self.position(node, path)
        if not isinstance(node, ScalarNode) or node.start_mark.line != node.end_mark.line:
            return NodeInfo(position, key)
        if node.style in ("|", ">"):
            return NodeInfo(position, key)
        line = self.lines[node.start_mark.line] if node.start_mark.line < len(self.lines) else ""
        raw = line[node.start_mark.column : node.end_mark.column]
        if node.style in ("'", '"'):
            raw = raw[1:-1]
        return NodeInfo(position, key, raw=raw, style=node.style or None)  # libyaml: plain is ""

    def _mapping(self, node: MappingNode, path: Path) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key_position = self.position(key_node, path)
            if not isinstance(key_node, ScalarNode):
                self.diagnostics.append(error(key_position, "a mapping key must be a plain value"))
                continue
            key = self._constructor.construct_object(key_node, deep=True)
            if not isinstance(key, str | int | bool | float) and key is not None:
                key = str(key)
            if key in result:
                self.diagnostics.append(error(key_position, _duplicate_message(path, key)))
                continue
            key_position = replace(key_position, path=(*path, key))
            plain = not key_node.style  # None from the pure parser, '' from libyaml's
            if plain and str(key).lower() in _YAML_1_1_BOOLEANS:
                self.diagnostics.append(warning(key_position, _boolean_key_message(str(key))))
            result[key] = self.convert(value_node, (*path, key), key_position)
        return result


_YAML_1_1_BOOLEANS = frozenset({"y", "yes", "n", "no", "on", "off"})
"""Plain words YAML 1.1 parsers (kubectl's among them) read as booleans."""


def _boolean_key_message(key: str) -> str:
    return (
        f"unquoted key '{key}': YAML 1.1 parsers, kubectl's among them, read it as a boolean, "
        f"so `kubectl apply` of this file would fail; write \"{key}\": instead"
    )


def _duplicate_message(path: Path, key: Any) -> str:
    if path and path[-1] == "states":
        return f"duplicate state name '{key}' (a state is defined once)"
    return f"duplicate key '{key}'"


def object_index(data: Any, file: str) -> PositionIndex:
    """The index of a definition that has no file (an API object): every node at line 0,
    located by its field path alone."""
    index = PositionIndex(file)

    def walk(value: Any, path: Path) -> None:
        index.nodes[path] = NodeInfo(Position(file, 0, 0, path))
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, (*path, key))
        elif isinstance(value, list):
            for number, item in enumerate(value):
                walk(item, (*path, number))

    walk(data, ())
    return index


def convert_document(
    node: Node, file: str, source_lines: list[str], constructor: SafeConstructor
) -> tuple[Any, PositionIndex, list[Diagnostic]]:
    """Plain data, the position index and the problems (duplicate keys) of one document.

    `constructor` turns scalars into Python values; it must belong to the YAML
    instance that composed `node` (it resolves tags through that loader).
    """
    converter = _Converter(file, source_lines, constructor)
    data = converter.convert(node, ())
    return data, converter.index, converter.diagnostics
