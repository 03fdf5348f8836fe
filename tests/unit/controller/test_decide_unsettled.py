"""What keeps a job from being `settled` in a pass (`_unsettled`, `_deletions_pending`): a
restart of the job in this pass (`restartJob`) while a pod or child of the old attempt is
still there and not being deleted, and a deletion planned of a replica's child object
(`deleteChild`) that still exists, as of a pod (`deletePod`).

A JobSet restarted with BlockingRecreate stays Restarting until every Job of the old attempt
is gone, as upstream's JobSet controller makes no new Job while an old one remains.
"""

from __future__ import annotations

from typing import Any

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.decide import Decision, decide
from engine.controller.reconcile.jobspec import read_job_spec
from engine.controller.reconcile.observe import observe_child
from engine.controller.reconcile.record import MachineRecord
from engine.definition import compile_definition, load_text
from tests.kinds import shipped_definitions
from tests.unit.controller.test_decide_backoff import RETRYING_JOBS, WORKER, ended, job
from tests.unit.definition.test_language_for_jobset import failed_job, jobset

BLOCKING = {"maxRestarts": 3, "restartStrategy": "BlockingRecreate"}


def _job(name: str, kind: str, *, deleting: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "uid": name,
                                "labels": {"jobmachine.dev/replica-type": kind}}
    if deleting:
        metadata["deletionTimestamp"] = "2027-01-01T00:00:50Z"
    return {"metadata": metadata, "status": {"active": 1}}


def decide_settled(job: dict[str, Any], children: dict[ReplicaId, dict[str, Any]]
                   ) -> Decision:
    """One decision of a running JobSet whose pods and Jobs are settled as the pass begins
    (nothing being deleted): only what the pass itself does can unsettle it."""
    definition = shipped_definitions()["JobSet"]
    facts = {replica: observe_child(child, job=job, definition=definition)
             for replica, child in children.items()}
    return decide(definition, job, read_job_spec(job, definition), MachineRecord(state="Running"),
                  facts, job_observations=frozenset({"resumed", "noReplicaRestarting", "settled"}),
                  now="2027-01-01T00:01:00Z")


def test_a_blocking_restart_waits_in_restarting_for_the_old_attempts_jobs() -> None:
    decision = decide_settled(jobset(failurePolicy=BLOCKING), {
        ReplicaId("leader", 0): failed_job("js-leader-0", "leader", "2027-01-01T00:00:30Z"),
        ReplicaId("workers", 0): _job("js-workers-0", "workers"),
    })
    assert [(f.transition.target, f.transition.reason) for f in decision.fired
            if f.replica is None] == [("Restarting", "RestartJobSetFailurePolicyAction")]
    assert decision.record.state == "Restarting"
    assert decision.record.restart_attempt == 1


def test_a_blocking_restart_whose_old_jobs_are_all_being_deleted_runs_the_new_attempt() -> None:
    failed = failed_job("js-leader-0", "leader", "2027-01-01T00:00:30Z")
    failed["metadata"]["deletionTimestamp"] = "2027-01-01T00:00:50Z"
    decision = decide_settled(jobset(failurePolicy=BLOCKING), {
        ReplicaId("leader", 0): failed,
        ReplicaId("workers", 0): _job("js-workers-0", "workers", deleting=True),
    })
    assert [f.transition.target for f in decision.fired if f.replica is None] == [
        "Restarting", "Running"]


RETRIED_WHEN_SETTLED = RETRYING_JOBS.replace(
    "    transitions:\n      - {from: Running, to: Succeeded,",
    "    transitions:\n      - {from: Running, to: Succeeded, \"on\": settled,"
    " when: \"'Retrying' in replicas.Worker.states\"}\n"
    "      - {from: Running, to: Succeeded,", 1)
"""The retrying kind of test_decide_backoff.py, whose job ends once a Worker retrying its
failed Job has had that Job deleted (`settled`)."""


def test_a_child_its_replica_deletes_keeps_the_job_unsettled_while_it_exists() -> None:
    assert RETRIED_WHEN_SETTLED != RETRYING_JOBS
    (loaded,) = load_text(RETRIED_WHEN_SETTLED, "retried.yaml")
    definition = compile_definition(loaded)
    facts = {WORKER: observe_child(ended("Failed"), job=job(), definition=definition)}
    decision = decide(definition, job(), read_job_spec(job(), definition),
                      MachineRecord(state="Running", replica_states={WORKER: "Pending"}), facts,
                      job_observations=frozenset({"resumed", "noReplicaRestarting", "settled"}),
                      now="2027-01-01T00:01:00Z")
    assert decision.record.replica_states == {WORKER: "Retrying"}
    assert [(p.action.name, p.replica) for p in decision.actions] == [("deleteChild", WORKER)]
    assert decision.record.state == "Running"
