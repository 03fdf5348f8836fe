"""Gang scheduling's guards in Kubeflow's lifecycle (machines/kubeflow.yaml), one decision
per line: a PyTorchJob of three replicas (Master and two Workers) not yet running, the
PodGroup its gang scheduler keeps, and what one reconcile decides.

"minAvailable 3 of 3 replicas -> stays Created"; "minAvailable 4 -> Failing,
FailedValidation"; "the PodGroup says NeverFits -> Failing, GangUnschedulable"; "the
PodGroup waits for resources -> one GangWaiting event and condition, not twice".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from engine.controller.reconcile.decide import Decision, decide
from engine.controller.reconcile.jobspec import read_job_spec
from engine.controller.reconcile.record import MachineRecord
from engine.controller.reconcile.variables import Surroundings
from engine.definition.rendering import render_objects
from tests.scenarios.world import DEFINITIONS, pytorch_job

AT = "2027-01-15T08:00:00Z"


def podgroup(*conditions: tuple[str, str, str]) -> dict[str, Any]:
    """A PodGroup whose status has these (type, status, reason) conditions."""
    return {"status": {"phase": "Pending", "conditions": [
        {"type": t, "status": s, "reason": r, "message": f"{r}: 3/3 tasks in gang unschedulable",
         "lastTransitionTime": AT} for t, s, r in conditions]}}


NEVER_FITS = podgroup(("Unschedulable", "True", "NeverFits"))
NOT_ENOUGH = podgroup(("Unschedulable", "True", "NotEnoughResources"))


def condition(type: str, status: str = "True", reason: str = "Why") -> dict[str, Any]:
    return {"type": type, "status": status, "reason": reason, "message": "m",
            "lastTransitionTime": AT, "lastUpdateTime": AT}


def decide_gang(*, scheduler: str = "volcano", min_available: int | None = None,
                group: dict[str, Any] | None = None,
                conditions: list[dict[str, Any]] | None = None) -> Decision:
    """One reconcile of a created, not yet running PyTorchJob of three replicas."""
    policy: dict[str, Any] = {}
    if min_available is not None:
        policy["schedulingPolicy"] = {"minAvailable": min_available}
    job = pytorch_job(workers=2, run_policy=policy)
    if conditions is not None:
        job["status"] = {"conditions": conditions}
    definition = DEFINITIONS["PyTorchJob"]
    objects: dict[str, Any] = {child.name: {} for child in definition.objects}
    if group is not None:
        objects["podgroup-volcano" if scheduler == "volcano" else "podgroup-plugins"] = group
    return decide(definition, job, read_job_spec(job, definition),
                  MachineRecord(state="Created"), {},
                  job_observations=frozenset({"resumed"}), now=AT,
                  surroundings=Surroundings(gang_scheduler=scheduler, objects=objects))


@dataclass(frozen=True)
class Line:
    says: str
    state: str
    reasons: list[str]  # the job-level transitions that fired, in order (not self-loops)
    events: list[str] = field(default_factory=list)  # the reasons of the job's own Events
    scheduler: str = "volcano"
    min_available: int | None = None
    group: dict[str, Any] | None = None
    conditions: list[dict[str, Any]] | None = None


LINES = [
    Line("minAvailable 3, exactly the job's 3 replicas -> stays Created", "Created", [],
         min_available=3),
    Line("minAvailable 4 of 3 replicas: its gang could never be placed -> Failing",
         "Failing", ["FailedValidation"], min_available=4),
    Line("minAvailable 4 without a gang scheduler: nothing reads it -> stays Created",
         "Created", [], scheduler="", min_available=4),
    Line("the PodGroup says NeverFits -> Failing", "Failing", ["GangUnschedulable"],
         group=NEVER_FITS),
    Line("the scheduler-plugins PodGroup says NeverFits -> Failing", "Failing",
         ["GangUnschedulable"], scheduler="scheduler-plugins", group=NEVER_FITS),
    Line("the PodGroup only waits for resources: not a NeverFits -> one GangWaiting",
         "Created", [], events=["GangWaiting"], group=NOT_ENOUGH),
    Line("a Scheduled condition that says NeverFits is not Unschedulable -> stays Created",
         "Created", [], group=podgroup(("Scheduled", "False", "NeverFits"))),
    Line("the job already says it waits (GangWaiting True) -> no second event",
         "Created", [], group=NOT_ENOUGH,
         conditions=[condition("Created"), condition("GangWaiting", reason="NotEnoughResources")]),
    Line("the job says Created, not GangWaiting -> it says it waits",
         "Created", [], events=["GangWaiting"], group=NOT_ENOUGH,
         conditions=[condition("Created")]),
    Line("its GangWaiting went False (it ran) and the group waits again -> said again",
         "Created", [], events=["GangWaiting"], group=NOT_ENOUGH,
         conditions=[condition("GangWaiting", status="False", reason="GangScheduled")]),
    Line("an Unschedulable condition that is no longer True -> nothing to say",
         "Created", [], group=podgroup(("Unschedulable", "False", "NotEnoughResources"))),
    Line("Unschedulable for another reason -> nothing to say", "Created", [],
         group=podgroup(("Unschedulable", "True", "Other"))),
    Line("a scheduler-plugins group waiting for resources: only Volcano's is read",
         "Created", [], scheduler="scheduler-plugins", group=NOT_ENOUGH),
]


@pytest.mark.parametrize("line", LINES, ids=[line.says for line in LINES])
def test_gang_guards_decide_at_their_edges(line: Line) -> None:
    decision = decide_gang(scheduler=line.scheduler, min_available=line.min_available,
                           group=line.group, conditions=line.conditions)
    assert not decision.errors
    fired = [f.transition.reason for f in decision.fired if f.replica is None
             and f.transition.source is not None]
    events = [str(p.action.args["reason"]) for p in decision.actions
              if p.action.name == "event" and p.replica is None and not p.replayed]
    assert (decision.record.state, fired, events) == (line.state, line.reasons, line.events)


@pytest.mark.parametrize(("scheduler", "objects"), [
    ("volcano", {"podgroup-volcano"}),
    ("scheduler-plugins", {"podgroup-plugins"}),
    ("", set()),  # not gang scheduled
])
def test_the_podgroup_of_the_gang_scheduler_in_use_and_no_other_is_made(
        scheduler: str, objects: set[str]) -> None:
    decision = decide_gang(scheduler=scheduler)
    wanted, _absent = render_objects(DEFINITIONS["PyTorchJob"], decision.variables)
    assert {rendered.name for rendered in wanted} == objects
