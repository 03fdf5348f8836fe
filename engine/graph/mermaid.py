"""A machine definition as a Mermaid `stateDiagram-v2`, for Markdown that renders it.

Mermaid needs nothing installed here: GitHub and most documentation sites draw
it. States get ids by layout order (`job_0`, ...) and show their names as
text, so any state name is safe; label text uses Mermaid's `#code;` entities, and its
lines are the DOT picture's (`<br>` between them).

The layout follows the DOT picture's as far as Mermaid's language lets it (it has no
edge weights nor ranks: its layout places what it is given in the order given): the
happy path is declared first, state by state, and its arrows before any other, so it
runs down from the start as one column; the failure ends (more than one) are one group,
`failure ends`, side by side; and the arrows that leave the same set of states meet at
one junction (a `<<choice>>` point), so N sources and M targets take N + M lines.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from itertools import pairwise

from engine.definition.schema import MachineDefinition
from engine.graph.parts import (
    WILDCARD,
    Arrow,
    DrawLevel,
    Node,
    Picture,
    counted,
    node_lines,
    pictures,
)
from engine.graph.path import Highlight

_CLASSES = {
    "initial": "fill:#dbeafe,stroke:#1d4ed8,stroke-width:2px",
    "success": "fill:#dcfce7,stroke:#15803d,stroke-width:3px",
    "failure": "fill:#fee2e2,stroke:#b91c1c,stroke-width:3px",
    "wildcard": "fill:#ffffff,stroke:#666666,stroke-dasharray:4 3,color:#666666",
    "onpath": "stroke:#d97706,stroke-width:3px",
    "offpath": "fill:#f6f6f6,stroke:#c8c8c8,color:#a8a8a8",
}
_TITLES = {"job": "job machine", "replica": "replica machine"}
# Characters Mermaid would read as syntax inside a label, and their entity codes (a label
# ending in `:` does not parse).
_ENTITIES = {
    "#": "#35;",
    ";": "#59;",
    ":": "#58;",
    '"': "#quot;",
    "<": "#lt;",
    ">": "#gt;",
    "{": "#123;",
    "}": "#125;",
}


def to_mermaid(
    definition: MachineDefinition, *, level: DrawLevel = "all", highlight: Highlight | None = None
) -> str:
    """A stateDiagram-v2; with `all`, each machine is a composite state."""
    drawn = pictures(definition, level, highlight)
    lines = ["stateDiagram-v2"]
    classes: dict[str, list[str]] = {}
    for one in drawn:
        body = list(_picture(one, classes))
        if len(drawn) == 1:
            lines += body
        else:
            lines.append(f'  state "{_TITLES[one.level]}" as {one.level} {{')
            lines += ["  " + line for line in body]
            lines.append("  }")
    for name, style in _CLASSES.items():
        if classes.get(name):
            lines.append(f"  classDef {name} {style}")
            lines.append(f"  class {','.join(classes[name])} {name}")
    return "\n".join(lines) + "\n"


def escape(text: str) -> str:
    """Label text with Mermaid's syntax characters replaced by entity codes."""
    return "".join(_ENTITIES.get(char, char) for char in text.replace("\n", " "))


def _picture(one: Picture, classes: dict[str, list[str]]) -> Iterator[str]:
    ids = {node.name: f"{one.level}_{i}" for i, node in enumerate(one.nodes)}
    on_path = {name: number for number, name in enumerate(one.happy)}
    nodes = sorted(one.nodes, key=lambda node: on_path.get(node.name, len(on_path)))
    failures = [node for node in nodes if node.kind == "failure" and node.name not in on_path]
    grouped = failures if len(failures) > 1 else []
    for node in nodes:
        if node not in grouped:
            yield from _state(node, ids, classes)
    if grouped:
        yield f'  state "failure ends" as {one.level}_failures {{'
        yield "    direction LR"
        for node in grouped:
            yield from ("  " + line for line in _state(node, ids, classes))
        yield "  }"
    yield f"  [*] --> {ids[one.initial]}{_label(counted(one.start_count, ()))}"
    yield from _arrows(one, ids)
    for node in nodes:
        if node.kind == "success" or (node.kind == "failure" and node not in grouped):
            yield f"  {ids[node.name]} --> [*]"


def _state(node: Node, ids: Mapping[str, str], classes: dict[str, list[str]]) -> Iterator[str]:
    yield f'  state "{escape(node.lines[0])}" as {ids[node.name]}'
    for extra in node_lines(node)[1:]:
        yield f"  {ids[node.name]} : {escape(extra)}"
    for name in _classes_of(node):
        classes.setdefault(name, []).append(ids[node.name])


def _arrows(one: Picture, ids: Mapping[str, str]) -> Iterator[str]:
    """The happy path's arrows first, in its order, then the rest in file order; an arrow
    from several states through the junction of its set of sources (declared once)."""
    steps = {step: number for number, step in enumerate(pairwise(one.happy))}

    def first_step(arrow: Arrow) -> int:
        return min((steps[(s, arrow.target)] for s in arrow.sources
                    if (s, arrow.target) in steps), default=len(steps))

    junctions: dict[frozenset[str], str] = {}
    for arrow in sorted(one.arrows, key=first_step):
        if len(arrow.sources) == 1:
            yield f"  {ids[arrow.sources[0]]} --> {ids[arrow.target]}{_label(arrow.label())}"
            continue
        junction = junctions.get(frozenset(arrow.sources))
        if junction is None:
            junction = junctions[frozenset(arrow.sources)] = f"{one.level}_j{arrow.index}"
            yield f"  state {junction} <<choice>>"
            yield from _into_junction(junction, arrow.sources, one, ids)
        yield f"  {junction} --> {ids[arrow.target]}{_label(arrow.label())}"


def _into_junction(junction: str, sources: tuple[str, ...], one: Picture,
                   ids: Mapping[str, str]) -> Iterator[str]:
    """One line from each source into the junction; on a path picture, led by how often the
    path left that source through it."""
    arrows = [a for a in one.arrows if frozenset(a.sources) == frozenset(sources)]
    for source in sources:
        counts = [a.counts[a.sources.index(source)] for a in arrows if a.counts is not None]
        count = sum(counts) if counts else None
        yield f"  {ids[source]} --> {junction}{_label(counted(count, ()))}"


def _classes_of(node: Node) -> list[str]:
    if node.name == WILDCARD:
        return ["wildcard"]
    names: list[str] = [node.kind] if node.kind != "normal" else []
    if node.visits is not None:
        names.append("onpath" if node.visits else "offpath")
    return names


def _label(lines: tuple[str, ...]) -> str:
    """` : line<br>line`: the label's lines as the DOT picture wraps them."""
    return " : " + "<br>".join(escape(line) for line in lines) if lines else ""
