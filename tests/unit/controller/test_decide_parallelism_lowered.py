"""Which members of a pool go back to waiting when its parallelism is lowered
(`_within_parallelism`): as many as are over the new parallelism, those whose pod does not
run yet first (pending, or running but being deleted), then the running ones, highest index
first; a pool within its parallelism, or a fixed type beside it, loses none.
"""

from __future__ import annotations

import copy
from typing import Any

from engine.controller.reconcile.children import ReplicaId
from tests.scenarios.world import World, deleted, exited, pending, running, running_again
from tests.unit.controller.test_pools import pool_job, started, work


def _lowered(pods: dict[int, dict[str, Any]], parallelism: int,
             job: dict[str, Any] | None = None) -> list[str]:
    """The members started after a pass that lowered the Work pool's parallelism to
    `parallelism`, its members' pods being `pods` (by index)."""
    world = World(job or pool_job(completions=5, parallelism=len(pods)))
    world.reconcile()
    world.pods.update({work(index): pod for index, pod in pods.items()})
    world.reconcile()
    world.job["spec"]["replicaSpecs"]["Work"]["parallelism"] = parallelism
    return [name for name in started(world) if name.startswith("Work")]


def test_a_member_not_running_yet_goes_before_a_running_one_of_a_higher_index() -> None:
    assert _lowered({0: pending(), 1: running(), 2: running()}, 1) == ["Work-1"]


def test_a_running_member_being_deleted_goes_before_the_other_running_ones() -> None:
    assert _lowered({0: running(), 1: deleted(), 2: running()}, 2) == ["Work-0", "Work-2"]


def test_running_members_go_highest_index_first() -> None:
    assert _lowered({0: running(), 1: running(), 2: running()}, 2) == ["Work-0", "Work-1"]


def test_a_pool_after_a_fixed_type_is_lowered_too() -> None:
    job = pool_job(completions=5, parallelism=3)
    job["spec"]["replicaSpecs"] = {
        "Chief": {"replicas": 1, "restartPolicy": "Never",
                  "template": job["spec"]["replicaSpecs"]["Work"]["template"]},
        **job["spec"]["replicaSpecs"]}
    assert _lowered({0: running(), 1: running(), 2: running()}, 1, job) == ["Work-0"]


def test_a_member_started_without_a_pod_yet_goes_first() -> None:
    assert _lowered({0: running(), 1: running()}, 1,
                    pool_job(completions=5, parallelism=3)) == ["Work-0"]


def test_a_pool_with_fewer_members_started_than_its_parallelism_keeps_them() -> None:
    world = World(pool_job(completions=3, parallelism=3))
    world.reconcile()
    world.pods.update({work(0): running(), work(1): running(), work(2): running()})
    world.reconcile()
    world.pods[work(2)] = exited(0)
    world.reconcile()
    # Two members run, none waits: a pass leaves them as they are.
    assert world.reconcile().replica_path == []
    assert started(world) == ["Work-0", "Work-1"]


def test_every_lowered_pool_sends_its_excess_back_in_the_same_pass() -> None:
    job = pool_job(completions=5, parallelism=2)
    job["spec"]["replicaSpecs"]["Eval"] = copy.deepcopy(job["spec"]["replicaSpecs"]["Work"])
    world = World(job)
    world.reconcile()
    evals = {ReplicaId("Eval", index): running() for index in range(2)}
    world.pods.update({work(0): running(), work(1): running(), **evals})
    world.reconcile()
    for pool in job["spec"]["replicaSpecs"].values():
        pool["parallelism"] = 1
    assert started(world) == ["Eval-0", "Work-0"]


def test_a_member_sent_back_forgets_its_timer() -> None:
    job = pool_job(completions=5, parallelism=2)
    job["spec"]["runPolicy"] = {"pendingTimeoutSeconds": 60}
    world = World(job)
    assert world.reconcile().decision.record.replica_timers.keys() == {work(0), work(1)}
    world.pods.update({work(0): running(), work(1): pending()})
    world.reconcile()
    job["spec"]["replicaSpecs"]["Work"]["parallelism"] = 1
    record = world.reconcile().decision.record
    assert (sorted(map(str, record.replica_states)), record.replica_timers) == (["Work-0"], {})


def test_a_member_sent_back_forgets_the_ends_it_restarted_in_place() -> None:
    job = pool_job(completions=5, parallelism=2)
    job["spec"]["replicaSpecs"]["Work"]["restartPolicy"] = "OnFailure"
    world = World(job)
    world.reconcile()
    world.put(work(0), running())
    world.put(work(1), running_again(1))
    world.reconcile()
    assert world.reconcile().decision.record.in_place_ends.keys() == {work(1)}
    job["spec"]["replicaSpecs"]["Work"]["parallelism"] = 1
    record = world.reconcile().decision.record
    assert (sorted(map(str, record.replica_states)), record.in_place_ends) == (["Work-0"], {})
