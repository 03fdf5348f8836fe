"""A job's last decision taken again, without deciding, while it changed nothing and what it
was made of is unchanged (issue 33.2).

Half of a one-replica job's passes decide nothing: its pod was bound to a node (still
Pending), our own writes came back through the watch, a look put off until the cache caught
up came due. Each stepped the job's machine all the same (a dozen CEL guards) to find
nothing to do. `decide` is a pure function of the machine, the job, its record, the pods'
observations, the job-level observations and the surroundings, and of the clock only
through replica timers and the times it records when something changes. So a decision that
fired nothing, recorded nothing and runs no timer is what deciding again on equal inputs
gives: the job at the same resourceVersion (its spec, status and record with it), equal
observations of its pods, job-level observations and surroundings, under the same machine
revision.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.decide import Decision
from engine.controller.reconcile.observe import PodFacts
from engine.controller.reconcile.record import MachineRecord
from engine.controller.reconcile.variables import Surroundings
from engine.definition import CompiledDefinition


@dataclass(frozen=True)
class DecisionInputs:
    """What a decision is made of, as far as a quiet one can depend on it."""

    definition: CompiledDefinition
    job: Mapping[str, Any]
    facts: Mapping[ReplicaId, PodFacts]
    observations: frozenset[str]
    surroundings: Surroundings

    def same_as(self, other: DecisionInputs) -> bool:
        """Whether a decision on `other` is one on these: the same machine revision (the
        object), the same job version, equal job-level and pod observations, and the same
        surroundings (each object the very one the cache held, or absent both times)."""
        metadata, before = self.job["metadata"], other.job["metadata"]
        return (self.definition is other.definition
                and metadata.get("uid") == before.get("uid")
                and bool(metadata.get("resourceVersion"))
                and metadata.get("resourceVersion") == before.get("resourceVersion")
                and self.observations == other.observations
                and _same_facts(self.facts, other.facts)
                and _same_surroundings(self.surroundings, other.surroundings))


def _same_facts(facts: Mapping[ReplicaId, PodFacts], before: Mapping[ReplicaId, PodFacts]
                ) -> bool:
    if len(facts) != len(before):
        return False
    for replica, observed in facts.items():
        known = before.get(replica)
        if known is not observed and known != observed:
            return False
    return True


def _same_surroundings(now: Surroundings, before: Surroundings) -> bool:
    """The same gang scheduler, and each child object and reference the very object the
    cache held then, or absent both times."""
    return (now.gang_scheduler == before.gang_scheduler
            and _same_objects(now.objects, before.objects)
            and _same_objects(now.references, before.references))


def _same_objects(now: Mapping[str, Mapping[str, Any]],
                  before: Mapping[str, Mapping[str, Any]]) -> bool:
    if now.keys() != before.keys():
        return False
    return all(now[name] is before[name] or not (now[name] or before[name]) for name in now)


def quiet(decision: Decision, record: MachineRecord) -> bool:
    """Whether `decision`, made on `record`, changed nothing: no state change, the record
    as it was, no replica timer running (which makes the next decision depend on the
    clock)."""
    return (not decision.fired and decision.timer_due is None
            and not decision.record.replica_timers and decision.record == record)


class QuietDecisions:
    """Per job (by key id), its last decision if it was quiet, with what it was made of.

    Used by one reconcile of a job at a time (the work queue never runs a key twice at
    once); `forget` drops a job that is gone."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[DecisionInputs, Decision]] = {}
        self.reused = 0
        """Decisions taken again instead of decided, since this was made."""

    def recall(self, key: str, inputs: DecisionInputs) -> Decision | None:
        """The job's last decision, if it was quiet and made of the same inputs."""
        kept = self._kept.get(key)
        if kept is None or not inputs.same_as(kept[0]):
            return None
        self.reused += 1
        return kept[1]

    def note(self, key: str, inputs: DecisionInputs, decision: Decision,
             record: MachineRecord) -> None:
        """Keep `decision`, made of `inputs` on `record`, if it was quiet; else forget the
        job's last one."""
        if quiet(decision, record):
            self._kept[key] = (inputs, decision)
        else:
            self._kept.pop(key, None)

    def forget(self, key: str) -> None:
        self._kept.pop(key, None)
