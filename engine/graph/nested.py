"""A job's path drawn with the paths of the child objects its machine made, in one picture.

A JobSet's Jobs, a TrainJob's JobSet (and that JobSet's Jobs) are jobs of their own,
each run by the machine of its kind. The job is drawn as `graph --job` draws one job;
each child is a cluster of its own below it, titled with its kind, name and machine,
holding its machine with the child's own path highlighted, and linked by a dashed arrow
from the parent's job state in which the child was made (labelled with the parent's
replica that made it). Children's children nest the same way. Ids of a child's nodes
start with its path of names, so machines drawn twice never share a node.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from engine.definition.schema import MachineDefinition
from engine.graph.dot import (
    attributes,
    caption,
    defaults,
    machine_lines,
    node_id,
    quote,
    start_id,
)
from engine.graph.parts import DrawLevel, pictures
from engine.graph.path import Highlight

_CHILD = {"labelloc": "t", "labeljust": "l", "fontsize": "13", "style": "dashed",
          "color": "#6b7280"}
_LINK = {"style": "dashed", "color": "#6b7280", "fontcolor": "#4b5563", "arrowhead": "vee",
         "fontsize": "10"}


@dataclass(frozen=True)
class JobPath:
    """One job of the picture: its machine, the path it took, and the children it made."""

    title: str
    """How its cluster is titled: `Job default/pair-workers-0`."""
    definition: MachineDefinition
    highlight: Highlight | None
    created_in: str | None = None
    """The parent's job state in which this child was made (None: not known, or the job
    drawn is no child): its link leaves that state, else the parent's start."""
    made_by: str = ""
    """The parent's replica whose object this is (`workers-0`), said on the link."""
    children: tuple[JobPath, ...] = ()


def nested_to_dot(root: JobPath, *, level: DrawLevel = "all") -> str:
    """DOT of the job's machine with its path, and each child's below it (`level` says which
    machines of every job are drawn)."""
    drawn = pictures(root.definition, level, root.highlight)
    graph = {**caption(drawn, root.highlight is not None), "compound": "true"}
    lines = [f"digraph {quote(root.definition.name)} {{", *defaults(),
             f"  graph {attributes(graph)}", *machine_lines(drawn)]
    lines += list(_children(root, "", level))
    lines.append("}")
    return "\n".join(lines) + "\n"


def _children(parent: JobPath, prefix: str, level: DrawLevel) -> Iterator[str]:
    """Each child's cluster and its link from the parent, then the children's own."""
    for number, child in enumerate(parent.children):
        inner = f"{prefix}child{number}:"
        yield f"  subgraph {quote(f'cluster_{inner}')} {{"
        yield f"    graph {attributes({**_CHILD, 'label': _title(child)})}"
        drawn = pictures(child.definition, level, child.highlight)
        yield from ("  " + line for line in machine_lines(drawn, inner))
        yield "  }"
        yield _link(parent, prefix, child, inner, level)
        yield from _children(child, inner, level)


def _title(child: JobPath) -> str:
    return f"{child.title} (machine {child.definition.name})"


def _link(parent: JobPath, prefix: str, child: JobPath, inner: str, level: DrawLevel) -> str:
    """The dashed arrow from the parent's job state the child was made in (from the
    parent's start when that state is not known or the job machine is not drawn) to the
    start of the child's first drawn machine, ending at the child's cluster."""
    upper = "replica" if level == "replica" else "job"
    known = upper == "job" and child.created_in in parent.definition.spec.job.states
    source = (node_id("job", str(child.created_in), prefix) if known
              else start_id(upper, prefix))
    label = f"{child.made_by} makes it" if child.made_by else "makes it"
    link = {**_LINK, "label": label, "lhead": f"cluster_{inner}"}
    return f"  {source} -> {start_id(upper, inner)} {attributes(link)}"
