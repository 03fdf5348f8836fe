"""YAML request bodies, decoded with the alias limit kube-apiserver's YAML decoder has.

An alias reuses a node, so a few hundred bytes of nested aliases stand for
millions of nodes ("billion laughs"). PyYAML builds such a document cheaply as
shared objects, but everything after it (validation, storage, JSON) walks it
as the tree it stands for, which can stall the server for minutes. go-yaml,
which kube-apiserver decodes YAML with, counts the nodes it decodes and those
decoded through an alias, and refuses the document once aliases make up too
much of it (`allowedAliasRatio`: 99% up to 400,000 nodes, falling to 10% at
4,000,000). The same counts are computed here on the composed node graph,
before anything is built, in time linear in the body. An alias to the node that
contains it is refused too, as go-yaml does.
"""

from __future__ import annotations

from typing import Any

import yaml

_LARGE_DOCUMENT = 400_000
_HUGE_DOCUMENT = 4_000_000
_ALIASES_TOLERATED = 100
_NODES_TOLERATED = 1000


class YamlLimitError(ValueError):
    """The document is refused before it is built, with go-yaml's words."""


def load_yaml(raw: bytes | str) -> Any:
    """The one YAML document in `raw` (None for an empty one), refused with YamlLimitError
    when aliases expand it too far or an anchor contains itself; yaml.YAMLError as PyYAML
    raises it otherwise, and for an integer too long to convert (Python converts at most
    4,300 digits; go-yaml reads a longer one as no number, which no field takes)."""
    loader = yaml.CSafeLoader(raw)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_aliases(node)
        try:
            return loader.construct_document(node)
        except ValueError as exc:
            # Python's words up to its advice on how to lift the limit (`; use sys...`).
            raise yaml.YAMLError(f"a value cannot be decoded: {str(exc).split(';')[0]}") from exc
    finally:
        loader.dispose()


def allowed_alias_ratio(decoded: int) -> float:
    """The share of nodes decoded through aliases go-yaml tolerates after `decoded` nodes."""
    if decoded <= _LARGE_DOCUMENT:
        return 0.99
    if decoded >= _HUGE_DOCUMENT:
        return 0.10
    return 0.99 - 0.89 * (decoded - _LARGE_DOCUMENT) / (_HUGE_DOCUMENT - _LARGE_DOCUMENT)


def _check_aliases(root: yaml.Node) -> None:
    decoded, through_aliases = _expanded_counts(root)
    if (through_aliases > _ALIASES_TOLERATED and decoded > _NODES_TOLERATED
            and through_aliases / decoded > allowed_alias_ratio(decoded)):
        raise YamlLimitError("yaml: document contains excessive aliasing")


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _expanded_counts(root: yaml.Node) -> tuple[int, int]:
    """(nodes go-yaml decodes, nodes it decodes inside an alias) for the document at `root`.

    The first time a node is met in document order is where it is written; every later
    edge to it is an alias. `decoded[n]`: the nodes decoding `n` visits, each alias counting
    itself and the whole node it names; `aliased[n]`: those of them inside an alias when `n`
    itself is not. Both are memoised per node, so shared nodes are counted once each.
    """
    seen = {id(root)}
    on_path = {id(root)}
    aliases: dict[int, list[bool]] = {id(root): []}
    order: list[yaml.Node] = []
    stack = [(root, iter(_children(root)))]
    while stack:
        node, pending = stack[-1]
        child = next(pending, None)
        if child is None:
            stack.pop()
            on_path.discard(id(node))
            order.append(node)
            continue
        if id(child) in on_path:
            raise YamlLimitError("yaml: anchor value contains itself")
        is_alias = id(child) in seen
        aliases[id(node)].append(is_alias)
        if not is_alias:
            seen.add(id(child))
            on_path.add(id(child))
            aliases[id(child)] = []
            stack.append((child, iter(_children(child))))
    decoded: dict[int, int] = {}
    aliased: dict[int, int] = {}
    for node in order:  # children before their parents
        total, inside = 1, 0
        for child, is_alias in zip(_children(node), aliases[id(node)], strict=True):
            if is_alias:
                total += 1 + decoded[id(child)]
                inside += decoded[id(child)]
            else:
                total += decoded[id(child)]
                inside += aliased[id(child)]
        decoded[id(node)], aliased[id(node)] = total, inside
    return decoded[id(root)], aliased[id(root)]
