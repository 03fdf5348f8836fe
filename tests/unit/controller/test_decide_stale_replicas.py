"""Replicas the spec no longer has are forgotten as a pass begins (`_without_stale_replicas`):
those of a replica type removed from the spec, and those at or beyond a type's replicas after
it was scaled down. Their state, restarts, back-off, timer and ends seen all go (a replica
made there later starts afresh); the job's own count of restarts stays.
"""

from __future__ import annotations

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.decide import Decision, decide
from engine.controller.reconcile.jobspec import read_job_spec
from engine.controller.reconcile.observe import job_observations
from engine.controller.reconcile.record import InPlaceEnds, MachineRecord, RestartRecord
from engine.kube.timestamps import format_time
from tests.scenarios.world import DEFINITIONS, T0, observe, running, tf_job, worker

PS = ReplicaId("PS", 0)
WHEN = format_time(T0)


def _everything_of(replicas: list[ReplicaId]) -> MachineRecord:
    """A running TFJob's record in which each of `replicas` runs, with a restart, a failure
    in a row, a timer and an end seen in place. (Of the replicas a pass visits, the timer
    and ends are those of what the pass sees: only their restarts and back-off are kept.)"""
    return MachineRecord(
        state="Running",
        restarts=len(replicas),
        replica_states=dict.fromkeys(replicas, "Running"),
        replica_restarts=dict.fromkeys(replicas, RestartRecord(1, WHEN)),
        replica_backoff=dict.fromkeys(replicas, RestartRecord(1, WHEN)),
        replica_timers=dict.fromkeys(replicas, WHEN),
        in_place_ends={r: InPlaceEnds(f"uid-{r}", 1) for r in replicas},
    )


def _decide(replicas: dict[str, int], record: MachineRecord) -> Decision:
    job = tf_job(replicas=replicas, policy="OnFailure")
    definition = DEFINITIONS["TFJob"]
    spec = read_job_spec(job, definition)
    pods, terminating = observe({worker(0): running()}, spec, 0)
    return decide(definition, job, spec, record, pods,
                  job_observations=job_observations(job, spec, start_time=WHEN, now=T0,
                                                    terminating_pods=terminating),
                  now=WHEN)


def _maps(decision: Decision) -> list[set[ReplicaId]]:
    """The replicas in each of the record's maps of replicas."""
    record = decision.record
    return [set(record.replica_states), set(record.replica_restarts),
            set(record.replica_backoff), set(record.replica_timers), set(record.in_place_ends)]


def test_the_replicas_of_a_type_removed_from_the_spec_are_forgotten() -> None:
    decision = _decide({"Worker": 1}, _everything_of([worker(0), PS]))
    assert [PS in replicas for replicas in _maps(decision)] == [False] * 5
    assert [worker(0) in replicas for replicas in _maps(decision)[:3]] == [True] * 3
    assert decision.record.restarts == 2


def test_the_replicas_beyond_a_scaled_down_type_are_forgotten() -> None:
    decision = _decide({"Worker": 1}, _everything_of([worker(0), worker(1), worker(2)]))
    assert [replicas & {worker(1), worker(2)} for replicas in _maps(decision)] == [set()] * 5
    assert [worker(0) in replicas for replicas in _maps(decision)[:3]] == [True] * 3
    assert decision.record.restarts == 3


def test_a_record_of_the_spec_s_replicas_alone_keeps_them_all() -> None:
    decision = _decide({"Worker": 2, "PS": 1}, _everything_of([worker(0), worker(1), PS]))
    assert [replicas >= {worker(0), worker(1), PS} for replicas in _maps(decision)[:3]] == [
        True] * 3
