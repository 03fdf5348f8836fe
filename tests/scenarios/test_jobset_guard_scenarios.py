"""JobSet's failure and success policies at their edges, one decision per line.

A JobSet's children are batch/v1 Jobs, not pods, so each line gives the Jobs as the API
server shows them (ready, Complete or Failed) and one reconcile of the shipped machine
(machines/jobset.yaml) decides: "leader and both workers ready, maxRestarts 0 -> Running,
nothing fired"; "one Job failed, 2 restarts of maxRestarts 2 -> Failed, ReachedMaxRestarts".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.decide import Decision
from tests.unit.definition.test_language_for_jobset import decide_jobset, jobset

AT = "2027-01-01T00:00:30Z"
LEADER = ReplicaId("leader", 0)
WORKER_0, WORKER_1 = ReplicaId("workers", 0), ReplicaId("workers", 1)


def _job(replica: ReplicaId, status: dict[str, Any]) -> dict[str, Any]:
    name = f"js-{replica.type}-{replica.index}"
    labels = {"jobmachine.dev/replica-type": replica.type,
              "jobmachine.dev/replica-index": str(replica.index)}
    return {"metadata": {"name": name, "uid": name, "labels": labels}, "status": status}


def ready(replica: ReplicaId) -> dict[str, Any]:
    """A Job whose one pod runs and is ready."""
    return _job(replica, {"active": 1, "ready": 1})


def complete(replica: ReplicaId) -> dict[str, Any]:
    """A Job that completed."""
    return _job(replica, {"succeeded": 1, "ready": 0, "conditions": [
        {"type": "Complete", "status": "True", "reason": "CompletionsReached",
         "message": "Reached expected number of succeeded pods", "lastTransitionTime": AT}]})


def failed(replica: ReplicaId, reason: str = "BackoffLimitExceeded") -> dict[str, Any]:
    """A Job that failed for `reason`."""
    return _job(replica, {"failed": 1, "ready": 0, "conditions": [
        {"type": "Failed", "status": "True", "reason": reason,
         "message": "Job has reached the specified backoff limit", "lastTransitionTime": AT}]})


ALL_READY = {r: ready(r) for r in (LEADER, WORKER_0, WORKER_1)}


def events(decision: Decision) -> list[str]:
    """The reasons of the Events the JobSet's own actions post."""
    return [str(p.action.args["reason"]) for p in decision.actions
            if p.action.name == "event" and p.replica is None and not p.replayed]


@dataclass(frozen=True)
class Line:
    says: str
    jobs: dict[ReplicaId, dict[str, Any]]
    state: str
    reasons: list[str]  # the job-level transitions that fired, in order
    spec: dict[str, Any] = field(default_factory=dict)
    restarts: int = 0


LINES = [
    Line("no failure policy, every Job ready -> Running, nothing fired",
         ALL_READY, "Running", []),
    Line("no failure policy, exactly one Job failed -> Failed at once",
         {**ALL_READY, WORKER_1: failed(WORKER_1)}, "Failed", ["FailedJobs"]),
    Line("maxRestarts 0 and every Job ready: no failure, so no restart and no limit",
         ALL_READY, "Running", [], spec={"failurePolicy": {"maxRestarts": 0}}),
    Line("one Job failed, 1 restart of maxRestarts 2 -> restarts once more",
         {**ALL_READY, WORKER_0: failed(WORKER_0)}, "Running",
         ["RestartJobSetFailurePolicyAction", "Restarted"],
         spec={"failurePolicy": {"maxRestarts": 2}}, restarts=1),
    Line("one Job failed, 2 restarts of maxRestarts 2: the limit is reached -> Failed",
         {**ALL_READY, WORKER_0: failed(WORKER_0)}, "Failed", ["ReachedMaxRestarts"],
         spec={"failurePolicy": {"maxRestarts": 2}}, restarts=2),
    Line("the first rule says FailJobSet and matches -> Failed by that rule",
         {**ALL_READY, LEADER: failed(LEADER)}, "Failed", ["FailJobSetFailurePolicyAction"],
         spec={"failurePolicy": {"maxRestarts": 3, "rules": [
             {"action": "FailJobSet", "targetReplicatedJobs": ["leader"]}]}}),
    Line("the first rule says RestartJobSet and matches -> a restart, not a failure",
         {**ALL_READY, LEADER: failed(LEADER)}, "Running",
         ["RestartJobSetFailurePolicyAction", "Restarted"],
         spec={"failurePolicy": {"maxRestarts": 3, "rules": [
             {"action": "RestartJobSet", "targetReplicatedJobs": ["leader"]}]}}),
    Line("success policy All: two of three Jobs complete -> still Running",
         {LEADER: complete(LEADER), WORKER_0: complete(WORKER_0), WORKER_1: ready(WORKER_1)},
         "Running", [], spec={"successPolicy": {"operator": "All"}}),
    Line("success policy All: every Job complete -> Completed",
         {r: complete(r) for r in (LEADER, WORKER_0, WORKER_1)},
         "Completed", ["AllJobsCompleted"], spec={"successPolicy": {"operator": "All"}}),
    Line("success policy Any over the workers: none complete yet -> Running",
         {**ALL_READY, LEADER: complete(LEADER)}, "Running", [],
         spec={"successPolicy": {"operator": "Any", "targetReplicatedJobs": ["workers"]}}),
    Line("success policy Any over the workers: exactly one completes -> Completed",
         {**ALL_READY, WORKER_1: complete(WORKER_1)}, "Completed", ["AllJobsCompleted"],
         spec={"successPolicy": {"operator": "Any", "targetReplicatedJobs": ["workers"]}}),
]


