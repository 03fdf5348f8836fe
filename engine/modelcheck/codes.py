"""Which exit codes a machine tells apart, found by asking the engine rather than the text.

The numbers an expression compares against give candidates (`shapes.exit_codes`);
two candidates are one class for a job shape when a running replica ending
with either leads the engine to the same states, restarts and decisions, for
every replica type. Only one code per class is explored.
"""

from __future__ import annotations

from collections.abc import Hashable

from engine.definition import CompiledDefinition
from engine.modelcheck.shapes import START, Bounds, Shape, build_job
from engine.simulation import kubelet
from engine.simulation.world import World

_PASSES = 50


def exit_code_classes(definition: CompiledDefinition, shape: Shape, bounds: Bounds,
                      candidates: tuple[int, ...]) -> tuple[int, ...]:
    """One code per class of `candidates` the engine treats alike for this shape."""
    world = World(definition, build_job(definition, shape, bounds), START)
    settle(world)
    for pod in world.pods.values():
        if kubelet.is_waiting(pod):
            kubelet.start(pod, world.now)
    settle(world)
    running = {r.type: r for r, pod in sorted(world.pods.items(), reverse=True)
               if kubelet.is_running(pod)}
    if not running:
        return candidates
    classes: dict[Hashable, int] = {}
    for code in candidates:
        outcome = []
        for replica in running.values():
            ended = world.copy()
            kubelet.end(ended.pods[replica], code, ended.now)
            settle(ended)
            outcome.append(_outcome(ended))
        classes.setdefault(tuple(outcome), code)
    return tuple(sorted(classes.values()))


def settle(world: World) -> None:
    """Reconcile until a pass changes nothing (or give up quietly: the search reports it)."""
    for _ in range(_PASSES):
        if not world.reconcile().changed:
            return


def _outcome(world: World) -> Hashable:
    record = world.record
    return (
        record.state,
        tuple(sorted((str(r), s) for r, s in record.replica_states.items())),
        record.restarts,
        record.restart_attempt,
        tuple(sorted(str(r) for r, p in world.pods.items()
                     if p["metadata"].get("deletionTimestamp"))),
        record.last_failure.split("(")[0],
    )
