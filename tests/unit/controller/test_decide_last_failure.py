"""The job's last failure (`_note_ends`): the replica whose machine moved on a failure, in
words that say how it failed (a pod lost with its node says so), with the failure rule's
cause; an observation the replica's machine did not act on is not one."""

from __future__ import annotations

from tests.scenarios.world import World, exited, lost, machine_job, running, worker


def started(policy: str) -> World:
    world = World(machine_job(workers=2, policy=policy, run_policy={"cleanPodPolicy": "All"}))
    world.reconcile()
    world.put(worker(0), running())
    world.put(worker(1), running())
    assert world.reconcile().phase == "Running"
    return world


def test_a_pod_lost_with_its_node_is_the_last_failure_in_those_words() -> None:
    world = started("Never")
    world.put(worker(1), lost())
    failed = world.reconcile()
    assert failed.decision.record.last_failure == "Worker-1 (lost with its node)"
    assert failed.decision.record.last_failure_cause == ""


def test_a_failed_pod_is_the_last_failure_with_its_exit_code() -> None:
    world = started("Never")
    world.put(worker(0), exited(3))
    failed = world.reconcile()
    assert failed.phase == "Failing"
    assert failed.decision.record.last_failure == "Worker-0 (exit code 3)"


def test_a_failure_rules_cause_is_kept_with_the_last_failure() -> None:
    job = machine_job(workers=1, policy="Never")
    job["spec"]["failureRules"] = [
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]
    world = World(job)
    world.reconcile()
    world.put(worker(0), running())
    world.reconcile()
    world.put(worker(0), exited(42))
    failed = world.reconcile()
    assert failed.decision.record.last_failure == "Worker-0 (exit code 42)"
    assert failed.decision.record.last_failure_cause == (
        "Container main for pod team/train-worker-0 failed with exit code 42 matching FailJob "
        "rule at index 0")


def test_a_failed_pod_its_replica_already_acted_on_is_not_the_last_failure_again() -> None:
    # Worker-1's pod failed first and is being recreated (its failed pod still shows);
    # Worker-0's failure is the later one, and stays the last while Worker-1 waits.
    world = started("ExitCode")
    world.put(worker(1), exited(137))
    first = world.reconcile()
    assert first.replica_states["Worker-1"] == "Restarting"
    assert first.decision.record.last_failure == "Worker-1 (exit code 137)"
    world.put(worker(0), exited(137))
    later = world.reconcile()
    assert later.replica_states == {"Worker-0": "Restarting", "Worker-1": "Restarting"}
    assert later.decision.record.last_failure == "Worker-0 (exit code 137)"
