"""A pass over a wide job steps only the replicas whose inputs changed (issue 33, part 3).

The replica steps of a job's earlier passes are remembered (`ReplicaMemo`) and taken again
as they were when nothing they read changed. Random walks of the shipped machines check
that every decision is the one taken without the memo (the simulated world decides both
ways, tests/scenarios/reconcile_memo.py), and that the memo recalls steps at all; then the
inputs one at a time: a job-level value a guard reads, a timer running out, a restart
counted, a type's replica counts (read by MachineJob's dependsOn).
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.jobspec import read_job_spec
from engine.controller.reconcile.observe import PodFacts
from engine.controller.reconcile.replica_memo import ReplicaMemo, machine_reads
from tests.scenarios.reconcile_memo import RememberingDecide, remembering
from tests.scenarios.test_batch_limit_scenarios import batch_job
from tests.scenarios.world import (
    DEFINITIONS,
    Pod,
    World,
    deleted,
    ended_in_place,
    evicted,
    exited,
    lost,
    machine_job,
    observe,
    pending,
    pytorch_job,
    running,
    running_again,
    tf_job,
    worker,
)


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> Iterator[RememberingDecide]:
    with remembering(monkeypatch) as checking:
        yield checking


def _replica(name: str) -> ReplicaId:
    kind, index = name.rsplit("-", 1)
    return ReplicaId(kind, int(index))


_NEXT: dict[str, list[Callable[[random.Random], Pod | None]]] = {
    "Pending": [lambda _: running(), lambda _: exited(0), lambda _: evicted()],
    "Running": [lambda _: exited(0), lambda _: exited(1), lambda _: exited(137),
                lambda r: ended_in_place(r.choice((1, 2, 137)), r.randint(0, 3)),
                lambda _: deleted(),
                lambda _: lost(), lambda r: running_again(r.randint(1, 3))],
    "Succeeded": [lambda _: None],
    "Failed": [lambda _: None],
}


def _walk(world: World, rng: random.Random, passes: int) -> None:
    """`passes` reconciles of `world`, the world moving at random between them: pods the
    engine created appear, some pods move on, deleted ones go; now and then the job is
    suspended or resumed, or time passes."""
    for _ in range(passes):
        result = world.reconcile()
        for name in result.made:
            world.put(_replica(name), pending())
        for name in result.planned("deletePod"):
            world.put(_replica(name), None)
        for replica in rng.sample(sorted(world.pods), min(len(world.pods), rng.randint(0, 2))):
            phase = world.pods[replica]["status"]["phase"]
            if world.pods[replica]["metadata"].get("deletionTimestamp"):
                world.put(replica, None)
            else:
                world.put(replica, rng.choice(_NEXT[phase])(rng))
        roll = rng.random()
        if roll < 0.05:
            world.run_policy["suspend"] = not world.run_policy.get("suspend", False)
        elif roll < 0.15:
            world.advance(rng.choice((5, 31, 400)))


JOBS: dict[str, Callable[[], dict[str, Any]]] = {
    "PyTorchJob ExitCode": lambda: pytorch_job(workers=6, run_policy={
        "pendingTimeoutSeconds": 30, "backoffLimit": 20}),
    "PyTorchJob OnFailure": lambda: pytorch_job(workers=5, policy="OnFailure",
                                                run_policy={"backoffLimit": 20}),
    "TFJob": lambda: tf_job(replicas={"Chief": 1, "PS": 2, "Worker": 4}, policy="OnFailure"),
    "MachineJob": lambda: machine_job(workers=6, policy="OnFailure",
                                      run_policy={"backoffLimit": 30}),
    "Job Indexed": lambda: batch_job("Never", completionMode="Indexed", completions=12,
                                     parallelism=4, backoffLimitPerIndex=1, backoffLimit=30),
    "Job OnFailure": lambda: batch_job("OnFailure", completions=6, parallelism=3,
                                       backoffLimit=30),
}


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("name", sorted(JOBS))
def test_random_walks_decide_alike_with_and_without_remembered_steps(
        name: str, seed: int, checked: RememberingDecide) -> None:
    _walk(World(JOBS[name]()), random.Random(f"{name}/{seed}"), passes=40)
    assert checked.recalled + checked.spared > 0, "the memo never recalled a step"
    assert checked.taken > 0


def _memo(checked: RememberingDecide) -> ReplicaMemo:
    (memo,) = checked.memos.values()
    return memo


def test_a_second_pass_over_an_unchanged_wide_job_steps_no_replica(
        checked: RememberingDecide) -> None:
    world = World(pytorch_job(workers=50))
    world.reconcile()
    for index in range(50):
        world.put(worker(index), running())
    world.reconcile()
    memo = _memo(checked)
    taken = memo.steps_taken
    world.reconcile()
    assert memo.steps_taken == taken
    world.put(worker(7), exited(0))
    world.reconcile()
    # Worker-7's alone: the step that moves it, and the next round's in its new state.
    assert memo.steps_taken == taken + 2


def test_a_pass_over_an_unchanged_wide_job_visits_no_replica(
        checked: RememberingDecide) -> None:
    """Each replica's last visit did nothing, on the very observation it has now: the pass
    looks them up and steps none (a pass costs what changed, not the job's width)."""
    world = World(pytorch_job(workers=50))
    world.reconcile()
    for replica in (ReplicaId("Master", 0), *map(worker, range(50))):
        world.put(replica, running())
    world.reconcile()
    world.reconcile()
    memo = _memo(checked)
    visited, spared = memo.steps_taken + memo.steps_recalled, memo.visits_spared
    world.reconcile()
    assert memo.steps_taken + memo.steps_recalled == visited
    assert memo.visits_spared == spared + 51
    world.put(worker(7), exited(0))
    world.reconcile()
    # Worker-7's alone: the step that moves it, and the next round's in its new state.
    assert memo.steps_taken + memo.steps_recalled == visited + 2


def test_a_pass_that_reads_an_older_record_steps_its_replicas_on_it(
        checked: RememberingDecide) -> None:
    """The last pass's status write did not land (or the record was edited): a replica is
    visited on the state the record read gives it, not on the one its quiet visit saw."""
    world = World(pytorch_job(workers=2))
    world.reconcile()
    for replica in (ReplicaId("Master", 0), worker(0), worker(1)):
        world.put(replica, pending())
    world.reconcile()
    before = copy.deepcopy(world.job["status"])
    world.put(worker(1), running())
    assert world.reconcile().replica_states["Worker-1"] == "Running"
    world.reconcile()  # Worker-1 quiet in Running
    world.job["status"] = before
    assert world.reconcile().replica_states["Worker-1"] == "Running"


def test_a_pass_that_reads_an_older_record_counts_a_restart_in_place_again(
        checked: RememberingDecide) -> None:
    """The pass that saw a restart in place was lost: its replica, quiet since on the same
    pod, state and observation, has neither the restart nor the end seen in the record read,
    so it is visited and counts them again."""
    world = World(pytorch_job(workers=1, policy="OnFailure"))
    world.reconcile()
    world.put(worker(0), running())
    world.reconcile()
    before = copy.deepcopy(world.job["status"])
    world.put(worker(0), running_again(1))
    world.reconcile()
    world.reconcile()
    assert world.reconcile().status.get("restarts") == 1
    world.job["status"] = before
    assert world.reconcile().status.get("restarts") == 1


def test_a_job_level_value_the_machine_reads_steps_every_replica_again(
        checked: RememberingDecide) -> None:
    world = World(pytorch_job(workers=2, run_policy={"pendingTimeoutSeconds": 300}))
    world.reconcile()
    for replica in (ReplicaId("Master", 0), worker(0), worker(1)):
        world.put(replica, pending())
    world.reconcile()
    world.advance(20)
    assert world.reconcile().replica_states["Worker-1"] == "Pending"
    world.run_policy["pendingTimeoutSeconds"] = 10  # the Pending state's timeout reads it
    assert world.reconcile().replica_states["Worker-1"] == "PendingTimedOut"


def test_a_status_write_alone_steps_no_replica_again(checked: RememberingDecide) -> None:
    world = World(pytorch_job(workers=4))
    world.reconcile()
    for replica in (ReplicaId("Master", 0), *map(worker, range(4))):
        world.put(replica, pending())
    world.reconcile()
    memo = _memo(checked)
    taken = memo.steps_taken
    world.job["metadata"]["resourceVersion"] = "999"
    world.job["metadata"]["labels"] = {"team": "vision"}
    world.reconcile()
    assert memo.steps_taken == taken


def test_a_pending_timeout_runs_out_without_the_pod_changing(
        checked: RememberingDecide) -> None:
    world = World(pytorch_job(workers=2, run_policy={"pendingTimeoutSeconds": 30}))
    world.reconcile()
    for replica in (ReplicaId("Master", 0), worker(0), worker(1)):
        world.put(replica, pending())
    world.reconcile()
    world.advance(20)
    assert world.reconcile().replica_states["Worker-1"] == "Pending"
    world.advance(11)
    assert world.reconcile().replica_states["Worker-1"] == "PendingTimedOut"
    assert _memo(checked).steps_recalled > 0


def test_each_replica_waiting_on_its_timer_recalls_its_step_once_a_pass(
        checked: RememberingDecide) -> None:
    """A replica whose state has a timer running is visited every pass (it is never quiet),
    and on the inputs it was stepped on its step is recalled, not taken: once per replica
    and pass, as the memo counts them."""
    world = World(pytorch_job(workers=2, run_policy={"pendingTimeoutSeconds": 30}))
    world.reconcile()
    for replica in (ReplicaId("Master", 0), worker(0), worker(1)):
        world.put(replica, pending())
    world.reconcile()
    memo = _memo(checked)
    taken = memo.steps_taken
    for seconds, recalled in ((10, 3), (10, 6)):
        world.advance(seconds)
        world.reconcile()
        assert (memo.steps_taken, memo.steps_recalled) == (taken, recalled)


def test_a_restart_counted_is_an_input_of_the_replica_that_restarted(
        checked: RememberingDecide) -> None:
    world = World(pytorch_job(workers=2))
    world.reconcile()
    world.put(worker(1), running())
    world.reconcile()
    world.put(worker(1), exited(137))  # retryable: Restarting, pod deleted, one restart
    world.reconcile()
    world.put(worker(1), None)
    world.reconcile()
    world.put(worker(1), running())
    result = world.reconcile()
    assert result.replica_states["Worker-1"] == "Running"
    assert [n.reason for n in result.notices if n.replica == "Worker-1"] == ["Restarted"]


def test_a_replica_that_stays_in_its_state_says_what_its_pod_says_now(
        checked: RememberingDecide) -> None:
    """Ends in place a failure rule ignores, seen while RestartingInPlace: the same state,
    observation, count of new ends and of restarts, another exit code each time; each
    end's Event says its own."""
    job = pytorch_job(workers=1, policy="OnFailure")
    job["spec"]["failureRules"] = [
        {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [1, 2, 3]}}]
    world = World(job)
    world.reconcile()
    world.put(worker(0), running())
    world.reconcile()
    said = []
    for restarts, code in enumerate((1, 2, 3)):
        world.put(worker(0), ended_in_place(code, restarts))
        result = world.reconcile()
        assert result.replica_states["Worker-0"] == "RestartingInPlace"
        said += [message for _, reason, message in result.posted
                 if reason == "PodFailureIgnored"]
    assert [message.split("(")[1][:11] for message in said] == [
        "exit code 1", "exit code 2", "exit code 3"]
    assert _memo(checked).steps_recalled > 0


