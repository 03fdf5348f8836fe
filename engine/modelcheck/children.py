"""A spec.child replica's moves in `jobmachine check`: what the child's own machine can make
of it, found by exploring that machine.

A JobSet's replicas are batch Jobs, which the batch-job machine runs. The parent's
guards read what that machine writes into a Job's status (conditions with their reasons,
ready and active counts), not pods, so the check moves a child by giving it a status its
own machine wrote. Which statuses are explored, not listed: the child as the parent made
it is run through the child machine's check (its pods start, end with each exit code
the machine tells apart, are lost or deleted; time passes to its deadlines), and every
status it settles in is remembered, each terminal one with how it ended (Complete, or
Failed with BackoffLimitExceeded, DeadlineExceeded...). A new child kind needs its
machine only, no Python; a child whose machine has children of its own (a TrainJob's
JobSet) is explored the same way, one level down.

From those, a live child (created, not being deleted, not ended) can:
- end in each way its machine ends it (each distinct terminal status);
- become ready (the first status found that the parent's `ready` expression accepts), or
  stop being ready (the first found that it does not);
- be suspended by its machine while the parent suspends it (spec.suspend, as the parent
  forces it), and be resumed once the parent lets it run again;
- be deleted by someone else (a fault, as a deleted pod).
Children being deleted (in the foreground: they stay until their own children are gone)
are gone together, as pods being deleted are.

What is not explored: a child's status between those (a Job with some pods ready and
others not); the counts the parent reads then take the values of the statuses above.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.native_status import is_native
from engine.controller.reconcile.observe import observe_child
from engine.definition import CompiledDefinition
from engine.definition.cel_types import SchemaLookup
from engine.kube.timestamps import format_time
from engine.modelcheck.child_status import stamped, status_key
from engine.modelcheck.explore import TRANSITIONS_KEPT, explore_world
from engine.modelcheck.moves import Move
from engine.modelcheck.shapes import START, Bounds, admission, exit_codes
from engine.simulation.world import World

CHILD_MAX_STATES = 2_000
"""Situations of one child explored to find its statuses (a batch Job of one pod has
about a hundred): past it, the statuses found so far are the child's moves."""

Machines = Mapping[tuple[str, str], CompiledDefinition]
"""The machines loaded, by the (apiVersion, kind) each governs."""


@dataclass(frozen=True)
class Outcome:
    """A status the child's machine wrote, and how a trace says it."""

    label: str
    status: Mapping[str, Any]
    key: bytes
    """The status but for times (`child_status.status_key`)."""


@dataclass(frozen=True)
class Outcomes:
    """What the child's machine can make of one child."""

    key: bytes
    """The child's spec, by which these were found."""
    running: tuple[Outcome, ...]
    """Every status it settles in while the child has not ended, in the order found."""
    ends: tuple[Outcome, ...]
    """Every distinct terminal status, in the order found."""
    suspended: Outcome | None
    """Its status once the parent suspended it (None: its machine has no suspension)."""
    resumed: Outcome | None
    """Its status once the parent let it run again after that."""


