"""Restarts in place: OnFailure and Always pods are restarted by the kubelet in the same pod.

The engine counts each end of the main container once, from restartCount and
lastState (as training-operator v1 sums restartCount), posts one Event per end
naming the replica, the exit code, the reason and the termination message, and
never deletes or recreates the pod for it.
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


def test_a_crash_loop_is_counted_once_per_end_and_said_once_per_end() -> None:
    world = World(pytorch_job(workers=1, policy="OnFailure"))
    results = play(world, [
        *STARTED,
        Step("worker-0 exits 2", {worker(0): ended_in_place(2, message="ValueError: boom")},
             phase="Running", restarts=1, states={"Worker-0": "RestartingInPlace"},
             conditions={"Restarting": "True"}, events=["PodRestarted"]),
        Step("the kubelet restarted it at once", {worker(0): running_again(1, last_code=2)},
             phase="Running", restarts=1, states={"Worker-0": "Running"},
             conditions={"Restarting": "False"}, events=[]),
        Step("it exits 2 again and waits in CrashLoopBackOff",
             {worker(0): backing_off(2, 1)}, phase="Running", restarts=2,
             states={"Worker-0": "RestartingInPlace"}, events=["PodRestarted"]),
        Step("nothing new while it waits", phase="Running", restarts=2, events=[]),
        Step("still waiting, looked at again", {worker(0): backing_off(2, 1)},
             phase="Running", restarts=2, events=[]),
    ])
    said = results[2].decision.actions[0].action.args["message"]
    assert said == ("Worker-0 ended (exit code 2, Error: ValueError: boom); the kubelet "
                    "restarts it in place (restart policy OnFailure).")
    assert results[2].planned("deletePod") == [] and results[2].planned("createPod") == []
    assert world.pods[worker(0)]["spec"]["restartPolicy"] == "OnFailure"


def test_ends_missed_between_two_looks_are_all_counted_and_said_once() -> None:
    """The container ran and crashed twice more before the engine looked again."""
    world = World(pytorch_job(workers=1, policy="OnFailure"))
    results = play(world, [
        *STARTED,
        Step("worker-0 exits 1", {worker(0): ended_in_place(1)}, phase="Running",
             restarts=1, states={"Worker-0": "RestartingInPlace"}, events=["PodRestarted"]),
        Step("two more ends by the next look", {worker(0): backing_off(1, 2)},
             phase="Running", restarts=3, states={"Worker-0": "RestartingInPlace"},
             events=["PodRestarted"]),
    ])
    said = results[-1].decision.actions[0].action.args["message"]
    assert "2 restarts seen at once" in said


def test_restarts_in_place_past_the_backoff_limit_fail_the_job_naming_the_last_failure() -> None:
    world = World(pytorch_job(workers=1, policy="OnFailure",
                              run_policy={"backoffLimit": 1}))
    results = play(world, [
        *STARTED,
        Step("worker-0 exits 3", {worker(0): ended_in_place(3)}, phase="Running",
             restarts=1),
        Step("and again: two restarts pass a limit of one",
             {worker(0): backing_off(3, 1, message="CUDA error: out of memory")},
             phase="Failed", restarts=2, job_actions=["cleanupPods"],
             conditions={"Failed": "True", "Running": "False", "Restarting": "False"},
             events=["PodRestarted", "BackoffLimitExceeded"]),
    ])
    failed = results[-1].condition("Failed")
    assert failed is not None and failed["reason"] == "BackoffLimitExceeded"
    assert failed["message"].endswith(
        "Last failure: Worker-0 (exit code 3, Error: CUDA error: out of memory).")


def test_a_replica_restarted_in_place_can_still_succeed() -> None:
    world = World(pytorch_job(workers=1, policy="OnFailure"))
    play(world, [
        *STARTED,
        Step("worker-0 exits 1", {worker(0): ended_in_place(1)}, phase="Running",
             restarts=1, states={"Worker-0": "RestartingInPlace"}),
        Step("it runs again and exits 0; the pod succeeds", {worker(0): exited(0)},
             phase="Running", restarts=1, states={"Worker-0": "Succeeded"}),
        Step("the master succeeds", {MASTER: exited(0)}, phase="Succeeded", restarts=1,
             job_actions=["cleanupPods"]),
    ])


def test_always_restarts_in_place_even_after_exit_code_0() -> None:
    world = World(pytorch_job(workers=1, policy="Always"))
    play(world, [
        *STARTED,
        Step("worker-0 exits 0", {worker(0): ended_in_place(0, reason="Completed")},
             phase="Running", restarts=1, states={"Worker-0": "RestartingInPlace"},
             events=["PodRestarted"]),
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
             phase="Running", restarts=1, events=["PodRestarted"]),
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
        Step("worker-0 is stopped (143)", {worker(0): ended_in_place(143)}, phase="Running",
             restarts=0, states={"Worker-0": "RestartingInPlace"},
             events=["PodFailureIgnored"]),
    ])


def test_a_new_pod_of_the_same_replica_counts_its_ends_from_zero() -> None:
    """After the pod is deleted and created again, restartCount starts over."""
    world = World(pytorch_job(workers=1, policy="OnFailure"))
    play(world, [
        *STARTED,
        Step("worker-0 exits 1 twice", {worker(0): backing_off(1, 1)}, phase="Running",
             restarts=2),
        Step("someone deletes its pod", {worker(0): None}, phase="Running",
             created=["Worker-0"], restarts=2, states={"Worker-0": "Pending"}),
        Step("the new pod runs", {worker(0): running()}, phase="Running", restarts=2),
        Step("the new pod's container exits 1", {worker(0): ended_in_place(1)},
             phase="Running", restarts=3, events=["PodRestarted"]),
    ])


def test_a_pod_replaced_between_two_looks_counts_its_own_ends() -> None:
    """The engine never saw the old pod missing: the new pod (another uid) starts from 0."""
    world = World(pytorch_job(workers=1, policy="OnFailure"))
    play(world, [
        *STARTED,
        Step("worker-0 exits 1 three times", {worker(0): backing_off(1, 2)}, phase="Running",
             restarts=3),
    ])
    world.put(worker(0), None)
    play(world, [
        Step("a new pod of worker-0 exits 1 once", {worker(0): ended_in_place(1)},
             phase="Running", restarts=4, events=["PodRestarted"]),
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
             phase="Running", restarts=1, events=["PodRestarted", "Succeeded"]),
        Step("seen again: counted once", phase="Running", restarts=1, events=[]),
    ])
    assert results[2].decision.record.replica_states[worker(0)] == "Succeeded"