def test_machine_jobs_replicas_read_the_replica_counts() -> None:
    """MachineJob's create loop reads `replicas` (dependsOn), so a count changing anywhere
    steps its replicas again; the Kubeflow machines read none of it."""
    machine = machine_reads(DEFINITIONS["MachineJob"].replica)
    assert "replicas" in machine.paths
    pytorch = machine_reads(DEFINITIONS["PyTorchJob"].replica)
    assert "replicas" not in pytorch.paths
    assert pytorch.paths["job"] == {("metadata", "name"), ("metadata", "namespace")}
    assert pytorch.paths["runPolicy"] == {("suspend",), ("pendingTimeoutSeconds",)}


def test_what_a_machine_reads_is_worked_out_once_per_machine() -> None:
    """Every job's memo asks when it begins; the answer is the one worked out first."""
    pytorch, machinejob = DEFINITIONS["PyTorchJob"].replica, DEFINITIONS["MachineJob"].replica
    assert machine_reads(pytorch) is machine_reads(pytorch)
    assert machine_reads(machinejob) is not machine_reads(pytorch)
    assert ReplicaMemo()._reads is not machine_reads(pytorch)
    memo = ReplicaMemo()
    memo.begin(pytorch, [])
    assert memo._reads is machine_reads(pytorch)


