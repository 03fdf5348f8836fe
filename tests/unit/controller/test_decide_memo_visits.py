"""Which replicas a pass over a job with remembered steps visits (`_to_visit`): one whose last
visit did nothing is left out while what it is made of is as then (its state, its pod's very
observation, its restarts and its ends seen), and visited as soon as one of them differs.

The decisions are checked to be those made without the memo (`RememberingDecide`); these
tests count the visits, as `test_reconcile_memo.py` does.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from engine.controller.reconcile.replica_memo import ReplicaMemo
from tests.scenarios.reconcile_memo import RememberingDecide, remembering
from tests.scenarios.world import World, exited, machine_job, running, running_again, worker
from tests.unit.controller.test_decide_memo_inputs import demo_world, install_demo, moving_when


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> Iterator[RememberingDecide]:
    with remembering(monkeypatch) as checking:
        yield checking


def _memo(checked: RememberingDecide) -> ReplicaMemo:
    (memo,) = checked.memos.values()
    return memo


def _visits(memo: ReplicaMemo) -> int:
    return memo.steps_taken + memo.steps_recalled


def _worker_0_failed_with_3() -> World:
    """Two Workers that ran, Worker-0's pod since failed with exit code 3, which a failure
    rule restarts the replica for (not reconciled yet)."""
    world = World(machine_job(workers=2, policy="Never"))
    world.job["spec"]["failureRules"] = [
        {"action": "RestartReplica", "onExitCodes": {"operator": "In", "values": [3]}}]
    world.reconcile()
    world.put(worker(0), running())
    world.put(worker(1), running())
    world.reconcile()
    world.put(worker(0), exited(3))
    return world


def test_quiet_replicas_whose_restarts_read_differ_are_visited(
        checked: RememberingDecide) -> None:
    """The record read (edited, or older than the last status write) gives Worker-1 the
    restart counted for Worker-0: the same states, pods, ends (none) and job-level values
    (the Workers' restarts together), but each Worker's own restarts differ from those of
    its quiet visit, so both are visited again."""
    world = _worker_0_failed_with_3()
    assert world.reconcile().decision.record.replica_restarts[worker(0)].count == 1
    world.put(worker(0), None)
    world.reconcile()
    world.put(worker(0), running())
    assert world.reconcile().replica_states == {"Worker-0": "Running", "Worker-1": "Running"}
    memo = _memo(checked)
    visited, spared = _visits(memo), memo.visits_spared
    world.reconcile()  # quiet: nothing of either Worker changed
    assert (_visits(memo), memo.visits_spared) == (visited, spared + 2)
    record = json.loads(world.job["status"]["record"])
    assert set(record["restarts"]["Worker"]) == {"0"}
    record["restarts"]["Worker"] = {"1": record["restarts"]["Worker"]["0"]}
    world.job["status"]["record"] = json.dumps(record)
    result = world.reconcile()
    assert result.replica_states == {"Worker-0": "Running", "Worker-1": "Running"}
    assert result.decision.record.replica_restarts[worker(1)].count == 1
    assert (_visits(memo), memo.visits_spared) == (visited + 2, spared + 2)


def test_a_quiet_replica_without_a_pod_is_left_out_while_it_has_none(
        checked: RememberingDecide) -> None:
    """Worker-0 succeeded and its pod was deleted since: its visits on no pod do nothing, so
    a pass leaves it out as long as it has none (the missing pod is one observation)."""
    world = World(machine_job(workers=2))
    world.reconcile()
    world.put(worker(0), running())
    world.put(worker(1), running())
    world.reconcile()
    world.put(worker(0), exited(0))
    world.reconcile()
    world.put(worker(0), None)
    assert world.reconcile().replica_states == {"Worker-0": "Succeeded", "Worker-1": "Running"}
    world.reconcile()
    memo = _memo(checked)
    visited, spared = _visits(memo), memo.visits_spared
    assert world.reconcile().phase == "Running"
    assert (_visits(memo), memo.visits_spared) == (visited, spared + 2)


def test_a_quiet_replica_with_ends_seen_is_left_out_while_they_are_as_recorded(
        checked: RememberingDecide) -> None:
    """Worker-0's container was restarted in place once: its record keeps that end as seen,
    and while it is, Worker-0 is left out as Worker-1 is."""
    world = World(machine_job(workers=2, policy="OnFailure"))
    world.reconcile()
    world.put(worker(0), running())
    world.put(worker(1), running())
    world.reconcile()
    world.put(worker(0), running_again(1))
    world.reconcile()
    result = world.reconcile()
    assert result.replica_states == {"Worker-0": "Running", "Worker-1": "Running"}
    assert worker(0) in result.decision.record.in_place_ends
    world.reconcile()
    memo = _memo(checked)
    visited, spared = _visits(memo), memo.visits_spared
    world.reconcile()
    assert (_visits(memo), memo.visits_spared) == (visited, spared + 2)


def test_a_replica_that_replays_its_states_deletion_is_visited_every_pass(
        checked: RememberingDecide) -> None:
    """Worker-0 failed and waits in Restarting for its pod to go: each pass its visit
    changes nothing but plans the state's deletion again (level-triggered), so it is never
    quiet, while Worker-1 is."""
    world = _worker_0_failed_with_3()
    assert world.reconcile().replica_states["Worker-0"] == "Restarting"
    memo = _memo(checked)
    for _ in range(3):
        visited, spared = _visits(memo), memo.visits_spared
        planned = [(p.action.name, str(p.replica), p.replayed)
                   for p in world.reconcile().decision.actions]
        assert planned == [("deletePod", "Worker-0", True)]
        assert (_visits(memo), memo.visits_spared) == (visited + 1, spared + 1)


FAILING_GUARD = moving_when("job.metadata.labels['stage'] == 'b'")


def test_a_replica_whose_guard_fails_is_visited_and_said_every_pass(
        checked: RememberingDecide, monkeypatch: pytest.MonkeyPatch) -> None:
    """Worker-0's guard reads a label the job lacks: each pass its visit moves nothing and
    fails, and the error is said in every decision, so the replica is never quiet."""
    install_demo(monkeypatch, FAILING_GUARD)
    world = demo_world(workers=1, policy="Never")
    world.reconcile()
    world.put(worker(0), running())
    world.reconcile()
    memo = _memo(checked)
    for _ in range(3):
        visited = _visits(memo)
        result = world.reconcile()
        assert result.replica_states == {"Worker-0": "Running"}
        assert [error.split(":")[0] for error in result.decision.errors] == ["Worker-0"]
        assert _visits(memo) == visited + 1
