"""Restarts in place: OnFailure and Always pods are restarted by the kubelet in the same pod.

The engine counts each end of the main container once, from restartCount and
lastState (as training-operator v1 sums restartCount), says each newly seen end
once as Kubeflow does (a Normal `ExitedWithCode` naming the pod and the exit code,
then a Warning `PyTorchJobRestarting`), puts the job in Restarting until the
container runs again, and never deletes or recreates the pod for it.
"""

from __future__ import annotations

from tests.scenarios.world import (
    MASTER,
    Step,
    World,
    backing_off,
    ended_in_place,
    exited,
    play,
    pytorch_job,
    running,
    running_again,
    worker,
)

STARTED = [
    Step("submitted", phase="Created", created=["Master-0", "Worker-0"]),
    Step("both run", {MASTER: running(), worker(0): running()}, phase="Running"),
]
RESTART_EVENTS = ["ExitedWithCode", "PyTorchJobRestarting"]


def restart_said(code: int) -> list[tuple[str, str, str]]:
    """The Events of one restart of Worker-0 of job mnist, as Kubeflow posts them."""
    return [
        ("Normal", "ExitedWithCode", f"Pod: team.mnist-worker-0 exited with code {code}"),
        ("Warning", "PyTorchJobRestarting",
         "job mnist is restarting because Worker replica(s) failed."),
    ]


def test_a_crash_loop_is_counted_once_per_end_and_said_once_per_end() -> None:
    world = World(pytorch_job(workers=1, policy="OnFailure"))
    results = play(world, [
        *STARTED,
        Step("worker-0 exits 2", {worker(0): ended_in_place(2, message="ValueError: boom")},
             phase="Restarting", restarts=1, states={"Worker-0": "RestartingInPlace"},
             conditions={"Restarting": "True", "Running": None}, events=RESTART_EVENTS),
        Step("the kubelet restarted it at once", {worker(0): running_again(1, last_code=2)},
             phase="Running", restarts=1, states={"Worker-0": "Running"},
             conditions={"Restarting": None, "Running": "True"}, events=[]),
        Step("it exits 2 again and waits in CrashLoopBackOff",
             {worker(0): backing_off(2, 1)}, phase="Restarting", restarts=2,
             states={"Worker-0": "RestartingInPlace"}, conditions={"Restarting": "True"},
             events=RESTART_EVENTS),
        Step("nothing new while it waits", phase="Restarting", restarts=2, events=[]),
        Step("still waiting, looked at again", {worker(0): backing_off(2, 1)},
             phase="Restarting", restarts=2, events=[]),
    ])
    assert results[2].posted == restart_said(2)
    assert results[2].notices == []  # the replica's and the job's transitions are silent
    assert results[2].job_path == [("Running", "Restarting", "PyTorchJobRestarting")]
    assert results[3].job_path == [("Restarting", "Running", "PyTorchJobRunning")]
    assert results[4].posted == restart_said(2)
    assert results[2].planned("deletePod") == [] and results[2].planned("createPod") == []
    assert world.pods[worker(0)]["spec"]["restartPolicy"] == "OnFailure"


def test_ends_missed_between_two_looks_are_all_counted_and_said_once() -> None:
    """The container ran and crashed twice more before the engine looked again."""
    world = World(pytorch_job(workers=1, policy="OnFailure"))
    results = play(world, [
        *STARTED,
        Step("worker-0 exits 1", {worker(0): ended_in_place(1)}, phase="Restarting",
             restarts=1, states={"Worker-0": "RestartingInPlace"}, events=RESTART_EVENTS),
        Step("two more ends by the next look: both counted, said once",
             {worker(0): backing_off(1, 2)},
             phase="Restarting", restarts=3, states={"Worker-0": "RestartingInPlace"},
             events=RESTART_EVENTS),
    ])
    assert results[-1].posted == restart_said(1)


def test_restarts_in_place_past_the_backoff_limit_fail_the_job_naming_the_last_failure() -> None:
    world = World(pytorch_job(workers=1, policy="OnFailure",
                              run_policy={"backoffLimit": 1}))
    results = play(world, [
        *STARTED,
        Step("worker-0 exits 3", {worker(0): ended_in_place(3)}, phase="Restarting",
             restarts=1),
        Step("and again: two restarts pass a limit of one",
             {worker(0): backing_off(3, 1, message="CUDA error: out of memory")},
             phase="Failed", restarts=2, job_actions=["cleanupPods"],
             conditions={"Failed": "True", "Running": None, "Restarting": "False"},
             events=[*RESTART_EVENTS, "BackoffLimitExceeded"]),
    ])
    failed = results[-1].condition("Failed")
    assert failed is not None and failed["reason"] == "BackoffLimitExceeded"
    assert failed["message"].endswith(
        "Last failure: Worker-0 (exit code 3, Error: CUDA error: out of memory).")


def test_a_replica_restarted_in_place_can_still_succeed() -> None:
    world = World(pytorch_job(workers=1, policy="OnFailure"))
    play(world, [
        *STARTED,
        Step("worker-0 exits 1", {worker(0): ended_in_place(1)}, phase="Restarting",
             restarts=1, states={"Worker-0": "RestartingInPlace"}),
        Step("it runs again and exits 0; the pod succeeds", {worker(0): exited(0)},
             phase="Running", restarts=1, states={"Worker-0": "Succeeded"},
             conditions={"Restarting": None, "Running": "True"},
             events=["ExitedWithCode"]),
        Step("the master succeeds", {MASTER: exited(0)}, phase="Succeeded", restarts=1,
             job_actions=["cleanupPods"]),
    ])


