"""The path a job took, drawn on its machine: from a simulation, a model check's trace, or a
live job (`jobmachine graph --job`).

The engine keeps exact counts of every transition in the job's status record,
so the picture is drawn from the status alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.controller.reconcile.record import read_record
from engine.definition import CompiledDefinition
from engine.graph.path import Highlight, highlight_from_counts, highlight_from_history
from engine.graph.render import render_definition


def status_highlight(status: Mapping[str, Any]) -> Highlight:
    """What a job's status says it went through: the transition counts, else (a record
    from before counts were kept) its recent history."""
    record = read_record(status)
    counts = [
        {"level": level, "from": source or None, "to": target, "reason": reason, "count": count}
        for (level, source, target, reason), count in record.transition_counts.items()
    ]
    return highlight_from_counts(counts) if counts else highlight_from_history(record.history)


def path_picture(definition: CompiledDefinition, status: Mapping[str, Any], *, fmt: str,
                 level: str = "all") -> bytes:
    """The machine in `fmt` (dot, mermaid, svg, png) with the path in `status` highlighted."""
    return render_definition(definition.definition, level=level, fmt=fmt,
                             highlight=status_highlight(status))
