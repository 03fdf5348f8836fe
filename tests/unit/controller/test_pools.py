"""Pools: a replica type of `completions` members run at most `parallelism` at a time.

The engine admits members lowest index first whenever a place frees up, keeps a restarting
member's place, and sends the excess back to waiting when parallelism is lowered.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.api.replicated import pool_problems
from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.jobspec import read_job_spec
from engine.simulation.play import play
from tests.kinds import MACHINES, REPO
from tests.scenarios.world import DEFINITIONS, World, exited, pending, pytorch_job, running

MACHINEJOB = DEFINITIONS["MachineJob"]
PYTORCH = DEFINITIONS["PyTorchJob"]
EXAMPLES = REPO / "examples" / "simulations"


def work(index: int) -> ReplicaId:
    return ReplicaId("Work", index)


def pool_job(**pool: Any) -> dict[str, Any]:
    """A MachineJob whose one type, Work, is a pool with these fields (restarts OnFailure)."""
    return {
        "apiVersion": "jobmachine.dev/v1alpha1",
        "kind": "MachineJob",
        "metadata": {"name": "pool", "namespace": "team", "uid": "uid-pool", "generation": 1},
        "spec": {"replicaSpecs": {"Work": {
            **pool, "restartPolicy": "Never",
            "template": {"spec": {"containers": [{"name": "main", "image": "example/w:1"}]}},
        }}},
    }


def started(world: World) -> list[str]:
    """The members in a non-terminal state now, as `Work-1`."""
    record = world.reconcile().decision.record
    states = MACHINEJOB.replica.states
    return sorted(str(r) for r, s in record.replica_states.items() if states[s].terminal is None)


# Reading a pool -----------------------------------------------------------------------------


def test_a_pool_has_its_completions_as_members_and_parallelism_1_by_default() -> None:
    spec = read_job_spec(pool_job(completions=5, completionMode="Indexed"), MACHINEJOB)
    (work_type,) = spec.replica_types
    assert (work_type.replicas, work_type.parallelism, work_type.completions) == (5, 1, 5)
    assert work_type.pool and work_type.indexed and work_type.at_once == 1
    assert spec.error == ""


def test_parallelism_above_the_members_lets_them_all_start() -> None:
    (work_type,) = read_job_spec(pool_job(completions=2, parallelism=10), MACHINEJOB).replica_types
    assert work_type.at_once == 2


def test_a_fixed_set_is_not_a_pool() -> None:
    job = pool_job()
    job["spec"]["replicaSpecs"]["Work"]["replicas"] = 3
    (work_type,) = read_job_spec(job, MACHINEJOB).replica_types
    assert not work_type.pool and work_type.at_once == 3 and work_type.completions is None


def test_machinejob_asks_a_pool_for_its_completions() -> None:
    spec = read_job_spec(pool_job(parallelism=3), MACHINEJOB)
    assert "a pool needs completions here" in spec.error


def test_a_kind_without_pools_refuses_pool_fields() -> None:
    job = pytorch_job(workers=1)
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["completions"] = 4
    spec = read_job_spec(job, PYTORCH)
    assert spec.error == ("spec.pytorchReplicaSpecs.Worker: completions: this kind's replica "
                          "specs are not pools")


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"completions": -1}, "w.completions: must be an integer greater than or equal to 0 "
                              "(got -1)"),
        ({"parallelism": True}, "w.parallelism: must be an integer greater than or equal to 0 "
                                "(got True)"),
        ({"completions": 2, "completionMode": "Ranked"},
         "w.completionMode: must be NonIndexed or Indexed (got 'Ranked')"),
        ({"parallelism": 2, "completionMode": "Indexed"},
         "w.completions: required when completionMode is Indexed"),
        ({"completions": 2, "replicas": 2},
         "w.replicas: cannot be set with completions: a pool's size is its completions"),
    ],
)
def test_pool_problems_name_the_field(fields: dict[str, Any], problem: str) -> None:
    assert pool_problems("w", fields, pools=True) == [problem]


def test_a_valid_pool_and_a_fixed_set_have_no_pool_problems() -> None:
    assert pool_problems("w", {"completions": 0, "parallelism": 0}, pools=True) == []
    assert pool_problems("w", {"replicas": 3}, pools=False) == []


# Admission ----------------------------------------------------------------------------------


def test_only_parallelism_members_get_a_pod_lowest_index_first() -> None:
    world = World(pool_job(completions=5, parallelism=2))
    first = world.reconcile()
    assert first.planned("createPod") == ["Work-0", "Work-1"]
    assert first.decision.variables["replicas"]["Work"]["waiting"] == 3


def test_a_member_that_succeeds_frees_its_place_for_the_next_index() -> None:
    world = World(pool_job(completions=4, parallelism=2))
    world.reconcile()
    world.pods.update({work(0): running(), work(1): running()})
    world.reconcile()
    world.pods[work(1)] = exited(0)
    after = world.reconcile()
    assert after.planned("createPod") == ["Work-2"]
    summary = after.decision.variables["replicas"]["Work"]
    assert (summary["succeeded"], summary["completedIndexes"], summary["waiting"]) == (1, "1", 1)


def test_a_member_that_fails_for_good_is_listed_and_fails_a_machinejob() -> None:
    world = World(pool_job(completions=3, parallelism=1))
    world.reconcile()
    world.pods[work(0)] = exited(3)
    after = world.reconcile()
    assert after.decision.variables["replicas"]["Work"]["failedIndexes"] == "0"
    # MachineJob's machine fails the job on a member that failed for good (restart policy
    # Never): no further member starts.
    assert after.job_path[0][1] == "Failing"
    assert after.planned("createPod") == []


def test_parallelism_0_starts_nothing() -> None:
    world = World(pool_job(completions=3, parallelism=0))
    assert world.reconcile().planned("createPod") == []
    assert started(world) == []


def test_lowering_parallelism_sends_the_excess_back_pending_members_first() -> None:
    world = World(pool_job(completions=5, parallelism=3))
    world.reconcile()
    world.pods.update({work(0): running(), work(1): pending(), work(2): running()})
    world.reconcile()
    world.job["spec"]["replicaSpecs"]["Work"]["parallelism"] = 1
    # Work-1 has not started: it goes first; then the highest running index, Work-2.
    assert started(world) == ["Work-0"]


def test_raising_parallelism_admits_more_at_once() -> None:
    world = World(pool_job(completions=5, parallelism=1))
    world.reconcile()
    world.pods[work(0)] = pending()
    world.job["spec"]["replicaSpecs"]["Work"]["parallelism"] = 3
    assert world.reconcile().planned("createPod") == ["Work-1", "Work-2"]


@settings(max_examples=40, deadline=None)
@given(
    completions=st.integers(min_value=0, max_value=6),
    parallelism=st.integers(min_value=0, max_value=4),
    outcomes=st.lists(st.sampled_from(["run", "succeed", "fail"]), max_size=25),
)
def test_never_more_than_parallelism_members_started(
    completions: int, parallelism: int, outcomes: list[str]
) -> None:
    """Whatever the pods do, no more than `parallelism` members are started at once, and
    the started ones are the lowest indexes that have not ended."""
    world = World(pool_job(completions=completions, parallelism=parallelism))
    states = MACHINEJOB.replica.states
    for outcome in outcomes:
        record = world.reconcile().decision.record
        live = sorted(r.index for r, s in record.replica_states.items()
                      if states[s].terminal is None)
        assert len(live) <= parallelism
        ended = {r.index for r, s in record.replica_states.items() if states[s].terminal}
        waiting = [i for i in range(completions) if i not in ended and i not in live]
        assert not live or not waiting or max(live) < min(waiting) or len(live) == parallelism
        if not live:
            continue
        chosen = work(live[0])
        world.pods[chosen] = {"run": running(), "succeed": exited(0), "fail": exited(1)}[outcome]


def test_members_sent_back_say_so_in_an_event_when_their_pod_is_deleted() -> None:
    played = play(EXAMPLES / "pool-parallelism.yaml", machines=MACHINES)
    said = [(e.subject, e.text) for e in played.simulation.entries
            if e.kind == "event" and "ParallelismLowered" in e.text]
    assert said == [
        ("Work-1", "Normal ParallelismLowered: Work-1 waits for a place again: its pool's "
                   "parallelism is now 1; its pod narrowed-work-1 is deleted."),
        ("Work-2", "Normal ParallelismLowered: Work-2 waits for a place again: its pool's "
                   "parallelism is now 1; its pod narrowed-work-2 is deleted."),
    ]
