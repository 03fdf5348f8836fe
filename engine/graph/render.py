"""One entry point for every picture format: DOT, Mermaid, SVG and PNG.

`jobmachine graph` and the docs generator call `render_file`; code that already
holds a definition (or a job's recorded path) calls `render_definition`, and one that
holds a job's path with its children's `render_job_tree`. Every
failure is a `RenderError` whose message can be shown to the user as is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, get_args

from engine.definition.errors import DefinitionError, name_list
from engine.definition.loader import load_file
from engine.definition.schema import MachineDefinition
from engine.graph.dot import to_dot
from engine.graph.images import ImageError, png_from_svg, svg_from_dot
from engine.graph.mermaid import to_mermaid
from engine.graph.nested import JobPath, nested_to_dot
from engine.graph.parts import DRAW_LEVELS, DrawLevel
from engine.graph.path import Highlight

Format = Literal["dot", "mermaid", "svg", "png"]
FORMATS: tuple[str, ...] = get_args(Format)


class RenderError(Exception):
    """The picture could not be made; the message says why (FILE:LINE:COL lines for bad files)."""


def render_file(
    path: str | Path, *, level: str = "all", fmt: str = "dot", machine: str | None = None
) -> bytes:
    """Draw the definition in `path` (the one named `machine` when the file holds several)."""
    return render_definition(_pick(path, machine), level=level, fmt=fmt)


def render_definition(
    definition: MachineDefinition,
    *,
    level: str = "all",
    fmt: str = "dot",
    highlight: Highlight | None = None,
) -> bytes:
    """The picture as bytes: UTF-8 text for dot and mermaid, image bytes for svg and png."""
    drawn_level = _level(level)
    if fmt not in FORMATS:
        raise RenderError(f"unknown format {fmt!r}; formats are: {name_list(FORMATS)}")
    if fmt == "mermaid":
        return to_mermaid(definition, level=drawn_level, highlight=highlight).encode()
    return _from_dot(to_dot(definition, level=drawn_level, highlight=highlight), fmt)


def render_job_tree(root: JobPath, *, level: str = "all", fmt: str = "dot") -> bytes:
    """A job's path with its children's paths (`nested.py`); a job without children is
    drawn as `render_definition` draws it, in every format. The nested picture is
    Graphviz's (clusters and links between them): DOT, SVG or PNG."""
    if not root.children:
        return render_definition(root.definition, level=level, fmt=fmt,
                                 highlight=root.highlight)
    if fmt not in FORMATS:
        raise RenderError(f"unknown format {fmt!r}; formats are: {name_list(FORMATS)}")
    if fmt == "mermaid":
        raise RenderError("a job drawn with its children's paths is a Graphviz picture: dot, "
                          "svg or png, not mermaid")
    return _from_dot(nested_to_dot(root, level=_level(level)), fmt)


def _from_dot(dot: str, fmt: str) -> bytes:
    if fmt == "dot":
        return dot.encode()
    try:
        svg = svg_from_dot(dot)
        return svg if fmt == "svg" else png_from_svg(svg)
    except ImageError as exc:
        raise RenderError(str(exc)) from exc


def _pick(path: str | Path, machine: str | None) -> MachineDefinition:
    try:
        loaded = load_file(path)
    except DefinitionError as exc:
        raise RenderError(str(exc)) from exc
    names = [one.name for one in loaded]
    if machine is not None:
        for one in loaded:
            if one.name == machine:
                return one.definition
        raise RenderError(f"{path}: no definition named {machine!r}; it holds: {name_list(names)}")
    if len(loaded) == 1:
        return loaded[0].definition
    if not loaded:
        raise RenderError(f"{path}: the file holds no StateMachine definition")
    raise RenderError(
        f"{path}: the file holds {len(names)} definitions ({name_list(names)}): "
        "choose one with --machine NAME"
    )


def _level(level: str) -> DrawLevel:
    for known in DRAW_LEVELS:
        if level == known:
            return known
    raise RenderError(f"unknown level {level!r}; levels are: {name_list(DRAW_LEVELS)}")
