"""The kubelet's rules: pod phase from container states, conditions and restart policies."""

from __future__ import annotations

from typing import Any

import pytest

from engine.cluster.node.status import phases

T0, T1 = "2024-01-01T00:00:00Z", "2024-01-01T00:00:05Z"


def spec(policy: str = "Always", containers: tuple[str, ...] = ("main",),
         inits: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "restartPolicy": policy,
        "containers": [{"name": n} for n in containers],
        "initContainers": [{"name": n} for n in inits],
    }


def running(name: str) -> dict[str, Any]:
    return {"name": name, "state": phases.running(T0), "ready": True, "started": True}


def exited(name: str, code: int) -> dict[str, Any]:
    return {"name": name, "state": phases.terminated(code, started_at=T0, finished_at=T1)}


def waiting(name: str, reason: str = "ContainerCreating") -> dict[str, Any]:
    return {"name": name, "state": phases.waiting(reason)}


def backing_off(name: str, code: int) -> dict[str, Any]:
    return {"name": name, "state": phases.waiting("CrashLoopBackOff"),
            "lastState": phases.terminated(code, started_at=T0, finished_at=T1)}


@pytest.mark.parametrize(
    ("policy", "statuses", "expected"),
    [
        ("Always", [waiting("main")], "Pending"),
        ("Always", [], "Pending"),
        ("Always", [running("main")], "Running"),
        ("Never", [exited("main", 0)], "Succeeded"),
        ("Never", [exited("main", 1)], "Failed"),
        ("OnFailure", [exited("main", 0)], "Succeeded"),
        ("OnFailure", [backing_off("main", 1)], "Running"),
        ("Always", [exited("main", 0)], "Running"),
        ("Always", [backing_off("main", 0)], "Running"),
    ],
)
def test_phase_of_one_container(policy: str, statuses: list[dict[str, Any]], expected: str) -> None:
    assert phases.pod_phase(spec(policy), [], statuses) == expected


def test_a_pod_with_one_container_still_running_is_running_whatever_the_others_did() -> None:
    two = spec("Never", ("a", "b"))
    assert phases.pod_phase(two, [], [exited("a", 1), running("b")]) == "Running"
    assert phases.pod_phase(two, [], [exited("a", 1), exited("b", 0)]) == "Failed"
    assert phases.pod_phase(two, [], [exited("a", 0), exited("b", 0)]) == "Succeeded"
    assert phases.pod_phase(two, [], [exited("a", 0), waiting("b")]) == "Pending"


def test_init_containers_keep_the_pod_pending_and_a_failed_one_fails_it_under_never() -> None:
    with_init = spec("Never", inits=("setup",))
    assert phases.pod_phase(with_init, [running("setup")], [waiting("main")]) == "Pending"
    assert phases.pod_phase(with_init, [exited("setup", 0)], [running("main")]) == "Running"
    assert phases.pod_phase(with_init, [exited("setup", 2)], [waiting("main")]) == "Failed"
    retried = spec("OnFailure", inits=("setup",))
    assert phases.pod_phase(retried, [backing_off("setup", 2)], [waiting("main")]) == "Pending"


def test_a_terminal_pod_is_decided_by_exit_codes_whatever_the_restart_policy() -> None:
    assert phases.pod_phase(spec("Always"), [], [exited("main", 0)], terminal=True) == "Succeeded"
    assert phases.pod_phase(spec("Always"), [], [exited("main", 143)], terminal=True) == "Failed"


def conditions_of(pod_spec: dict[str, Any], inits: list[dict[str, Any]],
                  statuses: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    phase = phases.pod_phase(pod_spec, inits, statuses)
    return {c["type"]: c for c in phases.pod_conditions(pod_spec, inits, statuses, phase)}


def test_conditions_while_initializing_running_and_completed() -> None:
    with_init = spec("Never", inits=("setup",))
    initializing = conditions_of(with_init, [running("setup")],
                                 [waiting("main", "PodInitializing")])
    assert initializing["Initialized"] == {
        "type": "Initialized", "status": "False", "reason": "ContainersNotInitialized",
        "message": "containers with incomplete status: [setup]",
    }
    assert initializing["Ready"]["message"] == "containers with unready status: [main]"
    started = conditions_of(with_init, [exited("setup", 0)], [running("main")])
    assert [started[k]["status"] for k in ("Initialized", "ContainersReady", "Ready")] == [
        "True", "True", "True"]
    done = conditions_of(with_init, [exited("setup", 0)], [exited("main", 0)])
    initialized = done["Initialized"]
    assert (initialized["status"], initialized["reason"]) == ("True", "PodCompleted")
    assert (done["Ready"]["status"], done["Ready"]["reason"]) == ("False", "PodCompleted")
    failed = conditions_of(spec("Never"), [], [exited("main", 1)])
    assert failed["ContainersReady"]["reason"] == "PodFailed"


def test_a_container_waiting_to_restart_keeps_the_pod_running_but_not_ready() -> None:
    for policy in ("OnFailure", "Always"):
        statuses = [backing_off("main", 2)]
        assert phases.pod_phase(spec(policy), [], statuses) == "Running"
        conditions = conditions_of(spec(policy), [], statuses)
        assert conditions["Initialized"]["status"] == "True"
        for kind in ("ContainersReady", "Ready"):
            assert conditions[kind] == {
                "type": kind, "status": "False", "reason": "ContainersNotReady",
                "message": "containers with unready status: [main]"}


def test_merged_conditions_keep_other_writers_and_transition_times() -> None:
    previous = [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": T0},
        {"type": "Ready", "status": "False", "lastTransitionTime": T0},
        {"type": "Initialized", "status": "True", "lastTransitionTime": T0},
    ]
    computed = [{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "True"}]
    merged = {c["type"]: c for c in phases.merge_conditions(previous, computed, T1)}
    assert merged["PodScheduled"]["lastTransitionTime"] == T0
    assert merged["Initialized"]["lastTransitionTime"] == T0
    assert merged["Ready"] == {"type": "Ready", "status": "True", "lastTransitionTime": T1}


@pytest.mark.parametrize(
    ("policy", "code", "expected"),
    [("Always", 0, True), ("Always", 1, True), ("OnFailure", 0, False), ("OnFailure", 137, True),
     ("Never", 1, False), ("Never", 0, False)],
)
def test_restart_policy(policy: str, code: int, expected: bool) -> None:
    assert phases.should_restart(policy, code) is expected


def test_terminated_state_reads_as_the_runtime_reports_it() -> None:
    assert phases.terminated(0, started_at=T0, finished_at=T1) == {"terminated": {
        "exitCode": 0, "reason": "Completed", "startedAt": T0, "finishedAt": T1}}
    assert phases.terminated(137)["terminated"]["reason"] == "Error"
    custom = phases.terminated(1, reason="NoCommand", message="nothing to run")["terminated"]
    assert (custom["reason"], custom["message"]) == ("NoCommand", "nothing to run")
