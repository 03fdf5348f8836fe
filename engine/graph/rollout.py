"""A rollout's path as a picture: each situation of its revisions (pods wanted, pods,
available pods) a box, each event an arrow, from the template's change to completion.

Drawn from plain data (what engine/modelcheck/rollouts.py walks), so pictures stay pure:
`jobmachine graph FILE --rollout`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from engine.graph.dot import quote
from engine.graph.images import ImageError, png_from_svg, svg_from_dot
from engine.graph.mermaid import escape

Revisions = Sequence[tuple[str, int, int, int]]
"""Per revision, oldest first: (name, pods wanted, pods, available pods)."""
Steps = Sequence[tuple[str, Revisions]]
"""(event, the revisions after it), the first the rollout's start."""


class RolloutPictureError(Exception):
    """The picture could not be made; the message says why."""


def _box(revisions: Revisions) -> str:
    return "\n".join(f"{name}: {wanted} wanted, {pods} pods, {available} available"
                     for name, wanted, pods, available in revisions)


def rollout_dot(title: str, steps: Steps) -> str:
    """DOT: the situations top to bottom, each arrow the event between them."""
    lines = [f"digraph {quote('rollout')} {{",
             f"  graph [label={quote(title)}, labelloc=t, fontname=Helvetica, fontsize=14]",
             "  node [shape=box, style=rounded, fontname=Helvetica, fontsize=11]",
             "  edge [fontname=Helvetica, fontsize=10]",
             f"  start [label={quote(steps[0][0])}, shape=plaintext]"]
    for number, (_, revisions) in enumerate(steps):
        lines.append(f"  s{number} [label={quote(_box(revisions))}]")
    lines.append("  start -> s0")
    for number, (event, _) in enumerate(steps[1:], start=1):
        lines.append(f"  s{number - 1} -> s{number} [label={quote(event)}]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def rollout_mermaid(title: str, steps: Steps) -> str:
    """Mermaid: the same, as a top-down flowchart."""
    lines = ["---", f"title: {json.dumps(title)}", "---", "flowchart TD",  # YAML's quoting
             f"  start([\"{escape(steps[0][0])}\"])"]
    for number, (_, revisions) in enumerate(steps):
        box = "<br/>".join(escape(line) for line in _box(revisions).split("\n"))
        lines.append(f"  s{number}[\"{box}\"]")
    lines.append("  start --> s0")
    for number, (event, _) in enumerate(steps[1:], start=1):
        lines.append(f"  s{number - 1} -->|\"{escape(event)}\"| s{number}")
    return "\n".join(lines) + "\n"


def rollout_picture(title: str, steps: Steps, fmt: str) -> bytes:
    """The picture in `fmt` (dot, mermaid, svg, png)."""
    if not steps:
        raise RolloutPictureError("a rollout path has at least its start")
    if fmt == "mermaid":
        return rollout_mermaid(title, steps).encode()
    dot = rollout_dot(title, steps)
    if fmt == "dot":
        return dot.encode()
    if fmt not in {"svg", "png"}:
        raise RolloutPictureError(f"unknown format {fmt!r}; formats are: dot, mermaid, svg, png")
    try:
        svg = svg_from_dot(dot)
        return svg if fmt == "svg" else png_from_svg(svg)
    except ImageError as exc:
        raise RolloutPictureError(str(exc)) from exc
