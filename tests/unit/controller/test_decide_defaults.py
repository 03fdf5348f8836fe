"""`decide`'s defaults and the plainest cases of what it says: without surroundings it
decides as for a job not gang scheduled none of whose child objects exists yet (each object
the machine declares is there, absent, `{}`, so a guard reading it does not fail for want of
the name); a single restart counted is said, as several are (`Decision.restarts`).
"""

from __future__ import annotations

from engine.controller.reconcile.decide import decide
from engine.controller.reconcile.jobspec import read_job_spec
from engine.controller.reconcile.observe import job_observations
from engine.controller.reconcile.record import read_record
from engine.kube.timestamps import format_time
from tests.scenarios.world import (
    DEFINITIONS,
    T0,
    World,
    exited,
    machine_job,
    pytorch_job,
    running,
    worker,
)


def test_without_surroundings_each_declared_object_is_absent_and_nothing_gang_scheduled(
) -> None:
    definition = DEFINITIONS["PyTorchJob"]
    job = pytorch_job()
    spec = read_job_spec(job, definition)
    decision = decide(
        definition, job, spec, read_record({}), {},
        job_observations=job_observations(job, spec, start_time=None, now=T0,
                                          terminating_pods=0),
        now=format_time(T0))
    assert [child.name for child in definition.objects] == [
        "podgroup-volcano", "podgroup-plugins"]
    assert decision.variables["objects"] == {"podgroup-volcano": {}, "podgroup-plugins": {}}
    assert decision.variables["gangScheduler"] == ""
    assert decision.errors == ()
    assert decision.record.state == "Created"


def test_one_restart_counted_is_said_with_the_reason_of_the_transition_that_counted_it(
) -> None:
    # What the restart metric counts: a pod that failed with a code the policy retries.
    world = World(machine_job(workers=1, policy="ExitCode"))
    world.reconcile()
    world.put(worker(0), running())
    world.reconcile()
    world.put(worker(0), exited(137))
    result = world.reconcile()
    assert result.replica_path == [("Worker-0", "Running", "Restarting")]
    assert result.decision.restarts == (("PodFailed", 1),)
    assert result.decision.record.restarts == 1
