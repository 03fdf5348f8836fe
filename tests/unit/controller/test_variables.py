"""The CEL variables the machines' guards read: the per-type replica summary above all."""

from __future__ import annotations

import dataclasses

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.jobspec import read_job_spec
from engine.controller.reconcile.observe import MISSING
from engine.controller.reconcile.record import MachineRecord, RestartRecord
from engine.controller.reconcile.variables import (
    common_variables,
    lower_camel,
    remembering_summaries,
    replica_summary,
    replica_variables,
)
from tests.scenarios.world import (
    DEFINITIONS,
    MASTER,
    Pod,
    exited,
    observe,
    pytorch_job,
    running,
    tf_job,
    worker,
)

PYTORCH = DEFINITIONS["PyTorchJob"]
TFJOB = DEFINITIONS["TFJob"]


def ready(pod: Pod) -> Pod:
    """`pod` with its Ready condition True (its readiness probes pass)."""
    return {**pod, "status": {**pod["status"], "conditions": [{"type": "Ready", "status": "True"}]}}


def test_lower_camel() -> None:
    assert lower_camel("Running") == "running"
    assert lower_camel("SucceededAsChief") == "succeededAsChief"
    assert lower_camel("") == ""


def test_the_summary_counts_states_phases_and_running_pods_per_type() -> None:
    job = pytorch_job(workers=4)
    spec = read_job_spec(job, PYTORCH)
    record = MachineRecord(
        replica_states={
            MASTER: "Running", worker(0): "Succeeded", worker(1): "Failed",
            worker(2): "Restarting",
        },
        replica_restarts={worker(2): RestartRecord(2, "t"), worker(9): RestartRecord(5, "t")},
    )
    pods, _ = observe(
        {MASTER: ready(running()), worker(0): exited(0), worker(2): running()}, spec, 0
    )
    summary = replica_summary(spec, record, pods, PYTORCH.replica)
    assert summary["Master"] == {  # PyTorchJob's replicaTypes order: Master, then Worker
        "position": 0, "desired": 1, "active": 1, "ready": 1, "succeeded": 0, "failed": 0,
        "restarts": 0,
        "pending": 0, "running": 1, "restarting": 0, "suspended": 0,
        "states": {"Running": 1}, "parallelism": 1, "terminating": 0, "waiting": 0, "live": 1,
        "completedIndexes": "", "failedIndexes": "",
        # Facts built here say nothing of availability or the template's labels.
        "available": 0, "fullyLabeled": 0,
    }
    assert summary["Worker"] == {
        "position": 1, "desired": 4, "active": 1, "ready": 0, "succeeded": 1, "failed": 1,
        "restarts": 2,
        "pending": 0, "running": 0, "restarting": 1, "suspended": 0,
        "states": {"Succeeded": 1, "Failed": 1, "Restarting": 1}, "parallelism": 4, "live": 1,
        "terminating": 0, "waiting": 0, "completedIndexes": "0", "failedIndexes": "1",
        "available": 0, "fullyLabeled": 0,
    }


def test_a_terminal_state_with_another_name_counts_by_its_phase() -> None:
    job = tf_job(replicas={"Worker": 2})
    spec = read_job_spec(job, TFJOB)
    record = MachineRecord(replica_states={worker(0): "SucceededAsChief",
                                           worker(1): "Succeeded"})
    entry = replica_summary(spec, record, {}, TFJOB.replica)["Worker"]
    assert entry["succeeded"] == 2
    assert entry["states"] == {"SucceededAsChief": 1, "Succeeded": 1}


def test_replica_variables_add_the_replica_its_policy_and_its_pod() -> None:
    job = pytorch_job()
    spec = read_job_spec(job, PYTORCH)
    record = MachineRecord(restarts=3, replica_restarts={worker(1): RestartRecord(3, "t")},
                           last_failure="Worker-1 (exit code 137, OOMKilled)")
    common = common_variables(job, spec, record, {})
    assert common == {"job": job, "runPolicy": spec.run_policy, "replicas": {},
                      "restarts": 3, "error": "",
                      "lastFailure": "Worker-1 (exit code 137, OOMKilled)",
                      "lastFailureCause": "", "gangScheduler": "", "objects": {},
                      "children": [], "references": {}}
    facts = observe({worker(1): exited(137, "OOMKilled")}, spec, 0)[0][worker(1)]
    found = replica_variables(common, worker(1), desired=2, policy="ExitCode", record=record,
                              facts=facts)
    assert found["replica"] == {"type": "Worker", "index": 1, "restarts": 3, "desired": 2}
    assert (found["policy"], found["exitCode"], found["reason"]) == ("ExitCode", 137,
                                                                     "OOMKilled")
    assert (found["termination"], found["terminationMessage"], found["newRestarts"]) == (
        "exit code 137, OOMKilled", "", 0)
    assert found["pod"] == facts.pod
    assert (found["failureAction"], found["failureCause"]) == ("", "")
    fresh = replica_variables(common, ReplicaId("Worker", 0), desired=2, policy="Never",
                              record=record, facts=MISSING)
    assert (fresh["replica"]["restarts"], fresh["exitCode"], fresh["pod"]) == (0, -1, {})


def test_a_pod_being_deleted_is_terminating_not_active_even_when_judged_once_it_ended() -> None:
    spec = dataclasses.replace(read_job_spec(pytorch_job(workers=2), PYTORCH),
                               judge_deleted_when_ended=True)
    deleting = running()
    deleting["metadata"] = {**deleting["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}
    record = MachineRecord(replica_states={MASTER: "Running", worker(0): "Running",
                                           worker(1): "Running"})
    pods, terminating = observe({MASTER: running(), worker(0): deleting, worker(1): running()},
                                spec, 0)
    assert pods[worker(0)].observation == "podRunning"
    summary = replica_summary(spec, record, pods, PYTORCH.replica)
    assert (summary["Worker"]["active"], summary["Worker"]["live"],
            summary["Worker"]["terminating"], terminating) == (1, 1, 1, 1)


def test_a_remembered_summary_is_the_one_made_afresh_and_handed_out_again() -> None:
    """Within `remembering_summaries` (the model checker) a summary of equal inputs is the
    very object made before; any input changed (a state, a restart, a pod, a type's size)
    makes another, equal to the summary made without memory."""
    job = pytorch_job(workers=2)
    spec = read_job_spec(job, PYTORCH)
    record = MachineRecord(replica_states={MASTER: "Running", worker(0): "Running"})
    pods, _ = observe({MASTER: running(), worker(0): running()}, spec, 0)
    restarted = record.with_changes(replica_restarts={worker(0): RestartRecord(1, "t")})
    moved = record.with_changes(replica_states={**record.replica_states, worker(1): "Pending"})
    ended, _ = observe({MASTER: running(), worker(0): exited(0)}, spec, 0)
    wider = read_job_spec(pytorch_job(workers=3), PYTORCH)
    cases = [(spec, record, pods), (spec, restarted, pods), (spec, moved, pods),
             (spec, record, ended), (wider, record, pods)]
    with remembering_summaries():
        first = replica_summary(spec, record, pods, PYTORCH.replica)
        again = replica_summary(spec, dataclasses.replace(record), dict(pods), PYTORCH.replica)
        remembered = [replica_summary(s, r, p, PYTORCH.replica) for s, r, p in cases]
    assert again is first
    assert [replica_summary(s, r, p, PYTORCH.replica) for s, r, p in cases] == remembered
    assert len({id(summary) for summary in remembered}) == len(cases)
