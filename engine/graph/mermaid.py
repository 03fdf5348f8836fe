"""A machine definition as a Mermaid `stateDiagram-v2`, for Markdown that renders it.

Mermaid needs nothing installed here: GitHub and most documentation sites draw
it. States get ids by layout order (`job_0`, ...) and show their names as
text, so any state name is safe; label text uses Mermaid's `#code;` entities.
"""

from __future__ import annotations

from collections.abc import Iterator

from engine.definition.schema import MachineDefinition
from engine.graph.parts import WILDCARD, DrawLevel, Node, Picture, counted, node_lines, pictures
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
# Characters Mermaid would read as syntax inside a label, and their entity codes.
_ENTITIES = {
    "#": "#35;",
    ";": "#59;",
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
    for node in one.nodes:
        yield f'  state "{escape(node.lines[0])}" as {ids[node.name]}'
        for extra in node_lines(node)[1:]:
            yield f"  {ids[node.name]} : {escape(extra)}"
        for name in _classes_of(node):
            classes.setdefault(name, []).append(ids[node.name])
    yield f"  [*] --> {ids[one.initial]}{_label(counted(one.start_count, ()))}"
    for arrow in one.arrows:
        for number, source in enumerate(arrow.sources):
            yield f"  {ids[source]} --> {ids[arrow.target]}{_label(arrow.label(number))}"
    for node in one.nodes:
        if node.kind in ("success", "failure"):
            yield f"  {ids[node.name]} --> [*]"


def _classes_of(node: Node) -> list[str]:
    if node.name == WILDCARD:
        return ["wildcard"]
    names: list[str] = [node.kind] if node.kind != "normal" else []
    if node.visits is not None:
        names.append("onpath" if node.visits else "offpath")
    return names


def _label(lines: tuple[str, ...]) -> str:
    return f" : {escape(', '.join(lines))}" if lines else ""
