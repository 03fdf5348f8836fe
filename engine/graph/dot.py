"""A machine definition as Graphviz DOT text.

DOT is written here directly (not through transitions' GraphMachine) so that
labels carry the language's own words (reasons and observations on the label,
the whole `observation [guard] / actions` in the tooltip), the wildcard
`from: "*"` is one pseudo-state instead of an edge from every state, both
levels fit in one graph, the replica machine under the job machine so that
the picture fits a screen's width, and the text is the same bytes on every run.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise

from engine.definition.schema import MachineDefinition
from engine.graph.images import LAYOUT_FONT
from engine.graph.parts import (
    WILDCARD,
    Arrow,
    DrawLevel,
    Node,
    Picture,
    StateKind,
    counted,
    node_lines,
    pictures,
)
from engine.graph.path import Highlight

FONT = LAYOUT_FONT

_GRAPH = {"fontname": FONT, "fontsize": "14", "nodesep": "0.3", "ranksep": "0.4"}
_NODE = {
    "fontname": FONT,
    "fontsize": "12",
    "shape": "box",
    "style": "rounded,filled",
    "fillcolor": "white",
    "color": "#444444",
}
_EDGE = {"fontname": FONT, "fontsize": "10", "color": "#555555", "arrowsize": "0.7"}
_KIND: dict[StateKind, dict[str, str]] = {
    "initial": {"fillcolor": "#dbeafe", "color": "#1d4ed8", "penwidth": "2"},
    "normal": {},
    "success": {"fillcolor": "#dcfce7", "color": "#15803d", "peripheries": "2"},
    "failure": {"fillcolor": "#fee2e2", "color": "#b91c1c", "peripheries": "2"},
}
_WILDCARD = {"style": "rounded,dashed", "fillcolor": "none", "fontcolor": "#666666"}
_INTO: dict[StateKind, dict[str, str]] = {
    "success": {"color": "#15803d", "fontcolor": "#15803d"},
    "failure": {"color": "#b91c1c", "fontcolor": "#b91c1c"},
}
_ON_PATH = {"color": "#d97706", "penwidth": "2.5"}
_OFF_PATH = {"color": "#c8c8c8", "fontcolor": "#a8a8a8"}
_OFF_PATH_NODE = {**_OFF_PATH, "fillcolor": "#f6f6f6", "penwidth": "1"}
_TITLES = {"job": "job machine", "replica": "replica machine"}
# Weight 0: the edge only orders the ranks, it does not pull the lower machine sideways.
_STACK = {"style": "invis", "weight": "0"}


def to_dot(
    definition: MachineDefinition, *, level: DrawLevel = "all", highlight: Highlight | None = None
) -> str:
    """DOT for the job machine, the replica machine, or both (`all`, one cluster each)."""
    drawn = pictures(definition, level, highlight)
    lines = [f"digraph {quote(definition.name)} {{", *_defaults()]
    for one in drawn:
        body = list(_picture(one))
        if len(drawn) == 1:
            lines += body
        else:
            lines.append(f"  subgraph {quote('cluster_' + one.level)} {{")
            lines.append(f"    graph {_attrs({'label': _TITLES[one.level], 'color': '#999999'})}")
            lines += ["  " + line for line in body]
            lines.append("  }")
    lines += list(_stacked(drawn))
    lines.append("}")
    return "\n".join(lines) + "\n"


def _stacked(drawn: tuple[Picture, ...]) -> Iterator[str]:
    """Invisible edges from the upper machine's last states to the lower one's start point.

    Graphviz puts unconnected clusters side by side; these put the replica
    machine under the job machine, so a picture of both is about as wide as
    the wider one instead of both together. The last states are the terminal ones
    (every state, in a machine without any).
    """
    for above, below in pairwise(drawn):
        states = [node for node in above.nodes if node.name != WILDCARD]
        last = [node for node in states if node.kind in ("success", "failure")] or states
        start = quote(f"{below.level}/start")
        for node in last:
            yield f"  {_node_id(above.level, node.name)} -> {start} {_attrs(_STACK)}"


def quote(text: str) -> str:
    """A DOT double-quoted string whose content is shown literally."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _defaults() -> list[str]:
    return [
        f"  graph {_attrs(_GRAPH)}",
        f"  node {_attrs(_NODE)}",
        f"  edge {_attrs(_EDGE)}",
    ]