def test_always_restarts_in_place_even_after_exit_code_0() -> None:
    world = World(pytorch_job(workers=1, policy="Always"))
    play(world, [
        *STARTED,
        Step("worker-0 exits 0", {worker(0): ended_in_place(0, reason="Completed")},
             phase="Restarting", restarts=1, states={"Worker-0": "RestartingInPlace"},
             events=RESTART_EVENTS),
    ])


def test_a_fail_job_rule_stops_a_crash_loop_at_the_first_matching_end() -> None:
    job = pytorch_job(workers=1, policy="OnFailure")
    job["spec"]["failureRules"] = [
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}
    ]
    world = World(job)
    results = play(world, [
        *STARTED,
        Step("worker-0 exits 1: restarted in place", {worker(0): ended_in_place(1)},
             phase="Restarting", restarts=1, events=RESTART_EVENTS),
        Step("it exits 42: the rule says FailJob", {worker(0): backing_off(42, 1)},
             phase="Failed", restarts=1, job_actions=["cleanupPods"],
             states={"Worker-0": "FailedByRule"}, events=["FailurePolicy", "FailurePolicy"]),
    ])
    failed = results[-1].condition("Failed")
    assert failed is not None and "Worker-0 (exit code 42, Error)" in failed["message"]


def test_an_ignore_rule_lets_the_kubelet_restart_without_counting() -> None:
    job = pytorch_job(workers=1, policy="OnFailure")
    job["spec"]["failureRules"] = [
        {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [143]}}
    ]
    world = World(job)
    play(world, [
        *STARTED,
        Step("worker-0 is stopped (143)", {worker(0): ended_in_place(143)},
             phase="Restarting", restarts=0, states={"Worker-0": "RestartingInPlace"},
             events=["PodFailureIgnored"]),
    ])


def test_a_new_pod_of_the_same_replica_counts_its_ends_from_zero() -> None:
    """After the pod is deleted and created again, restartCount starts over."""
    world = World(pytorch_job(workers=1, policy="OnFailure"))
    play(world, [
        *STARTED,
        Step("worker-0 exits 1 twice", {worker(0): backing_off(1, 1)}, phase="Restarting",
             restarts=2),
        # Missing -> Restarting (its deletePod finds no pod) -> Pending, in one pass.
        Step("its pod vanishes unseen: said, created again, not counted", {worker(0): None},
             phase="Restarting", created=["Worker-0"], deleted=["Worker-0"], restarts=2,
             states={"Worker-0": "Pending"}, events=["PodMissing"]),
        Step("the new pod runs", {worker(0): running()}, phase="Running", restarts=2),
        Step("the new pod's container exits 1", {worker(0): ended_in_place(1)},
             phase="Restarting", restarts=3, events=RESTART_EVENTS),
    ])


def test_a_pod_replaced_between_two_looks_counts_its_own_ends() -> None:
    """The engine never saw the old pod missing: the new pod (another uid) starts from 0."""
    world = World(pytorch_job(workers=1, policy="OnFailure"))
    play(world, [
        *STARTED,
        Step("worker-0 exits 1 three times", {worker(0): backing_off(1, 2)},
             phase="Restarting", restarts=3),
    ])
    world.put(worker(0), None)
    play(world, [
        Step("a new pod of worker-0 exits 1 once", {worker(0): ended_in_place(1)},
             phase="Restarting", restarts=4, events=RESTART_EVENTS),
    ])


def test_restarts_in_place_of_a_pod_that_finished_unseen_are_still_counted() -> None:
    """The engine was down (or its watch missed the pod) while Worker-0 crashed, was
    restarted in place and then succeeded: restartCount still says it ended once."""
    world = World(pytorch_job(workers=1, policy="OnFailure"))
    finished = exited(0)
    finished["status"]["containerStatuses"][0]["restartCount"] = 1
    finished["status"]["containerStatuses"][0]["lastState"] = {
        "terminated": {"exitCode": 1, "reason": "Error"}}
    results = play(world, [
        *STARTED,
        Step("worker-0 is next seen finished, restarted once", {worker(0): finished},
             phase="Running", restarts=1,
             events=[*RESTART_EVENTS, "ExitedWithCode"]),
        Step("seen again: counted once", phase="Running", restarts=1, events=[]),
    ])
    assert results[2].decision.record.replica_states[worker(0)] == "Succeeded"


def test_a_restart_seen_only_once_the_container_runs_again_names_the_replica_type() -> None:
    """The worker ended and the kubelet restarted it before the engine looked: the replica
    passes through RestartingInPlace within one step, so no replica is restarting when the
    job's Restarting condition is worded; it still names the type that restarted, and no
    expression fails (the machine's message falls back to the types with restarts)."""
    world = World(pytorch_job(workers=1, policy="OnFailure"))
    results = play(world, [
        *STARTED,
        Step("worker-0 ended and runs again", {worker(0): running_again(1, last_code=2)},
             phase="Running", restarts=1, states={"Worker-0": "Running"}),
    ])
    assert results[2].decision.errors == ()
    assert ("Running", "Restarting", "PyTorchJobRestarting") in results[2].job_path
    restarting = [c for c in world.job["status"]["conditions"] if c["type"] == "Restarting"]
    assert [c["message"] for c in restarting] in (
        [], ["job mnist is restarting because Worker replica(s) failed."])
