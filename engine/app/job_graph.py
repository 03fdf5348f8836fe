"""`jobmachine graph --job NS/NAME`: a job's machine with the path it took highlighted.

The job's status holds exact counts of every transition it fired (and the
states it visited), so the picture is drawn from the API alone: no logs, no
engine state.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.controller.client import KubeClient
from engine.controller.errors import NotFound
from engine.controller.resources import JOB_RESOURCES
from engine.definition import CompiledDefinition
from engine.graph.path import highlight_from_counts, highlight_from_history
from engine.graph.render import render_definition


class JobNotFoundError(LookupError):
    """No job of any kind the definitions govern has that namespace and name."""


def job_picture(
    client: KubeClient,
    namespace: str,
    name: str,
    definitions: Sequence[CompiledDefinition],
    *,
    level: str = "all",
    fmt: str = "dot",
) -> bytes:
    """The picture of the job's definition with its path highlighted, in `fmt`."""
    for definition in definitions:
        kind = definition.definition.spec.governs.kind
        resource = JOB_RESOURCES.get(kind)
        if resource is None:
            continue
        try:
            job = client.get(resource, name, namespace)
        except NotFound:
            continue
        status = job.get("status") or {}
        counts = status.get("transitionCounts")
        highlight = (
            highlight_from_counts(counts) if counts
            else highlight_from_history(status.get("history") or [])
        )
        return render_definition(definition.definition, level=level, fmt=fmt, highlight=highlight)
    kinds = ", ".join(d.definition.spec.governs.kind for d in definitions)
    raise JobNotFoundError(f"no job {namespace}/{name} of the kinds {kinds}")