class ChildMoves:
    """The replica moves of a machine whose replicas are child objects (`explore`'s
    `replica_moves`), the child's machine found among `machines`."""

    def __init__(self, parent: CompiledDefinition, machines: Machines, bounds: Bounds,
                 schemas: SchemaLookup | None = None) -> None:
        """`schemas`: the kinds' schemas, through which a child is stored as the API server
        stores it (pruned, defaulted) before its machine runs it."""
        child = parent.child
        if child is None:
            raise ValueError(f"machine {parent.name} has no spec.child")
        found = machines.get((child.api_version, child.kind))
        if found is None:
            raise ValueError(f"no machine governs {child.kind} ({child.api_version}), the "
                             f"children of machine {parent.name}")
        self.parent = parent
        self.machine = found
        self.bounds = bounds
        self.below = (ChildMoves(found, machines, bounds, schemas)
                      if found.child is not None else None)
        kind = schemas(child.api_version, child.kind) if schemas is not None else None
        self._stored = admission(kind.schema if kind is not None else None)
        self._readiness: dict[tuple[bytes, bytes], tuple[Outcome | None, Outcome | None]] = {}
        self._outcomes: dict[bytes, Outcomes] = {}

    def __call__(self, world: World) -> Iterator[Move]:
        """Every move of the world's children now (`moves.ReplicaMoves`)."""
        kind = self.machine.governs.kind
        going = sorted(r for r, c in world.pods.items() if c["metadata"].get("deletionTimestamp"))
        if going:
            yield Move(f"every {kind} being deleted is gone ({', '.join(map(str, going))})",
                       _gone(going))
        for replica, child in sorted(world.pods.items()):
            if replica in going:
                continue
            outcomes = self.outcomes(child)
            key = status_key(child.get("status"))
            if any(key == end.key for end in outcomes.ends):
                continue
            name = f"{kind} {child['metadata']['name']}"
            for label, outcome in self._next(world, child, key, outcomes):
                yield Move(f"{name} {label}", _given(replica, outcome))
            yield Move(f"{name} is deleted by someone else", _deleted(replica), fault=True)

    def _next(self, world: World, child: Mapping[str, Any], key: bytes, outcomes: Outcomes
              ) -> Iterator[tuple[str, Outcome]]:
        suspended = outcomes.suspended
        if _suspended(self.machine, child):
            if suspended is not None and key != suspended.key:
                yield "is suspended by its machine", suspended
            return
        if suspended is not None and key == suspended.key and outcomes.resumed is not None:
            yield "is resumed by its machine", outcomes.resumed
            return
        ready, waiting = self._readiness_of(world, child, outcomes)
        if ready is not None and key != ready.key:
            yield "is ready", ready
        if waiting is not None and ready is not None and key == ready.key:
            yield "is no longer ready", waiting
        for end in outcomes.ends:
            yield f"ends: {end.label}", end

    def _readiness_of(self, world: World, child: Mapping[str, Any], outcomes: Outcomes
                      ) -> tuple[Outcome | None, Outcome | None]:
        """The first status of a running child the parent's `ready` expression accepts, and
        the first it does not (one with pods: not the status of a child just made), for
        this parent's spec (the expression may read it)."""
        key = (outcomes.key, orjson.dumps([world.job.get("spec"), child["metadata"].get(
            "labels")], option=orjson.OPT_SORT_KEYS))
        found = self._readiness.get(key)
        if found is None:
            def ready(outcome: Outcome) -> bool:
                seen = {**child, "status": outcome.status}
                return observe_child(seen, job=world.job, definition=self.parent
                                     ).observation == "childReady"
            found = (next((o for o in outcomes.running if ready(o)), None),
                     next((o for o in outcomes.running if o.status and not ready(o)), None))
            self._readiness[key] = found
        return found

    def outcomes(self, child: Mapping[str, Any]) -> Outcomes:
        """What the child's machine can make of this child (explored once per spec)."""
        spec = orjson.loads(orjson.dumps(child.get("spec") or {}))
        _run_policy(self.machine, {"spec": spec})["suspend"] = False  # explored running
        key = orjson.dumps(spec, option=orjson.OPT_SORT_KEYS)
        found = self._outcomes.get(key)
        if found is None:
            found = self._outcomes[key] = self._explored(child, key)
        return found

    def _explored(self, child: Mapping[str, Any], key: bytes) -> Outcomes:
        machine = self.machine
        job: dict[str, Any] = orjson.loads(orjson.dumps(
            {k: v for k, v in child.items() if k != "status"}))
        # As the API server stores it (a JobSet made from a TrainJob's runtime gets its
        # kind's defaults: each replicated job's groupName...); as made where refused.
        job = self._stored(job) or job
        job["metadata"] = {**job["metadata"], "uid": "uid-child", "generation": 1}
        job["metadata"].pop("deletionTimestamp", None)
        _run_policy(machine, job)["suspend"] = False
        world = World(machine, job, START, transitions_kept=TRANSITIONS_KEPT, keep_native=True)
        guards = [t.guard.source for m in (machine.job, machine.replica)
                  for t in m.transitions if t.guard is not None]
        settled, ended = explore_world(
            machine, world, self._bounds(), exit_codes(machine, guards), replica_moves=self.below)
        running = _distinct(_written(w) for w in settled if not w.ended())
        ends = _distinct((_written(w) for w in ended), labelled=True)
        suspended = resumed = None
        if settled:
            paused = settled[0].copy()
            _suspend(paused, value=True)
            if paused.state() != settled[0].state():
                suspended = _outcome(_written(paused), "")
                _suspend(paused, value=False)
                resumed = _outcome(_written(paused), "")
        return Outcomes(key, tuple(running), tuple(ends), suspended, resumed)

    def _bounds(self) -> Bounds:
        return Bounds(self.bounds.max_replicas, self.bounds.max_types, self.bounds.backoff_limit,
                      self.bounds.restart_policies, self.bounds.faults, CHILD_MAX_STATES)


