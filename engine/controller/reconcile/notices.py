"""Which Events a reconcile posts: one per state change, on the job, after the status write.

A transition marked `silent` posts none (an ending's second phase: its first
already said why); a job's creation is posted under its first condition's reason.

Replica events name the replica (type and index) and the exit code when there
is one, so `kubectl describe` tells the story of every replica (field notes,
story 8). Creating a replica's machine is not a state change and posts nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.decide import Decision, Fired
from engine.controller.reconcile.observe import MISSING, PodFacts

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


def quiet_changes(decision: Decision, posted: Sequence[Notice]) -> list[Notice]:
    """The job's own state changes that post no Event (a creation or start the kind's
    controller does not announce), for listeners only: `up` prints every state change of a
    job, while the job's Events follow what its kind's own controller posts. A change that
    an Event of the same pass says already (a replica's restart, posted by its `event`
    action under the same reason) is left out."""
    said = {notice.reason for notice in posted} | {
        str(planned.action.args.get("reason")) for planned in decision.actions
        if planned.action.name == "event"
    }
    return [
        Notice("Normal", entry.transition.reason, entry.transition.message)
        for entry in decision.fired
        if entry.replica is None and entry.transition.silent
        and not entry.transition.self_loop and entry.transition.reason not in said
    ]


def _replica_message(replica: ReplicaId, message: str, facts: PodFacts) -> str:
    """The message, with the replica in front and the exit code after, unless it names them
    already (Kubeflow's `Pod: <ns>.<pod> exited with code <N>` names the pod and its code)."""
    pod_name = str(facts.pod.get("name") or "")
    if str(replica) not in message and not (pod_name and pod_name in message):
        message = f"{replica}: {message}"
    if facts.exit_code >= 0 and f"code {facts.exit_code}" not in message:
        message += f" (exit code {facts.exit_code})"
    return message


class UnconfirmedNotices:
    """The Events of failed status writes, per job, until a later reconcile sees whether the
    write landed all the same (its answer was lost: the connection broke after the request
    was sent, or the transport retried it and the retry met the landed write's 409).

    A landed write's state changes are never made again, so without this their Events
    would be lost; a write that did not land is made again, with its own Events.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[Any, tuple[Notice, ...]]] = {}

    def remember(self, job_id: str, record: Any, notices: Sequence[Notice]) -> None:
        """The write of `record` (status.record) may or may not have landed."""
        if notices:
            with self._lock:
                self._pending[job_id] = (record, tuple(notices))

    def landed(self, job_id: str, status: Mapping[str, Any]) -> tuple[Notice, ...]:
        """The notices of the job's unconfirmed write if `status` shows it landed (they are
        then forgotten). Otherwise they wait: the cache may not show the write yet, and the
        next successful status write (made from a status without it) refutes it."""
        with self._lock:
            pending = self._pending.get(job_id)
            if pending is None or status.get("record") != pending[0]:
                return ()
            del self._pending[job_id]
        return pending[1]

    def forget(self, job_id: str) -> None:
        """The job is gone, or a later write of its status succeeded."""
        with self._lock:
            self._pending.pop(job_id, None)
