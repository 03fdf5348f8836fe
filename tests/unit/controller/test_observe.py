"""What the engine sees in a pod and a job: outcomes from the main container, not the phase alone.

Field notes, story 3: a pod that says Running while its container has exited is
not running, and a pod on a node that is gone (or being deleted) is not either.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from engine.controller.reconcile.jobspec import JobSpecView
from engine.controller.reconcile.observe import (
    MISSING,
    deadline_of,
    job_observations,
    main_container_status,
    message_gist,
    observe_pod,
)

READY_NODE = "node-a"
START = "2027-01-15T08:00:00Z"
T0 = datetime(2027, 1, 15, 8, 0, 0, tzinfo=UTC)


def running_state() -> dict[str, Any]:
    return {"running": {"startedAt": START}}


def waiting_state(reason: str = "ContainerCreating") -> dict[str, Any]:
    return {"waiting": {"reason": reason}}


def terminated_state(code: int, reason: str = "") -> dict[str, Any]:
    return {"terminated": {"exitCode": code, "reason": reason}}


def pod(
    phase: str | None = "Running",
    *,
    states: dict[str, dict[str, Any]] | None = None,
    containers: tuple[str, ...] = ("pytorch",),
    node: str | None = READY_NODE,
    deleting: bool = False,
    restart_count: int = 0,
) -> dict[str, Any]:
    """A pod with one container status per entry of `states` (name -> state), in that order."""
    metadata: dict[str, Any] = {"name": "mnist-worker-0", "namespace": "team"}
    if deleting:
        metadata["deletionTimestamp"] = START
    spec: dict[str, Any] = {"containers": [{"name": name, "image": "x"} for name in containers]}
    if node is not None:
        spec["nodeName"] = node
    status: dict[str, Any] = {}
    if phase is not None:
        status["phase"] = phase
    if states is not None:
        status["containerStatuses"] = [
            {"name": name, "state": state, "restartCount": restart_count}
            for name, state in states.items()
        ]
    return {"metadata": metadata, "spec": spec, "status": status}


def observe(obj: dict[str, Any] | None, main: str | None = "pytorch") -> Any:
    return observe_pod(obj, main_container=main, node_ready=lambda name: name == READY_NODE)


def observation(obj: dict[str, Any] | None, main: str | None = "pytorch") -> str:
    return str(observe(obj, main).observation)


# One observation per pod -------------------------------------------------------------------


def test_no_pod_is_missing() -> None:
    facts = observe(None)
    assert facts == MISSING
    assert facts.observation == "podMissing"
    assert facts.exit_code == -1
    assert not facts.terminal


@pytest.mark.parametrize(
    "obj",
    [
        pod("Pending"),
        pod("Pending", node=None),
        pod("Pending", states={"pytorch": waiting_state()}),
        pod("Running", states={"pytorch": waiting_state("CrashLoopBackOff")}),
        pod(None),
    ],
    ids=["no-status", "unscheduled", "container-creating", "waiting-in-running-pod", "no-phase"],
)
def test_a_pod_whose_main_container_has_not_started_is_pending(obj: dict[str, Any]) -> None:
    facts = observe(obj)
    assert facts.observation == "podPending"
    assert not facts.terminal


def test_a_pod_whose_main_container_runs_is_running() -> None:
    facts = observe(pod("Running", states={"pytorch": running_state()}, restart_count=2))
    assert facts.observation == "podRunning"
    assert facts.exit_code == -1
    assert facts.pod == {
        "name": "mnist-worker-0",
        "phase": "Running",
        "reason": "",
        "exitCode": -1,
        "terminationReason": "",
        "restartCount": 2,
        "ready": False,
    }
    assert not facts.ready


@pytest.mark.parametrize(
    ("phase", "state", "ready_status", "ready"),
    [
        ("Running", running_state(), "True", True),
        ("Running", running_state(), "False", False),
        ("Running", terminated_state(1), "True", False),
    ],
    ids=["running-and-ready", "running-not-ready", "exited-with-stale-ready"],
)
def test_a_pod_is_ready_only_while_it_runs_with_its_ready_condition_true(
    phase: str, state: dict[str, Any], ready_status: str, ready: bool
) -> None:
    obj = pod(phase, states={"pytorch": state})
    obj["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "True"},
        {"type": "Ready", "status": ready_status},
    ]
    facts = observe(obj)
    assert facts.pod["ready"] == (ready_status == "True")
    assert facts.ready is ready


@pytest.mark.parametrize(
    "obj",
    [
        pod("Succeeded", states={"pytorch": terminated_state(0, "Completed")}),
        pod("Running", states={"pytorch": terminated_state(0, "Completed")}),
        pod("Succeeded"),
        pod("Succeeded", states={"pytorch": terminated_state(0)}, deleting=True),
        pod("Running", states={"pytorch": terminated_state(0)}, deleting=True),
        pod("Running", states={"pytorch": terminated_state(0)}, node="node-gone"),
    ],
    ids=["phase-succeeded", "exit-0-phase-still-running", "phase-only", "while-deleting",
         "exit-0-while-deleting", "exit-0-on-lost-node"],
)
def test_an_exit_code_0_or_phase_succeeded_is_success(obj: dict[str, Any]) -> None:
    """A recorded success stays a success even when the pod is deleted or its node is gone."""
    facts = observe(obj)
    assert facts.observation == "podSucceeded"
    assert facts.terminal


def test_a_container_that_exited_while_the_pod_still_says_running_has_failed() -> None:
    """Field notes, story 3: trust the main container's exit code, not the pod phase."""
    facts = observe(pod("Running", states={"pytorch": terminated_state(137, "OOMKilled")}))
    assert facts.observation == "podFailed"
    assert facts.exit_code == 137
    assert facts.reason == "OOMKilled"
    assert facts.pod["exitCode"] == 137
    assert facts.pod["terminationReason"] == "OOMKilled"
    assert facts.pod["phase"] == "Running"
    assert facts.terminal