def _written(world: World) -> Mapping[str, Any]:
    """The child's status as its machine writes it: the kind's own (Native layout), else
    the engine's."""
    return world.native if is_native(world.definition) else world.job.get("status") or {}


def _suspend(world: World, *, value: bool) -> None:
    """Set the child's suspension as its parent would, and let its machine settle."""
    world.edit_spec(lambda spec: _run_policy(world.definition, {"spec": spec}).update(
        suspend=value))
    for _ in range(50):
        if not world.reconcile().changed:
            return


def _run_policy(machine: CompiledDefinition, job: dict[str, Any]) -> dict[str, Any]:
    """The map at the machine's governs.runPolicy path of `job`, made where missing."""
    here = job
    for part in machine.governs.run_policy.split("."):
        here = here.setdefault(part, {})
    return here


def _suspended(machine: CompiledDefinition, child: Mapping[str, Any]) -> bool:
    """Whether the child's spec says it is suspended (as its parent forces it)."""
    here: Any = child
    for part in machine.governs.run_policy.split("."):
        here = here.get(part) if isinstance(here, Mapping) else None
    return isinstance(here, Mapping) and bool(here.get("suspend"))


def _distinct(statuses: Any, *, labelled: bool = False) -> list[Outcome]:
    """One outcome per distinct status, in the order given; ends (`labelled`) are told
    apart by their conditions only (the first of each stands for the others: ends that
    differ in their counts alone, a Job complete after one failed pod or none, give the
    parent the same observation, and the counts of an ended child say nothing new)."""
    found: dict[bytes, Outcome] = {}
    for status in statuses:
        key = status_key({"conditions": status.get("conditions")} if labelled else status)
        if key not in found:
            found[key] = _outcome(status, _end_label(status) if labelled else "")
    return list(found.values())


def _outcome(status: Mapping[str, Any], label: str) -> Outcome:
    return Outcome(label, status, status_key(status))


def _end_label(status: Mapping[str, Any]) -> str:
    """How a trace says a terminal status: its True conditions with their reasons."""
    conditions = [c for c in status.get("conditions") or () if c.get("status") == "True"]
    return ", ".join(f"{c.get('type')} ({c.get('reason', '')})" for c in conditions) or (
        "no condition")


def _given(replica: ReplicaId, outcome: Outcome) -> Callable[[World], None]:
    def apply(world: World) -> None:
        world.pods[replica]["status"] = stamped(outcome.status, format_time(world.now))
    return apply


def _deleted(replica: ReplicaId) -> Callable[[World], None]:
    def apply(world: World) -> None:
        world.pods[replica]["metadata"]["deletionTimestamp"] = format_time(world.now)
    return apply


def _gone(replicas: list[ReplicaId]) -> Callable[[World], None]:
    def apply(world: World) -> None:
        for replica in replicas:
            world.finish_deletion(replica)
    return apply
