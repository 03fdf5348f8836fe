"""In which of its job states a job made a child object, read from the API after the fact.

`graph --job` links each child to the parent's state it was made in. The exact answer is
the parent's recorded history (`lastTransitions`, kept when the engine runs with
`--status-last-transitions`): the last job transition at or before the child's
creation. Without it, the job's state-change Events say when it entered each state whose
transition posts one (the Event's reason names the transition, which names the state),
and the record says since when it is in its current state; a child made before any of
those was made in the machine's initial state. A state entered by a silent transition
leaves no Event: a child made then is put in the state entered before it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from engine.controller.reconcile.record import MachineRecord
from engine.definition.schema import MachineSpec


def state_made_in(child: Mapping[str, Any], record: MachineRecord, machine: MachineSpec,
                  events: Sequence[Mapping[str, Any]]) -> str | None:
    """The job state the parent was in when it made `child` (None: not known)."""
    created = str(child["metadata"].get("creationTimestamp") or "")
    if not created:
        return None
    entered = _entries(record, machine, events)
    before = [state for when, state in entered if when <= created]
    return before[-1] if before else machine.initial


def _entries(record: MachineRecord, machine: MachineSpec,
             events: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(when, state) of every job state entry known, in time order."""
    history = [(str(e.get("time") or ""), str(e["to"])) for e in record.history
               if e.get("level") == "job" and e.get("to")]
    if history:
        return sorted(history, key=lambda entry: entry[0])
    targets = _targets_by_reason(machine)
    found = [(when, targets[reason]) for when, reason in _event_times(events)
             if reason in targets]
    if record.state is not None and record.state_since:
        found.append((record.state_since, record.state))
    return sorted(found, key=lambda entry: entry[0])


def _targets_by_reason(machine: MachineSpec) -> dict[str, str]:
    """The state each Event reason of a job transition says was entered (a reason several
    transitions into different states share says nothing, and is left out)."""
    found: dict[str, set[str]] = {}
    for transition in machine.transitions:
        if transition.silent or transition.source == [transition.to]:
            continue
        found.setdefault(transition.reason or transition.to, set()).add(transition.to)
    return {reason: next(iter(states)) for reason, states in found.items() if len(states) == 1}


def _event_times(events: Iterable[Mapping[str, Any]]) -> Iterable[tuple[str, str]]:
    """(time, reason) of each Event: its first occurrence (an Event repeated keeps its
    first time in firstTimestamp, else eventTime), to the second as records keep times."""
    for event in events:
        when = str(event.get("firstTimestamp") or event.get("eventTime") or "")
        if when and event.get("reason"):
            yield f"{when[:19]}Z", str(event["reason"])
