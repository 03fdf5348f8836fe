"""batch/v1 Job limits at their edges, as step tables through machines/batch-job.yaml.

The job controller counts an OnFailure Job's container restarts in place against
backoffLimit and fails it once they reach the limit (a limit of 0 fails at the first
end), while a Never Job fails once its failed pods go past the limit. With
backoffLimitPerIndex an index is not retried after that many failures, and more failed
indexes than maxFailedIndexes fail the Job at once; a Job whose every index has ended,
some failed, fails with FailedIndexes.
"""

from __future__ import annotations

from typing import Any

from tests.scenarios.world import (
    ReplicaId,
    Step,
    World,
    ended_in_place,
    exited,
    play,
    running,
    running_again,
)


def job(index: int) -> ReplicaId:
    """The pod of completion index `index` (index 0 for a Job that is not Indexed)."""
    return ReplicaId("Job", index)


def batch_job(policy: str, **spec: Any) -> dict[str, Any]:
    """A batch/v1 Job whose pods restart as `policy` says."""
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "pi", "namespace": "team", "uid": "uid-pi", "generation": 1},
        "spec": {**spec, "template": {"spec": {
            "restartPolicy": policy, "containers": [{"name": "c", "image": "busybox"}]}}},
    }


def test_onfailure_with_backoff_limit_0_fails_at_the_first_end() -> None:
    play(World(batch_job("OnFailure", backoffLimit=0)), [
        Step("submitted", phase="Active", created=["Job-0"]),
        Step("the pod runs: no restart yet, nothing to count", {job(0): running()},
             phase="Active", restarts=0),
        Step("the container exits 1 (the kubelet would restart it in place): limit 0 spent",
             {job(0): ended_in_place(1)}, phase="Failing", restarts=1,
             job_actions=["cleanupPods"], events=["BackoffLimitExceeded"]),
    ])


def test_onfailure_with_backoff_limit_1_fails_at_the_first_restart() -> None:
    play(World(batch_job("OnFailure", backoffLimit=1)), [
        Step("submitted", phase="Active", created=["Job-0"]),
        Step("the pod runs", {job(0): running()}, phase="Active", restarts=0),
        Step("the container exits 1: one restart reaches the limit of 1",
             {job(0): ended_in_place(1)}, phase="Failing", restarts=1,
             job_actions=["cleanupPods"], events=["BackoffLimitExceeded"]),
    ])


def test_onfailure_with_backoff_limit_2_restarts_once_in_place_then_fails() -> None:
    play(World(batch_job("OnFailure", backoffLimit=2)), [
        Step("submitted", phase="Active", created=["Job-0"]),
        Step("the pod runs", {job(0): running()}, phase="Active"),
        Step("the container exits 1: one restart of 2", {job(0): ended_in_place(1)},
             phase="Active", restarts=1),
        Step("it runs again", {job(0): running_again(1)}, phase="Active", restarts=1),
        Step("it exits 1 again: two restarts of 2", {job(0): ended_in_place(1, 1)},
             phase="Failing", restarts=2, job_actions=["cleanupPods"],
             events=["BackoffLimitExceeded"]),
    ])


def test_never_with_backoff_limit_1_replaces_the_first_failed_pod_and_fails_at_the_second(
) -> None:
    play(World(batch_job("Never", backoffLimit=1)), [
        Step("submitted", phase="Active", created=["Job-0"]),
        Step("the pod runs", {job(0): running()}, phase="Active"),
        Step("it exits 1: one failure, within the limit of 1", {job(0): exited(1)},
             phase="Active", restarts=1, deleted=["Job-0"]),
        Step("the failed pod is gone: a new one after the back-off", {job(0): None}, wait=10,
             phase="Active",
             created=["Job-0"]),
        Step("the new pod exits 1: two failures, past the limit", {job(0): exited(1)},
             phase="Failing", restarts=2, deleted=["Job-0"], job_actions=["cleanupPods"],
             events=["BackoffLimitExceeded"]),
    ])


def indexed(**spec: Any) -> dict[str, Any]:
    return batch_job("Never", completionMode="Indexed", **spec)


