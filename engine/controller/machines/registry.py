"""Which machine revision a job runs with: the one it recorded, else the one in force for its kind.

Read by every reconcile, written by the machine controller: each update replaces
one immutable snapshot, so readers never lock. Revisions are compiled once, on
first use, and shared by every job that runs with them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from engine.controller.machines.revisions import compile_revision, machine_in_name
from engine.definition import CompiledDefinition, DefinitionError
from engine.kube.resources import Resource

Obj = Mapping[str, Any]
MACHINE_STATUS_FIELD = "machine"
"""The job's status field naming the machine revision it runs with (`<machine>-<hash>`).

Engines before this one wrote `{name, revision}` there; both are read."""


@dataclass(frozen=True)
class Governed:
    """A kind some machine governs: new jobs of the kind start with `revision`."""

    machine: str
    revision: str
    resource: Resource


@dataclass(frozen=True)
class Assignment:
    """The machine revision a job runs with."""

    machine: str
    revision: str
    definition: CompiledDefinition
    moved_from: tuple[str, str] | None = None
    """(machine, revision) the job's status recorded, when the job moved from it to this
    one (it had not started with it)."""


@dataclass(frozen=True)
class Unassigned:
    """Why a job has no machine to run with; the engine leaves it as it is and says so."""

    reason: str
    message: str


@dataclass(frozen=True)
class _Snapshot:
    governed: Mapping[str, Governed] = field(default_factory=dict)
    refused: Mapping[str, Unassigned] = field(default_factory=dict)
    watched: Mapping[str, Resource] = field(default_factory=dict)
    revisions: Mapping[str, Obj] = field(default_factory=dict)


def recorded_revision(job: Obj) -> tuple[str, str] | None:
    """(machine, revision) the job's status says it runs with, if it says."""
    recorded = (job.get("status") or {}).get(MACHINE_STATUS_FIELD)
    if isinstance(recorded, str) and "-" in recorded:
        return machine_in_name(recorded), recorded
    if not isinstance(recorded, Mapping) or not recorded.get("revision"):
        return None
    return str(recorded.get("name") or ""), str(recorded["revision"])


class MachineRegistry:
    """The machines in force, the revisions kept, and the kinds the engine watches."""

    def __init__(self) -> None:
        self._snapshot: _Snapshot | None = None
        self._compiled: dict[str, CompiledDefinition] = {}
        self._broken: dict[str, str] = {}
        self._lock = threading.Lock()

    def update(
        self,
        *,
        governed: Mapping[str, Governed],
        refused: Mapping[str, Unassigned],
        watched: Mapping[str, Resource],
        revisions: Mapping[str, Obj],
        compiled: Mapping[str, CompiledDefinition],
    ) -> None:
        """Replace what is in force; `compiled` are revisions compiled already (just judged)."""
        with self._lock:
            self._compiled = {n: d for n, d in {**self._compiled, **compiled}.items()
                              if n in revisions}
            self._broken = {n: m for n, m in self._broken.items() if n in revisions}
        self._snapshot = _Snapshot(dict(governed), dict(refused), dict(watched), dict(revisions))

    @property
    def ready(self) -> bool:
        """Whether the machines were judged at least once: before that, no job is told that
        no machine governs it (the engine simply does not know yet)."""
        return self._snapshot is not None

    @property
    def _current(self) -> _Snapshot:
        return self._snapshot or _Snapshot()

    def watched(self) -> Mapping[str, Resource]:
        """Kind -> resource of every job kind the engine watches."""
        return self._current.watched

    def resource(self, kind: str) -> Resource | None:
        return self._current.watched.get(kind)

    def governed(self, kind: str) -> Governed | None:
        return self._current.governed.get(kind)

    def assign(self, kind: str, job: Obj,
               started: Callable[[CompiledDefinition], bool] | None = None
               ) -> Assignment | Unassigned:
        """The revision the job runs with: recorded in its status, else the kind's in force.

        A job recorded with an older revision that has not `started` (created no pod, by
        the predicate given; without one, every recorded job has) moves to the revision in
        force: a fixed machine is all a job stuck on a broken revision needs."""
        snapshot = self._current
        recorded = recorded_revision(job)
        governed_now = snapshot.governed.get(kind)
        if (recorded is not None and started is not None and governed_now is not None
                and governed_now.revision != recorded[1]):
            pinned = self._compile(recorded[1], snapshot) if recorded[1] in snapshot.revisions \
                else None
            if isinstance(pinned, CompiledDefinition) and not started(pinned):
                moved = self._assignment(governed_now.machine, governed_now.revision, snapshot)
                return replace(moved, moved_from=recorded) if isinstance(
                    moved, Assignment) else moved
        if recorded is not None:
            machine, revision = recorded
            if revision not in snapshot.revisions:
                return Unassigned(
                    "RevisionNotFound",
                    f"the job runs with revision {revision} of machine {machine}, which the "
                    "engine no longer has (its ControllerRevision was deleted): nothing is done "
                    "for the job until the revision is back",
                )
            return self._assignment(machine, revision, snapshot)
        governed = snapshot.governed.get(kind)
        if governed is None:
            return snapshot.refused.get(kind) or Unassigned(
                "NoStateMachine",
                f"no StateMachine governs {kind}: the job starts when one does",
            )
        return self._assignment(governed.machine, governed.revision, snapshot)

    def _assignment(
        self, machine: str, revision: str, snapshot: _Snapshot
    ) -> Assignment | Unassigned:
        definition = self._compile(revision, snapshot)
        if isinstance(definition, str):
            return Unassigned(
                "RevisionInvalid",
                f"revision {revision} of machine {machine} no longer loads: {definition}",
            )
        return Assignment(machine, revision, definition)

    def _compile(self, revision: str, snapshot: _Snapshot) -> CompiledDefinition | str:
        with self._lock:
            found = self._compiled.get(revision) or self._broken.get(revision)
        if found is not None:
            return found
        stored = snapshot.revisions.get(revision)
        try:
            definition: CompiledDefinition | str = compile_revision(stored or {})
        except DefinitionError as exc:
            definition = str(exc)
        with self._lock:
            if isinstance(definition, str):
                self._broken[revision] = definition
            else:
                self._compiled[revision] = definition
        return definition
