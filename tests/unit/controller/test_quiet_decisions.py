"""A job's last decision is taken again, without deciding, only while it changed nothing
(no state change, the record as it was, no replica timer) and what it was made of is
unchanged: the machine revision, the job's resourceVersion, the pods' observations, the
job-level observations and the surroundings (each object the very one the cache held)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

import pytest

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.decide import Decision, Fired
from engine.controller.reconcile.observe import PodFacts
from engine.controller.reconcile.quiet_decisions import DecisionInputs, QuietDecisions
from engine.controller.reconcile.record import MachineRecord
from engine.controller.reconcile.variables import Surroundings
from engine.definition.step import FiredTransition
from tests.scenarios.world import DEFINITIONS, MASTER

PYTORCH = DEFINITIONS["PyTorchJob"]
RECORD = MachineRecord(state="Created", replica_states={MASTER: "Pending"})
QUIET = Decision(RECORD)
GROUP = {"metadata": {"name": "train"}, "status": {"phase": "Pending"}}


def inputs(**changes: Any) -> DecisionInputs:
    made = DecisionInputs(
        PYTORCH, {"metadata": {"uid": "u1", "resourceVersion": "7"}},
        {MASTER: PodFacts("podPending", uid="p1")}, frozenset({"settled"}),
        Surroundings(objects={"podgroup-volcano": GROUP, "podgroup-plugins": {}}))
    return dataclasses.replace(made, **changes)


def kept(decision: Decision = QUIET, record: MachineRecord = RECORD) -> QuietDecisions:
    quiet = QuietDecisions()
    quiet.note("job", inputs(), decision, record)
    return quiet


def test_a_quiet_decision_is_taken_again_on_the_same_inputs() -> None:
    quiet = kept()
    same = inputs(facts={MASTER: PodFacts("podPending", uid="p1")},  # observed afresh
                  surroundings=Surroundings(objects={"podgroup-volcano": GROUP,
                                                     "podgroup-plugins": {}}))
    assert quiet.recall("job", same) is QUIET
    assert quiet.reused == 1
    assert quiet.recall("other job", same) is None


@pytest.mark.parametrize("changed", [
    {"definition": dataclasses.replace(PYTORCH)},
    {"job": {"metadata": {"uid": "u1", "resourceVersion": "8"}}},
    {"job": {"metadata": {"uid": "u2", "resourceVersion": "7"}}},
    {"job": {"metadata": {"uid": "u1"}}},
    {"facts": {MASTER: PodFacts("podRunning", uid="p1")}},
    {"facts": {}},
    {"facts": {MASTER: PodFacts("podPending", uid="p1"),
               ReplicaId("Worker", 0): PodFacts("podPending", uid="p2")}},
    {"observations": frozenset()},
    {"surroundings": Surroundings(gang_scheduler="volcano", objects={
        "podgroup-volcano": GROUP, "podgroup-plugins": {}})},
    {"surroundings": Surroundings(objects={"podgroup-volcano": dict(GROUP),
                                           "podgroup-plugins": {}})},
    {"surroundings": Surroundings(objects={"podgroup-volcano": GROUP,
                                           "podgroup-plugins": {}},
                                  references={"runtime": {}})},
])
def test_any_input_changed_is_decided_again(changed: dict[str, Any]) -> None:
    assert kept().recall("job", inputs(**changed)) is None


def test_a_job_without_a_resource_version_is_always_decided() -> None:
    quiet = QuietDecisions()
    unversioned = inputs(job={"metadata": {"uid": "u1"}})
    quiet.note("job", unversioned, QUIET, RECORD)
    assert quiet.recall("job", unversioned) is None


FIRED = Fired(FiredTransition("Created", "Running", "Running", "", "Normal"))
T0 = datetime(2027, 1, 15, 8, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize("decision", [
    Decision(RECORD, fired=(FIRED,)),
    Decision(RECORD.with_changes(state="Running")),
    Decision(RECORD, timer_due=T0),
    Decision(RECORD.with_changes(replica_timers={MASTER: "2027-01-15T08:00:00Z"})),
])
def test_a_decision_that_changed_something_or_runs_a_timer_is_not_kept(
        decision: Decision) -> None:
    record = decision.record if decision.record.replica_timers else RECORD
    quiet = kept(decision, record)
    assert quiet.recall("job", inputs()) is None


def test_a_decision_that_is_not_quiet_forgets_the_last_quiet_one() -> None:
    quiet = kept()
    quiet.note("job", inputs(), Decision(RECORD, fired=(FIRED,)), RECORD)
    assert quiet.recall("job", inputs()) is None


def test_a_job_gone_is_forgotten() -> None:
    quiet = kept()
    quiet.forget("job")
    assert quiet.recall("job", inputs()) is None