def test_phase_failed_without_a_container_status_has_failed_with_no_exit_code() -> None:
    obj = pod("Failed")
    obj["status"]["reason"] = "Evicted"
    facts = observe(obj)
    assert facts.observation == "podFailed"
    assert facts.exit_code == -1
    assert facts.pod["reason"] == "Evicted"


@pytest.mark.parametrize(
    "obj",
    [
        pod("Running", states={"pytorch": running_state()}, deleting=True),
        pod("Running", states={"pytorch": terminated_state(143, "Error")}, deleting=True),
        pod("Failed", states={"pytorch": terminated_state(137)}, deleting=True),
        pod("Pending", deleting=True),
    ],
    ids=["running", "sigterm-exit", "failed", "pending"],
)
def test_a_pod_being_deleted_without_success_is_gone(obj: dict[str, Any]) -> None:
    facts = observe(obj)
    assert facts.observation == "podGone"
    assert facts.terminal


def observe_when_ended(obj: dict[str, Any]) -> Any:
    """As the engine observes a pod where deleted pods are judged once they ended."""
    return observe_pod(obj, main_container="pytorch", node_ready=lambda name: name == READY_NODE,
                       judge_deleted_when_ended=True)


@pytest.mark.parametrize(
    ("obj", "seen"),
    [
        (pod("Running", states={"pytorch": running_state()}, deleting=True), "podRunning"),
        (pod("Pending", deleting=True), "podPending"),
        (pod("Running", states={"pytorch": running_state()}, node="node-gone", deleting=True),
         "podLost"),
    ],
    ids=["running", "pending", "lost"],
)
def test_judged_once_ended_a_pod_being_deleted_is_what_it_was_until_it_ends(
    obj: dict[str, Any], seen: str
) -> None:
    facts = observe_when_ended(obj)
    assert (facts.observation, facts.deleting, facts.terminating) == (seen, True, True)
    assert facts.going
    assert facts.terminal == (seen == "podLost")


@pytest.mark.parametrize(
    ("obj", "seen"),
    [
        (pod("Failed", states={"pytorch": terminated_state(143, "Error")}, deleting=True),
         "podFailed"),
        (pod("Running", states={"pytorch": terminated_state(143, "Error")}, deleting=True),
         "podFailed"),
        (pod("Succeeded", states={"pytorch": terminated_state(0)}, deleting=True),
         "podSucceeded"),
    ],
    ids=["failed", "exited-phase-not-written-yet", "succeeded"],
)
def test_judged_once_ended_a_deleted_pod_that_ended_is_judged_by_its_end(
    obj: dict[str, Any], seen: str
) -> None:
    facts = observe_when_ended(obj)
    assert facts.observation == seen
    assert facts.terminal


def test_a_deleted_pod_in_a_terminal_phase_is_not_terminating_any_more() -> None:
    ended = pod("Failed", states={"pytorch": terminated_state(143, "Error")}, deleting=True)
    assert not observe(ended).terminating
    assert observe(pod("Running", states={"pytorch": running_state()}, deleting=True)).terminating


