"""Which Events a reconcile posts: one per state change, on the job, after the status write.

A transition marked `silent` posts none (an ending's second phase: its first
already said why); a job's creation is posted under its first condition's reason.

Replica events name the replica (type and index) and the exit code when there
is one, so `kubectl describe` tells the story of every replica (field notes,
story 8). Creating a replica's machine is not a state change and posts nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from engine.controller.children import ReplicaId
from engine.controller.decide import Fired
from engine.controller.observe import MISSING, PodFacts

EventType = Literal["Normal", "Warning"]


@dataclass(frozen=True)
class Notice:
    """One Event to post on the job."""

    type: EventType
    reason: str
    message: str
    replica: str | None = None
    """The replica the state change is of (`Worker-1`); None for the job's own."""


def notices_for(fired: tuple[Fired, ...], facts: Mapping[ReplicaId, PodFacts]) -> list[Notice]:
    """The Events for the transitions of one reconcile, in the order they fired."""
    found: list[Notice] = []
    for entry in fired:
        transition = entry.transition
        if transition.self_loop or transition.silent or (
            entry.replica is not None and transition.source is None
        ):
            continue
        kind: EventType = "Warning" if transition.event_type == "Warning" else "Normal"
        message = transition.message
        replica = None
        if entry.replica is not None:
            message = _replica_message(entry.replica, message, facts.get(entry.replica, MISSING))
            replica = str(entry.replica)
        found.append(Notice(kind, transition.reason, message, replica))
    return found


def _replica_message(replica: ReplicaId, message: str, facts: PodFacts) -> str:
    if str(replica) not in message:
        message = f"{replica}: {message}"
    if facts.exit_code >= 0 and "exit code" not in message:
        message += f" (exit code {facts.exit_code})"
    return message
