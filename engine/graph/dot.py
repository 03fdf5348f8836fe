"""A machine definition as Graphviz DOT text.

DOT is written here directly (not through transitions' GraphMachine) so that
labels carry the language's own words (reasons and observations on the label,
the whole `observation [guard] / actions` in the tooltip), the wildcard
`from: "*"` is one pseudo-state instead of an edge from every state, both
levels fit in one graph, the replica machine under the job machine so that
the picture fits a screen's width, and the text is the same bytes on every run.

The layout is told what a reader looks for first: the happy path is one
straight column (a Graphviz `group`), the failure ends share the bottom rank,
and the arrows that leave the same set of states meet at one dot, so that N
sources and M targets take N + M lines instead of N x M. A legend says what
colours and outlines mean. Every node and edge has a `class` (its kind), so a
page can style and find them.
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
# The happy path's edges pull hardest, so the column they make stays straight.
_HAPPY_WEIGHT = "8"


def to_dot(
    definition: MachineDefinition, *, level: DrawLevel = "all", highlight: Highlight | None = None
) -> str:
    """DOT for the job machine, the replica machine, or both (`all`, one cluster each)."""
    drawn = pictures(definition, level, highlight)
    lines = [f"digraph {quote(definition.name)} {{", *defaults(),
             f"  graph {attributes(caption(drawn, highlight is not None))}",
             *machine_lines(drawn), "}"]
    return "\n".join(lines) + "\n"


def caption(drawn: tuple[Picture, ...], on_path: bool) -> dict[str, str]:
    """The graph attributes of the legend at the picture's foot."""
    return {"label": _legend(drawn, on_path), "labelloc": "b", "labeljust": "l",
            "fontsize": "11"}


def machine_lines(drawn: tuple[Picture, ...], prefix: str = "") -> list[str]:
    """The DOT statements of one definition's machines (`pictures`), each in a cluster of
    its own when there are several; `prefix` starts every id (node, cluster, group), so
    the machines of several jobs can share one graph."""
    lines: list[str] = []
    for one in drawn:
        body = list(_picture(one, prefix))
        if len(drawn) == 1:
            lines += body
        else:
            lines.append(f"  subgraph {quote('cluster_' + prefix + one.level)} {{")
            title = {"label": _TITLES[one.level], "labelloc": "t", "labeljust": "c",
                     "fontsize": "14", "color": "#999999"}
            lines.append(f"    graph {attributes(title)}")
            lines += ["  " + line for line in body]
            lines.append("  }")
    return lines + list(_stacked(drawn, prefix))


def _legend(drawn: tuple[Picture, ...], on_path: bool) -> str:
    """What colours and outlines mean, as the picture's caption.

    A caption, not sample nodes: Graphviz places nodes where they shorten edges, and a
    row of samples ends up beside the machines, widening the picture.
    """
    lines = ["Legend: blue outline: the initial state \u00b7 double green outline: a success end "
             "\u00b7 double red outline: a failure end",
             "\u25cf joins the arrows that leave the same states \u00b7 hover over an arrow for "
             "its whole transitions"]
    if any(node.name == WILDCARD for one in drawn for node in one.nodes):
        lines[1] += " \u00b7 dashed: any non-terminal state"
    if on_path:
        lines.append("orange: the path the job took (Nx: how often) \u00b7 grey: not taken")
    return "\n".join(lines)


def _stacked(drawn: tuple[Picture, ...], prefix: str) -> Iterator[str]:
    """Invisible edges from the upper machine's last states to the lower one's start point.

    Graphviz puts unconnected clusters side by side; these put the replica
    machine under the job machine, so a picture of both is about as wide as
    the wider one instead of both together. The last states are the terminal ones
    (every state, in a machine without any).
    """
    for above, below in pairwise(drawn):
        states = [node for node in above.nodes if node.name != WILDCARD]
        last = [node for node in states if node.kind in ("success", "failure")] or states
        start = start_id(below.level, prefix)
        for node in last:
            yield f"  {node_id(above.level, node.name, prefix)} -> {start} {attributes(_STACK)}"