@pytest.mark.parametrize(
    "obj",
    [
        pod("Unknown", states={"pytorch": running_state()}),
        pod("Unknown"),
        pod("Running", states={"pytorch": running_state()}, node="node-gone"),
        pod("Pending", node="node-gone"),
    ],
    ids=["phase-unknown", "phase-unknown-no-status", "node-not-ready", "pending-on-lost-node"],
)
def test_a_pod_on_a_node_that_is_gone_is_lost(obj: dict[str, Any]) -> None:
    facts = observe(obj)
    assert facts.observation == "podLost"
    assert facts.terminal


def test_a_failure_on_a_lost_node_is_still_a_failure() -> None:
    """An exit code that was recorded is an outcome; losing the node afterwards changes nothing."""
    obj = pod("Running", states={"pytorch": terminated_state(1)}, node="node-gone")
    assert observation(obj) == "podFailed"


def test_node_readiness_is_asked_for_the_pods_node() -> None:
    asked: list[str] = []

    def ready(name: str) -> bool:
        asked.append(name)
        return True

    obj = pod("Running", states={"pytorch": running_state()}, node="node-b")
    assert observe_pod(obj, main_container="pytorch", node_ready=ready).observation == "podRunning"
    assert asked == ["node-b"]


# The main container -------------------------------------------------------------------------


def test_the_named_main_container_decides_not_a_sidecar_listed_first() -> None:
    states = {"istio-proxy": terminated_state(0), "pytorch": running_state()}
    obj = pod("Running", states=states, containers=("istio-proxy", "pytorch"))
    assert observation(obj) == "podRunning"


def test_a_sidecar_still_running_does_not_hide_the_main_containers_failure() -> None:
    states = {"pytorch": terminated_state(1, "Error"), "istio-proxy": running_state()}
    obj = pod("Running", states=states, containers=("pytorch", "istio-proxy"))
    facts = observe(obj)
    assert (facts.observation, facts.exit_code) == ("podFailed", 1)


def test_without_a_named_main_container_the_templates_first_container_decides() -> None:
    """The first container of the spec, not the first status (the kubelet sorts statuses)."""
    states = {"a-sidecar": running_state(), "trainer": terminated_state(2)}
    obj = pod("Running", states=states, containers=("trainer", "a-sidecar"))
    facts = observe(obj, main=None)
    assert (facts.observation, facts.exit_code) == ("podFailed", 2)


def test_a_main_container_name_the_pod_lacks_falls_back_to_the_first_container() -> None:
    states = {"trainer": terminated_state(3)}
    obj = pod("Running", states=states, containers=("trainer",))
    assert observe(obj, main="pytorch").exit_code == 3


def test_a_main_container_without_a_status_yet_gives_no_status() -> None:
    obj = pod("Pending", states={"sidecar": running_state()}, containers=("pytorch", "sidecar"))
    assert main_container_status(obj, "pytorch") == {}
    assert observation(obj) == "podPending"


# Containers the kubelet restarts in place ------------------------------------------------------


def in_place(
    policy: str,
    state: dict[str, Any],
    *,
    last: dict[str, Any] | None = None,
    restart_count: int = 0,
    phase: str = "Running",
) -> dict[str, Any]:
    """A pod with `restartPolicy: policy` whose main container is in `state`."""
    obj = pod(phase, states={"pytorch": state}, restart_count=restart_count)
    obj["metadata"]["uid"] = "uid-1"
    obj["spec"]["restartPolicy"] = policy
    if last is not None:
        obj["status"]["containerStatuses"][0]["lastState"] = last
    return obj


@pytest.mark.parametrize(("policy", "code"), [("OnFailure", 1), ("OnFailure", 137),
                                                ("Always", 0), ("Always", 2)])
def test_an_end_the_kubelet_restarts_is_not_an_outcome_but_one_more_end(
    policy: str, code: int
) -> None:
    facts = observe(in_place(policy, terminated_state(code, "Error")))
    assert (facts.observation, facts.ends, facts.exit_code, facts.uid) == (
        "podPending", 1, code, "uid-1")


def test_an_on_failure_container_that_exits_0_has_succeeded() -> None:
    facts = observe(in_place("OnFailure", terminated_state(0, "Completed")))
    assert (facts.observation, facts.ends) == ("podSucceeded", 0)


def test_a_container_waiting_in_crash_loop_back_off_counts_the_end_it_waits_after() -> None:
    facts = observe(in_place("OnFailure", waiting_state("CrashLoopBackOff"),
                             last=terminated_state(3, "Error"), restart_count=2))
    assert (facts.observation, facts.ends, facts.exit_code, facts.reason) == (
        "podPending", 3, 3, "Error")