def test_one_failed_index_of_max_failed_indexes_1_goes_on_and_the_second_fails_the_job(
) -> None:
    play(World(indexed(completions=3, parallelism=3, backoffLimitPerIndex=0,
                       maxFailedIndexes=1)), [
        Step("submitted", phase="Active", created=["Job-0", "Job-1", "Job-2"]),
        Step("every index runs", {job(0): running(), job(1): running(), job(2): running()},
             phase="Active"),
        Step("index 0 exits 1: no retry (backoffLimitPerIndex 0), 1 failed index of 1",
             {job(0): exited(1)}, phase="Active",
             states={"Job-0": "FailedIndex", "Job-1": "Running", "Job-2": "Running"}),
        Step("index 1 exits 1: 2 failed indexes, more than 1 -> the Job fails at once",
             {job(1): exited(1)}, phase="Failing", job_actions=["cleanupPods"],
             states={"Job-1": "FailedIndex", "Job-2": "Running"},
             events=["MaxFailedIndexesExceeded"]),
    ])


def test_an_index_is_retried_backoff_limit_per_index_times_and_the_job_fails_once_all_ended(
) -> None:
    play(World(indexed(completions=2, parallelism=2, backoffLimitPerIndex=1)), [
        Step("submitted", phase="Active", created=["Job-0", "Job-1"]),
        Step("both indexes run", {job(0): running(), job(1): running()}, phase="Active"),
        Step("index 0 exits 1: its first failure, within backoffLimitPerIndex 1",
             {job(0): exited(1)}, phase="Active", deleted=["Job-0"],
             states={"Job-0": "Restarting"}),
        Step("its pod is gone: a new one after the back-off", {job(0): None}, wait=20,
             phase="Active", created=["Job-0"]),
        Step("index 0 runs again", {job(0): running()}, phase="Active"),
        Step("index 0 exits 1 again: spent, not retried; index 1 still runs",
             {job(0): exited(1)}, phase="Active",
             states={"Job-0": "FailedIndex", "Job-1": "Running"}),
        Step("index 1 exits 0: every index ended, one failed -> FailedIndexes",
             {job(1): exited(0)}, phase="Failed", job_actions=["cleanupPods"],
             states={"Job-0": "FailedIndex", "Job-1": "Succeeded"},
             events=["FailedIndexes"]),
    ])


def test_an_index_within_its_limit_gets_a_new_pod_after_a_suspension() -> None:
    world = World(batch_job("OnFailure", completionMode="Indexed", completions=1,
                            parallelism=1, backoffLimitPerIndex=1))

    def suspend(value: bool) -> None:
        world.job["spec"]["suspend"] = value
        world.job["metadata"]["generation"] += 1

    steps = [
        Step("submitted", phase="Active", created=["Job-0"]),
        Step("index 0 runs", {job(0): running()}, phase="Active"),
        Step("it exits 1 and restarts in place: 1 restart, backoffLimitPerIndex 1",
             {job(0): ended_in_place(1)}, phase="Active", restarts=1,
             states={"Job-0": "RestartingInPlace"}),
        Step("it runs again", {job(0): running_again(1)}, phase="Active", restarts=1),
    ]
    play(world, steps)
    suspend(True)
    play(world, [Step("suspended", phase="Suspended", job_actions=["cleanupPods"],
                      states={"Job-0": "Suspended"}),
                 Step("its pod is gone", {job(0): None}, phase="Suspended")])
    suspend(False)
    play(world, [Step("resumed: 1 restart is not past the limit of 1, so a new pod",
                      phase="Active", created=["Job-0"], restarts=1,
                      states={"Job-0": "Pending"})])


def test_a_work_queue_completes_once_one_pod_succeeded_and_none_is_left_running() -> None:
    """No completions: the job controller's `succeeded > 0 && active == 0`, so one success
    is enough even when the other pod failed (the failed pod is deleted, not replaced:
    docs/batch-jobs.md)."""
    play(World(batch_job("Never", parallelism=2)), [
        Step("submitted", phase="Active", created=["Job-0", "Job-1"]),
        Step("both run", {job(0): running(), job(1): running()}, phase="Active"),
        Step("one succeeds, the other still runs", {job(0): exited(0)}, phase="Active"),
        Step("the other fails: one success, none running -> complete",
             {job(1): exited(1)}, phase="Succeeding", deleted=["Job-1"],
             job_actions=["cleanupPods"]),
    ])