def quote(text: str) -> str:
    """A DOT double-quoted string whose content is shown literally."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def defaults() -> list[str]:
    return [
        f"  graph {attributes(_GRAPH)}",
        f"  node {attributes(_NODE)}",
        f"  edge {attributes(_EDGE)}",
    ]


def _picture(one: Picture, prefix: str) -> Iterator[str]:
    start = start_id(one.level, prefix)
    start_attrs = {"shape": "point", "width": "0.15", "label": "", "color": "#1d4ed8"}
    happy = set(one.happy)
    if happy:
        start_attrs["group"] = f"{prefix}{one.level}/happy"
    yield f"  {start} {attributes(start_attrs)}"
    for node in one.nodes:
        attrs = _nodeattributes(node)
        if node.name in happy:
            attrs["group"] = f"{prefix}{one.level}/happy"
        yield f"  {node_id(one.level, node.name, prefix)} {attributes(attrs)}"
    failures = [node_id(one.level, n.name, prefix) for n in one.nodes if n.kind == "failure"]
    if len(failures) > 1:
        yield f"  {{ rank={quote('same')}; {'; '.join(failures)} }}"
    start_label = "\n".join(counted(one.start_count, ()))
    start_edge = _path_style(one.start_count, {"label": start_label, "weight": _HAPPY_WEIGHT})
    yield f"  {start} -> {node_id(one.level, one.initial, prefix)} {attributes(start_edge)}"
    steps = set(pairwise(one.happy))
    for arrow in one.arrows:
        if len(arrow.sources) == 1:
            yield from _single(arrow, one.kind_of(arrow.target), steps, prefix)
    for sources, arrows in _hubs(one.arrows).items():
        yield from _hub(sources, arrows, one, steps, prefix)


def _single(arrow: Arrow, target_kind: StateKind, steps: set[tuple[str, str]], prefix: str
            ) -> Iterator[str]:
    """The edge of an arrow from one state."""
    attrs = _outattributes(arrow, target_kind)
    if (arrow.sources[0], arrow.target) in steps:
        attrs["weight"] = _HAPPY_WEIGHT
    source = node_id(arrow.level, arrow.sources[0], prefix)
    target = node_id(arrow.level, arrow.target, prefix)
    yield f"  {source} -> {target} {attributes(attrs)}"


def _hubs(arrows: tuple[Arrow, ...]) -> dict[tuple[str, ...], list[Arrow]]:
    """The arrows from several states, by the states they leave (in file order)."""
    hubs: dict[frozenset[str], tuple[tuple[str, ...], list[Arrow]]] = {}
    for arrow in arrows:
        if len(arrow.sources) > 1:
            hubs.setdefault(frozenset(arrow.sources), (arrow.sources, []))[1].append(arrow)
    return dict(hubs.values())


def _hub(sources: tuple[str, ...], arrows: list[Arrow], one: Picture,
         steps: set[tuple[str, str]], prefix: str) -> Iterator[str]:
    """A junction point the arrows leaving the same states share: one edge from each of
    those states into it, one labelled edge out of it to each target.

    Each label stays in one place instead of repeating on an edge from every
    source. An edge into the junction carries every transition it stands for as
    its tooltip, an edge out of it those of its own arrow.
    """
    level = arrows[0].level
    junction = quote(f"{prefix}{level}/junction/{arrows[0].index}")
    kinds = {one.kind_of(arrow.target) for arrow in arrows}
    colour = _INTO.get(kinds.pop(), {}) if len(kinds) == 1 else {}
    on_path = any((source, arrow.target) in steps for arrow in arrows for source in sources)
    point = {"shape": "point", "width": "0.06", "label": "", "class": "junction", **colour}
    if on_path:
        point["group"] = f"{prefix}{level}/happy"
    totals = [arrow.total for arrow in arrows if arrow.total is not None]
    yield f"  {junction} {attributes(_path_style(sum(totals) if totals else None, point))}"
    tip = _tooltip("\n".join(arrow.detail() for arrow in arrows))
    for source in sources:
        counts = [arrow.counts[_at(arrow, source)] for arrow in arrows if arrow.counts]
        count = sum(counts) if counts else None
        into = {"arrowhead": "none", "label": "\n".join(counted(count, ())), "tooltip": tip,
                **colour}
        if any((source, arrow.target) in steps for arrow in arrows):
            into["weight"] = _HAPPY_WEIGHT
        yield (f"  {node_id(level, source, prefix)} -> {junction} "
               f"{attributes(_path_style(count, into))}")
    for arrow in arrows:
        out = _outattributes(arrow, one.kind_of(arrow.target))
        if any((source, arrow.target) in steps for source in sources):
            out["weight"] = _HAPPY_WEIGHT
        yield f"  {junction} -> {node_id(level, arrow.target, prefix)} {attributes(out)}"


def _at(arrow: Arrow, source: str) -> int:
    return arrow.sources.index(source)


def _outattributes(arrow: Arrow, target_kind: StateKind) -> dict[str, str]:
    """An arrow's labelled edge into its target: label, tooltip, colour and path style."""
    tip = _tooltip(arrow.detail())
    out = {"label": "\n".join(arrow.label()), "labeltooltip": tip, "tooltip": tip,
           "class": target_kind, **_INTO.get(target_kind, {})}
    return _path_style(arrow.total, out)


def _tooltip(text: str) -> str:
    """`text` for a tooltip attribute: Graphviz reads a backslash in a tooltip one time more
    than in a label, so each is doubled once more to show literally."""
    return text.replace("\\", "\\\\")


def _nodeattributes(node: Node) -> dict[str, str]:
    style = _WILDCARD if node.name == WILDCARD else _KIND[node.kind]
    kind = "wildcard" if node.name == WILDCARD else node.kind
    attrs = {"label": "\n".join(node_lines(node)), "class": kind, **style}
    if node.visits is None or node.name == WILDCARD:
        return attrs
    return {**attrs, **(_ON_PATH if node.visits else _OFF_PATH_NODE)}


def _path_style(count: int | None, attrs: dict[str, str]) -> dict[str, str]:
    if count is None:
        return attrs
    return {**attrs, **(_ON_PATH if count else _OFF_PATH)}


def node_id(level: str, name: str, prefix: str = "") -> str:
    """`job/s/NAME` for a state, `job/any` for the wildcard, after `prefix`.

    No state name can collide with the start point (`job/start`) or a junction
    (`job/junction/N`).
    """
    return quote(prefix + (f"{level}/any" if name == WILDCARD else f"{level}/s/{name}"))


def start_id(level: str, prefix: str = "") -> str:
    """The point a machine starts from: `job/start`, after `prefix`."""
    return quote(f"{prefix}{level}/start")


def attributes(attrs: dict[str, str]) -> str:
    """`[k="v", ...]` with keys sorted, so equal attributes always give equal text."""
    return "[" + ", ".join(f"{key}={quote(attrs[key])}" for key in sorted(attrs)) + "]"
