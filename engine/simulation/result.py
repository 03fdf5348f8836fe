"""What a simulation produced: its timeline entries, how it ended, and the job's outcome.

Kept apart from the driver so that the readers of a run (the text and JSON reports,
`expect`, the path picture) depend on its results, not on how it was played.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from engine.api.conditions import get_condition
from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.record import read_record
from engine.simulation.tree import written_status
from engine.simulation.world import World

EntryKind = Literal["fact", "kubelet", "state", "condition", "pod", "object", "event", "note"]
Stop = Literal["quiet", "until", "deleted"]
"""Why a run ended: nothing more was going to happen; the time limit; the job's TTL
deleted it."""


@dataclass(frozen=True)
class Entry:
    """One line of the timeline: at `at` seconds, something about `subject` (job, a
    replica, the node)."""

    at: float
    subject: str
    kind: EntryKind
    text: str


@dataclass(frozen=True)
class Outcome:
    """The job as the simulation left it: what `expect` is checked against."""

    phase: str | None
    state: str | None
    restarts: int
    reason: str | None
    conditions: Mapping[str, bool]
    replicas: Mapping[str, str]
    pods_created: int
    pods_at_once: int


@dataclass(frozen=True)
class Simulation:
    """A finished run: its timeline, when and why it ended, and the world as it ended."""

    entries: tuple[Entry, ...]
    end: float
    """Seconds of simulated time from the job's creation to the end."""
    stopped: Stop
    world: World
    pods_created: int
    pods_at_once: int
    """The most pods that had not ended, and were not being deleted, at any one time."""
    worlds: Mapping[tuple[ReplicaId, ...], World] = field(default_factory=dict)
    """Every job as the run left it, by the replicas leading to it: () the scenario's job,
    (workers-0,) the Job of its replica workers-0 (spec.child), and so on down."""

    @property
    def status(self) -> Mapping[str, Any]:
        return self.world.job.get("status") or {}

    @property
    def kind_status(self) -> Mapping[str, Any]:
        """The job's status as the API shows it: the kind's own for a Native layout (a
        JobSet's, a Job's), else the engine's."""
        return written_status(self.world)

    @property
    def outcome(self) -> Outcome:
        status = self.status
        conditions = status.get("conditions") or []
        phase = status.get("phase")
        of_phase = get_condition(conditions, phase) if phase else None
        record = read_record(status)
        return Outcome(
            phase=phase, state=record.state, restarts=int(status.get("restarts") or 0),
            reason=None if of_phase is None else of_phase.get("reason"),
            conditions={c["type"]: c["status"] == "True" for c in conditions},
            replicas=self._replicas(),
            pods_created=self.pods_created, pods_at_once=self.pods_at_once,
        )


    def _replicas(self) -> dict[str, str]:
        """Each replica's state, those of the jobs below by their path (`workers-0/Job-1`)."""
        worlds = self.worlds or {(): self.world}
        return {"".join(f"{r}/" for r in path) + str(replica): state
                for path, world in sorted(worlds.items())
                for replica, state in sorted(world.record.replica_states.items())}


def format_offset(seconds: float) -> str:
    """`0s`, `1.5s`, `2m30s`, `1h0m5s`: a time offset as Go (and kubectl) print durations."""
    hours, rest = divmod(round(seconds, 3), 3600)
    minutes, rest = divmod(rest, 60)
    text = f"{rest:.3f}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{int(hours)}h{int(minutes)}m{text}"
    return f"{int(minutes)}m{text}" if minutes else text
