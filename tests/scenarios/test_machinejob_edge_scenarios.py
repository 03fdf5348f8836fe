"""MachineJob (machines/job.yaml) at the edges of its ExitCode rule and its successPolicy,
as step tables.

ExitCode restarts a pod whose main container exited 128 or more (killed by a signal) and
fails the job at any lower non-zero code: 128 restarts, 127 fails. A successPolicy in
mode Any ends the job at `count` succeeded pods (default 1) of its replicaTypes (all types
when the list is absent or empty); in mode All, every replica of its replicaTypes (every
type when the list is empty) must succeed.
"""

from __future__ import annotations

from typing import Any

from tests.scenarios.world import (
    CHIEF,
    Step,
    World,
    exited,
    machine_job,
    play,
    replica_spec,
    running,
    worker,
)


def test_exit_code_128_restarts_the_pod() -> None:
    play(World(machine_job(policy="ExitCode")), [
        Step("submitted", phase="Created", created=["Worker-0"]),
        Step("it runs", {worker(0): running()}, phase="Running"),
        Step("it exits 128 (a signal): restarted", {worker(0): exited(128)}, phase="Running",
             deleted=["Worker-0"], restarts=1, states={"Worker-0": "Restarting"}),
    ])


def test_exit_code_127_fails_the_job() -> None:
    play(World(machine_job(policy="ExitCode")), [
        Step("submitted", phase="Created", created=["Worker-0"]),
        Step("it runs", {worker(0): running()}, phase="Running"),
        Step("it exits 127 (below 128): the job fails", {worker(0): exited(127)},
             phase="Failed", job_actions=["cleanupPods"], restarts=0),
    ])


def chief_and_workers(success_policy: dict[str, Any]) -> dict[str, Any]:
    """A MachineJob with one Chief and two Workers (restart policy Never)."""
    job = machine_job(policy="Never")
    job["spec"]["replicaSpecs"] = {"Chief": replica_spec("main", 1, "Never"),
                                   "Worker": replica_spec("main", 2, "Never")}
    job["spec"]["successPolicy"] = success_policy
    return job


ALL = ["Chief-0", "Worker-0", "Worker-1"]
ALL_RUN = {CHIEF: running(), worker(0): running(), worker(1): running()}


def test_any_of_the_workers_ends_the_job_and_the_chief_does_not_count() -> None:
    play(World(chief_and_workers({"mode": "Any", "replicaTypes": ["Worker"]})), [
        Step("submitted", phase="Created", created=ALL),
        Step("everything runs: no success yet", ALL_RUN, phase="Running"),
        Step("the chief exits 0: not one of the replicaTypes", {CHIEF: exited(0)},
             phase="Running"),
        Step("worker-1 exits 0: count 1 (the default) reached; worker-0 still to clean up",
             {worker(1): exited(0)}, phase="Succeeding", job_actions=["cleanupPods"]),
    ])


def test_any_without_replica_types_counts_every_type() -> None:
    play(World(chief_and_workers({"mode": "Any", "replicaTypes": [], "count": 2})), [
        Step("submitted", phase="Created", created=ALL),
        Step("everything runs", ALL_RUN, phase="Running"),
        Step("the chief exits 0: 1 of count 2", {CHIEF: exited(0)}, phase="Running"),
        Step("worker-0 exits 0: 2 of count 2", {worker(0): exited(0)},
             phase="Succeeding", job_actions=["cleanupPods"]),
    ])


def test_all_with_an_empty_replica_types_list_waits_for_every_replica() -> None:
    play(World(chief_and_workers({"mode": "All", "replicaTypes": []})), [
        Step("submitted", phase="Created", created=ALL),
        Step("everything runs", ALL_RUN, phase="Running"),
        Step("the chief and worker-0 exit 0", {CHIEF: exited(0), worker(0): exited(0)},
             phase="Running"),
        Step("worker-1 exits 0: every replica succeeded", {worker(1): exited(0)},
             phase="Succeeded", job_actions=["cleanupPods"]),
    ])


def test_all_of_the_workers_ends_the_job_while_the_chief_runs() -> None:
    play(World(chief_and_workers({"mode": "All", "replicaTypes": ["Worker"]})), [
        Step("submitted", phase="Created", created=ALL),
        Step("everything runs", ALL_RUN, phase="Running"),
        Step("worker-0 exits 0: one of two", {worker(0): exited(0)}, phase="Running"),
        Step("worker-1 exits 0: every worker succeeded, the chief still runs",
             {worker(1): exited(0)}, phase="Succeeding", job_actions=["cleanupPods"]),
    ])