def _picture(one: Picture) -> Iterator[str]:
    start = quote(f"{one.level}/start")
    start_attrs = {"shape": "point", "width": "0.15", "label": "", "color": "#1d4ed8"}
    yield f"  {start} {_attrs(start_attrs)}"
    for node in one.nodes:
        yield f"  {_node_id(one.level, node.name)} {_attrs(_node_attrs(node))}"
    start_label = "\n".join(counted(one.start_count, ()))
    start_edge = _path_style(one.start_count, {"label": start_label})
    yield f"  {start} -> {_node_id(one.level, one.initial)} {_attrs(start_edge)}"
    for arrow in one.arrows:
        yield from _arrow(arrow, one.kind_of(arrow.target))


def _arrow(arrow: Arrow, target_kind: StateKind) -> Iterator[str]:
    """One edge, or, for several sources, edges into a junction point and one labelled edge out.

    The junction keeps a transition's label in one place instead of repeating
    it on an edge from every source. Every piece carries the full text of the
    arrow's transitions as its tooltip.
    """
    target = _node_id(arrow.level, arrow.target)
    tip = {"tooltip": _tooltip(arrow.detail())}
    out = {"label": "\n".join(arrow.label()), "labeltooltip": tip["tooltip"], **tip}
    out = _path_style(arrow.total, {**out, **_INTO.get(target_kind, {})})
    if len(arrow.sources) == 1:
        yield f"  {_node_id(arrow.level, arrow.sources[0])} -> {target} {_attrs(out)}"
        return
    junction = quote(f"{arrow.level}/junction/{arrow.index}")
    point = {"shape": "point", "width": "0.06", "label": "", **_INTO.get(target_kind, {})}
    yield f"  {junction} {_attrs(_path_style(arrow.total, point))}"
    counts = arrow.counts or (None,) * len(arrow.sources)
    for source, count in zip(arrow.sources, counts, strict=True):
        into = {
            "arrowhead": "none",
            "label": "\n".join(counted(count, ())),
            **tip,
            **_INTO.get(target_kind, {}),
        }
        yield f"  {_node_id(arrow.level, source)} -> {junction} {_attrs(_path_style(count, into))}"
    yield f"  {junction} -> {target} {_attrs(out)}"


def _tooltip(text: str) -> str:
    """`text` for a tooltip attribute: Graphviz reads a backslash in a tooltip one time more
    than in a label, so each is doubled once more to show literally."""
    return text.replace("\\", "\\\\")


def _node_attrs(node: Node) -> dict[str, str]:
    style = _WILDCARD if node.name == WILDCARD else _KIND[node.kind]
    attrs = {"label": "\n".join(node_lines(node)), **style}
    if node.visits is None or node.name == WILDCARD:
        return attrs
    return {**attrs, **(_ON_PATH if node.visits else _OFF_PATH_NODE)}


def _path_style(count: int | None, attrs: dict[str, str]) -> dict[str, str]:
    if count is None:
        return attrs
    return {**attrs, **(_ON_PATH if count else _OFF_PATH)}


def _node_id(level: str, name: str) -> str:
    """`job/s/NAME` for a state, `job/any` for the wildcard.

    No state name can collide with the start point (`job/start`) or a junction
    (`job/junction/N`).
    """
    return quote(f"{level}/any" if name == WILDCARD else f"{level}/s/{name}")


def _attrs(attrs: dict[str, str]) -> str:
    """`[k="v", ...]` with keys sorted, so equal attributes always give equal text."""
    return "[" + ", ".join(f"{key}={quote(attrs[key])}" for key in sorted(attrs)) + "]"
