"""A replica's failures in a row (`_track_backoff`), which its re-creation back-off is worked
out from: a pod lost with its node that the machine recreates counts one, as a failed pod
does; so does a failed child object its machine retries, and a child that succeeds forgets
them, as a pod that succeeds does.

The children are those of a kind of our own, whose replicas are batch/v1 Jobs a failure of
which its machine retries (no shipped machine retries a failed child: JobSet's and
TrainJob's replicas end there).
"""

from __future__ import annotations

from typing import Any

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.decide import Decision, decide
from engine.controller.reconcile.jobspec import read_job_spec
from engine.controller.reconcile.observe import observe_child
from engine.controller.reconcile.record import MachineRecord, RestartRecord
from engine.definition import CompiledDefinition, compile_definition, load_text
from engine.kube.timestamps import format_time
from tests.scenarios.world import World, lost, machine_job, running, worker

RETRYING_JOBS = """\
apiVersion: jobmachine.dev/v1alpha1
kind: StateMachine
metadata: {name: retryingjobs}
spec:
  governs:
    apiVersion: example.com/v1
    kind: RetryingJobsJob
    replicaTypes: [Worker]
    replicaSpecs: spec.workers
    defaultRestartPolicy: Never
  child:
    apiVersion: batch/v1
    kind: Job
    status:
      succeeded: >-
        has(child.status) && has(child.status.conditions)
        && child.status.conditions.exists(c, c.type == 'Complete' && c.status == 'True')
      failed: >-
        has(child.status) && has(child.status.conditions)
        && child.status.conditions.exists(c, c.type == 'Failed' && c.status == 'True')
  job:
    initial: Running
    states:
      Running: {condition: {type: Running, reason: JobsRunning}}
      Succeeded: {terminal: success, condition: {type: Succeeded, reason: AllJobsCompleted}}
    transitions:
      - {from: Running, to: Succeeded, when: "replicas.Worker.succeeded == replicas.Worker.desired",
         reason: AllJobsCompleted}
  replica:
    initial: Pending
    states:
      Pending: {onEnter: [createChild]}
      Retrying: {onEnter: [deleteChild]}
      Succeeded: {terminal: success}
    transitions:
      - {from: [Pending, Retrying], to: Succeeded, "on": childSucceeded, reason: JobCompleted}
      - {from: Pending, to: Retrying, "on": childFailed, reason: JobFailed}
      - {from: Retrying, to: Pending, "on": childMissing, reason: JobGone}
"""

WORKER = ReplicaId("Worker", 0)
NOW = "2027-01-01T00:01:00Z"


def definition() -> CompiledDefinition:
    (loaded,) = load_text(RETRYING_JOBS, "retrying.yaml")
    return compile_definition(loaded)


def job() -> dict[str, Any]:
    template = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    return {"apiVersion": "example.com/v1", "kind": "RetryingJobsJob",
            "metadata": {"name": "rj", "namespace": "n", "uid": "u"},
            "spec": {"workers": {"Worker": {"replicas": 1, "template": template}}}}


def ended(condition: str) -> dict[str, Any]:
    """Worker-0's child Job, ended with `condition` (Complete, Failed)."""
    return {"metadata": {"name": "rj-worker-0", "uid": "child-1"},
            "status": {"conditions": [{"type": condition, "status": "True"}]}}


def decide_on(child: dict[str, Any], record: MachineRecord) -> Decision:
    machine = definition()
    facts = {WORKER: observe_child(child, job=job(), definition=machine)}
    return decide(machine, job(), read_job_spec(job(), machine), record, facts,
                  job_observations=frozenset({"resumed", "noReplicaRestarting"}), now=NOW)


def test_a_failed_child_the_machine_retries_is_one_more_failure_in_a_row() -> None:
    before = MachineRecord(state="Running", replica_states={WORKER: "Pending"},
                           replica_backoff={WORKER: RestartRecord(2, "2027-01-01T00:00:00Z")})
    decision = decide_on(ended("Failed"), before)
    assert decision.record.replica_states == {WORKER: "Retrying"}
    assert decision.record.replica_backoff == {WORKER: RestartRecord(3, NOW)}


def test_a_child_that_succeeds_forgets_the_failures_before_it() -> None:
    before = MachineRecord(state="Running", replica_states={WORKER: "Pending"},
                           replica_backoff={WORKER: RestartRecord(3, "2027-01-01T00:00:00Z")})
    decision = decide_on(ended("Complete"), before)
    assert decision.record.replica_states == {WORKER: "Succeeded"}
    assert decision.record.replica_backoff == {}


def test_a_pod_lost_with_its_node_and_recreated_is_a_failure_in_a_row() -> None:
    world = World(machine_job(workers=1, policy="OnFailure"))
    world.reconcile()
    world.put(worker(0), running())
    assert world.reconcile().phase == "Running"
    world.put(worker(0), lost())
    decision = world.reconcile().decision
    assert decision.record.replica_states == {worker(0): "Restarting"}
    assert decision.record.replica_backoff == {worker(0): RestartRecord(1, format_time(world.now))}