def test_the_job_values_are_the_values_at_the_paths_read() -> None:
    reads = machine_reads(DEFINITIONS["PyTorchJob"].replica)
    job = {"metadata": {"name": "a", "namespace": "n", "resourceVersion": "1"}}
    moved = {"metadata": {"name": "a", "namespace": "n", "resourceVersion": "2"}}
    renamed = {"metadata": {"name": "b", "namespace": "n", "resourceVersion": "1"}}
    common = {"job": job, "runPolicy": {"suspend": False}, "replicas": {"Worker": {}}}
    assert reads.values(common) == reads.values({**common, "job": moved})
    assert reads.values(common) != reads.values({**common, "job": renamed})
    assert reads.values(common) != reads.values({**common, "runPolicy": {}})
    assert reads.values(common) == reads.values({**common, "replicas": {"Worker": {"a": 1}}})


def test_a_pods_observation_is_remembered_while_what_it_is_made_of_is_equal() -> None:
    memo = ReplicaMemo()
    pod = running()
    inputs = (pod, (), "pytorch", True, False, None, True)
    assert memo.observation(worker(0), inputs) is None
    facts = observe({worker(0): pod}, read_job_spec(pytorch_job(), DEFINITIONS["PyTorchJob"]),
                    0)[0][worker(0)]
    memo.observed(worker(0), inputs, facts)
    assert memo.observation(worker(0), inputs) is facts
    assert memo.observation(worker(0), (running(), *inputs[1:])) is facts  # an equal pod
    assert memo.observation(worker(1), inputs) is None
    for changed in ((exited(0), *inputs[1:]), (*inputs[:3], False, *inputs[4:]),
                    (*inputs[:5], 0.0, True), (*inputs[:6], False)):
        assert memo.observation(worker(0), changed) is None


def test_a_pod_s_observation_is_kept_for_that_very_pod_on_a_node_as_ready_and_in_its_context(
) -> None:
    """The reconcile takes a pod's observation as it was while the cache holds the object it
    was made of, its node is as ready, and what else every observation is made of (failure
    rules, main container, templates) is unchanged; not across minReadySeconds' clock."""
    memo, facts = ReplicaMemo(), PodFacts("podPending")
    pod = {"metadata": {"name": "pt-worker-0"}}
    memo.observed(worker(0), (pod, (), "pytorch", True, False, None, True), facts)
    assert not memo.pods_observed_in(("rules", "templates"))  # the first pass
    assert memo.pods_observed_in(("rules", "templates"))
    assert memo.observation_of(worker(0), pod, True) is facts
    assert memo.observation_of(worker(0), copy.deepcopy(pod), True) is None
    assert memo.observation_of(worker(0), pod, False) is None
    assert memo.observation_of(worker(1), pod, True) is None
    assert not memo.pods_observed_in(("other rules", "templates"))
    assert not memo.pods_observed_in(None) and not memo.pods_observed_in(None)
