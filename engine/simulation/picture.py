"""The path a job took, drawn on its machine: from a simulation, a model check's trace, or a
live job (`jobmachine graph --job`).

The engine keeps exact counts of every transition in the job's status record,
so the picture is drawn from the status alone. A simulated job with child objects
(`tree_picture`) is drawn with their paths, as `graph --job` draws a live one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.record import read_record
from engine.definition import CompiledDefinition
from engine.graph.nested import JobPath
from engine.graph.path import Highlight, highlight_from_counts, highlight_from_history
from engine.graph.render import render_definition, render_job_tree
from engine.simulation.made_in import state_made_in
from engine.simulation.world import World


def status_highlight(status: Mapping[str, Any]) -> Highlight:
    """What a job's status says it went through: the transition counts, else (a record
    from before counts were kept) its recent history."""
    record = read_record(status)
    counts = [
        {"level": level, "from": source or None, "to": target, "reason": reason, "count": count}
        for (level, source, target, reason), count in record.transition_counts.items()
    ]
    return highlight_from_counts(counts) if counts else highlight_from_history(record.history)


def tree_picture(worlds: Mapping[tuple[ReplicaId, ...], World], *, fmt: str,
                 level: str = "all") -> bytes:
    """The simulated job's machine with its path, and each child's below it (`worlds`: every
    job of the run by the replicas leading to it, `Simulation.worlds`)."""
    return render_job_tree(_job_path(worlds, ()), level=level, fmt=fmt)


def _job_path(worlds: Mapping[tuple[ReplicaId, ...], World], path: tuple[ReplicaId, ...],
              parent: World | None = None) -> JobPath:
    world = worlds[path]
    metadata = world.job["metadata"]
    below = [p for p in sorted(worlds) if len(p) == len(path) + 1 and p[:len(path)] == path]
    return JobPath(
        f"{world.job['kind']} {metadata.get('namespace')}/{metadata['name']}",
        world.definition.definition, status_highlight(world.job.get("status") or {}),
        created_in=None if parent is None else state_made_in(
            world.job, parent.record, parent.definition.definition.spec.job, ()),
        made_by=str(path[-1]) if path else "",
        children=tuple(_job_path(worlds, p, world) for p in below))


def path_picture(definition: CompiledDefinition, status: Mapping[str, Any], *, fmt: str,
                 level: str = "all") -> bytes:
    """The machine in `fmt` (dot, mermaid, svg, png) with the path in `status` highlighted."""
    return render_definition(definition.definition, level=level, fmt=fmt,
                             highlight=status_highlight(status))