@pytest.mark.parametrize("line", LINES, ids=[line.says for line in LINES])
def test_failure_and_success_policies_decide_at_their_edges(line: Line) -> None:
    decision = decide_jobset(jobset(**line.spec), line.jobs, restarts=line.restarts)
    assert not decision.errors
    fired = [f.transition.reason for f in decision.fired if f.replica is None]
    assert (decision.record.state, fired) == (line.state, line.reasons), line.says


def test_a_restarted_jobset_says_its_jobs_are_ready_once_every_job_is_ready_again() -> None:
    job = jobset(failurePolicy={"maxRestarts": 3})
    job["status"] = {"conditions": [
        {"type": "RestartingJobSet", "status": "True", "reason": "DefaultFailurePolicy",
         "message": "restarting", "lastTransitionTime": AT}]}
    decision = decide_jobset(job, {LEADER: ready(LEADER), WORKER_0: ready(WORKER_0),
                                   WORKER_1: complete(WORKER_1)}, restarts=1)
    # Once a pass, though the Jobs moved in it (the job's machine is stepped once per round).
    assert [(c.type, c.status, c.reason) for c in decision.conditions] == [
        ("RestartingJobSet", "False", "JobsReady")]
    assert events(decision) == ["JobsReady"]


def test_a_jobset_whose_success_targets_have_no_jobs_completes_when_any_job_completes() -> None:
    # Upstream runs the success policy once any Job of the set succeeded, and All over
    # targets with no replicas expects 0 of them: the leader's completion completes it.
    template = jobset()["spec"]["replicatedJobs"][0]["template"]
    job = jobset(
        replicatedJobs=[
            {"name": "leader", "replicas": 1, "groupName": "default", "template": template},
            {"name": "workers", "replicas": 0, "groupName": "default", "template": template}],
        successPolicy={"operator": "All", "targetReplicatedJobs": ["workers"]})
    assert decide_jobset(job, {LEADER: ready(LEADER)}).record.state == "Running"
    decision = decide_jobset(job, {LEADER: complete(LEADER)})
    assert decision.record.state == "Completed"


def test_a_restarted_jobset_keeps_restarting_while_a_job_is_not_ready() -> None:
    job = jobset(failurePolicy={"maxRestarts": 3})
    job["status"] = {"conditions": [
        {"type": "RestartingJobSet", "status": "True", "reason": "DefaultFailurePolicy",
         "message": "restarting", "lastTransitionTime": AT}]}
    decision = decide_jobset(job, {LEADER: ready(LEADER), WORKER_0: ready(WORKER_0),
                                   WORKER_1: _job(WORKER_1, {"active": 1, "ready": 0})},
                             restarts=1)
    assert [c.reason for c in decision.conditions] == []
    assert events(decision) == []