def test_a_container_running_again_has_ended_as_often_as_it_was_restarted() -> None:
    facts = observe(in_place("OnFailure", running_state(), last=terminated_state(2),
                             restart_count=2))
    assert (facts.observation, facts.ends, facts.exit_code) == ("podRunning", 2, 2)


def test_a_first_start_is_no_end() -> None:
    facts = observe(in_place("OnFailure", waiting_state()))
    assert (facts.observation, facts.ends, facts.exit_code) == ("podPending", 0, -1)


def test_a_pod_that_failed_as_a_whole_is_failed_whatever_its_restart_policy() -> None:
    facts = observe(in_place("OnFailure", terminated_state(1), phase="Failed"))
    assert (facts.observation, facts.ends) == ("podFailed", 0)


def test_a_never_pod_is_not_restarted_in_place() -> None:
    facts = observe(in_place("Never", terminated_state(1)))
    assert (facts.observation, facts.ends) == ("podFailed", 0)


def test_the_termination_message_is_kept_and_its_last_line_is_the_gist() -> None:
    ended = {"terminated": {"exitCode": 1, "reason": "Error",
                            "message": "Traceback (most recent call last):\n  ...\n"
                                       "ValueError: bad shard\n\n"}}
    facts = observe(in_place("Never", ended))
    assert facts.message.startswith("Traceback")
    assert facts.termination == "exit code 1, Error: ValueError: bad shard"


@pytest.mark.parametrize(("message", "gist"), [
    ("", ""),
    ("\n  \n", ""),
    ("one line", "one line"),
    ("first\nlast  ", "last"),
    ("x" * 500, "..." + "x" * 197),
])
def test_a_messages_gist_is_its_last_line_at_most_200_characters(message: str, gist: str) -> None:
    assert message_gist(message) == gist


def test_no_exit_code_is_said_as_such() -> None:
    assert MISSING.termination == "no exit code"


# Job observations ---------------------------------------------------------------------------


def job(*, deleting: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "mnist", "namespace": "team", "uid": "u"}
    if deleting:
        metadata["deletionTimestamp"] = START
    return {"metadata": metadata, "spec": {}}


def spec(error: str = "", **run_policy: Any) -> JobSpecView:
    return JobSpecView((), {"suspend": False, **run_policy}, error)


def observations(
    job_obj: dict[str, Any] | None = None,
    view: JobSpecView | None = None,
    *,
    start_time: str | None = START,
    now: datetime = T0,
    terminating_pods: int = 0,
) -> frozenset[str]:
    return job_observations(
        job_obj or job(), view or spec(), start_time=start_time, now=now,
        terminating_pods=terminating_pods,
    )


def test_a_plain_job_is_resumed_and_settled() -> None:
    assert observations() == {"resumed", "settled"}


def test_suspend_gives_suspended_instead_of_resumed() -> None:
    assert observations(view=spec(suspend=True)) == {"suspended", "settled"}


def test_a_job_being_deleted_is_deleting() -> None:
    assert "deleting" in observations(job(deleting=True))
    assert "deleting" not in observations(job())


def test_an_invalid_spec_is_invalid() -> None:
    assert "invalid" in observations(view=spec("Master must have exactly 1 replica"))


def test_terminating_pods_mean_not_settled() -> None:
    assert "settled" not in observations(terminating_pods=1)


@pytest.mark.parametrize(
    ("elapsed_s", "exceeded"), [(0, False), (59, False), (60, True), (3600, True)]
)
def test_the_active_deadline_counts_from_the_start_time(elapsed_s: int, exceeded: bool) -> None:
    found = observations(view=spec(activeDeadlineSeconds=60), now=T0 + timedelta(seconds=elapsed_s))
    assert ("deadlineExceeded" in found) is exceeded


def test_no_deadline_without_a_start_time_or_a_limit() -> None:
    later = T0 + timedelta(days=1)
    assert "deadlineExceeded" not in observations(view=spec(activeDeadlineSeconds=60),
                                                  start_time=None, now=later)
    assert "deadlineExceeded" not in observations(now=later)


def test_a_suspended_job_does_not_exceed_its_deadline() -> None:
    later = T0 + timedelta(hours=1)
    found = observations(view=spec(activeDeadlineSeconds=60, suspend=True), now=later)
    assert "deadlineExceeded" not in found


def test_deadline_of_is_start_plus_active_deadline() -> None:
    assert deadline_of(spec(activeDeadlineSeconds=90), START) == T0 + timedelta(seconds=90)
    assert deadline_of(spec(), START) is None
    assert deadline_of(spec(activeDeadlineSeconds=90), None) is None
