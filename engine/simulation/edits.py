"""What a user's `kubectl` does to a simulated job: suspend or resume it, patch it.

Spec changes go through `World.edit_spec`, which raises `metadata.generation` as the
API server does, so the engine reads the new spec.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.simulation.world import World, merge_patch


def set_suspend(world: World, value: bool) -> None:
    """Set the job's runPolicy.suspend (at the path its machine says the kind keeps it)."""
    def change(spec: dict[str, Any]) -> None:
        here = spec
        for part in world.definition.governs.run_policy.split(".")[1:]:  # spec.-rooted
            here = here.setdefault(part, {})
        here["suspend"] = value

    world.edit_spec(change)


def apply_patch(world: World, patch: Mapping[str, Any]) -> None:
    """A JSON merge patch (RFC 7386) of the job's metadata and spec."""
    merge_patch(world.job["metadata"], patch.get("metadata") or {})
    spec = patch.get("spec")
    if spec:
        world.edit_spec(lambda current: merge_patch(current, spec))
