"""The machine language, pure: load, validate, compile and step machine definitions.

No network, no clock: the controller, the simulator and the pictures all use
the same definitions through this API.
"""

from engine.definition.compiled import (
    CompiledChild,
    CompiledDefinition,
    CompiledMachine,
    CompiledObject,
    CompiledRollout,
    CompiledSchedule,
    StepError,
    compile_definition,
)
from engine.definition.errors import DefinitionError, Diagnostic, Position
from engine.definition.loader import LoadedDefinition, load_file, load_text
from engine.definition.references import ReferenceTarget, reference_targets
from engine.definition.rendering import (
    ChildDecorations,
    ChildReading,
    PodDecorations,
    RenderedObject,
    RenderedRollout,
    RenderedSchedule,
    broken_rules,
    read_child,
    render_child_decorations,
    render_objects,
    render_pod_decorations,
    render_replacement_policy,
    render_rollout,
    render_schedule,
    render_status_fields,
)
from engine.definition.step import (
    Facts,
    FiredTransition,
    PlannedAction,
    StepResult,
    replays,
    requeue_after,
    state_timeout,
    step,
)
from engine.definition.validate import load_definitions, validate_paths

__all__ = [
    "ChildDecorations",
    "ChildReading",
    "CompiledChild",
    "CompiledDefinition",
    "CompiledMachine",
    "CompiledObject",
    "CompiledRollout",
    "CompiledSchedule",
    "DefinitionError",
    "Diagnostic",
    "Facts",
    "FiredTransition",
    "LoadedDefinition",
    "PlannedAction",
    "PodDecorations",
    "Position",
    "ReferenceTarget",
    "RenderedObject",
    "RenderedRollout",
    "RenderedSchedule",
    "StepError",
    "StepResult",
    "broken_rules",
    "compile_definition",
    "load_definitions",
    "load_file",
    "load_text",
    "read_child",
    "reference_targets",
    "render_child_decorations",
    "render_objects",
    "render_pod_decorations",
    "render_replacement_policy",
    "render_rollout",
    "render_schedule",
    "render_status_fields",
    "replays",
    "requeue_after",
    "state_timeout",
    "step",
    "validate_paths",
]
