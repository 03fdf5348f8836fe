"""Container records: a new pod waits; a pod taken over keeps its states and restart counts."""

from __future__ import annotations

from engine.cluster.node.status import phases
from engine.cluster.node.status.pod_status import pod_status
from engine.cluster.node.status.slots import pod_slots

T0 = "2024-01-01T00:00:00Z"


def test_a_new_pod_waits_and_containers_wait_for_init_containers() -> None:
    plain = pod_slots({"spec": {"containers": [{"name": "main"}]}})
    assert [s.state for s in plain] == [phases.waiting("ContainerCreating")]
    staged = pod_slots({"spec": {"initContainers": [{"name": "a"}], "containers": [{"name": "m"}]}})
    assert [(s.name, s.init, s.state) for s in staged] == [
        ("a", True, phases.waiting("PodInitializing")),
        ("m", False, phases.waiting("PodInitializing")),
    ]


def test_a_pod_taken_over_keeps_states_and_restart_counts() -> None:
    last = phases.terminated(1, started_at=T0, finished_at=T0)
    pod = {
        "spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]},
        "status": {"containerStatuses": [
            {"name": "a", "state": phases.running(T0), "restartCount": 2, "lastState": last,
             "containerID": "x://1"},
            {"name": "b", "state": phases.waiting("CrashLoopBackOff"), "restartCount": 0,
             "lastState": last},
            {"name": "c", "state": phases.waiting("ContainerCreating"), "restartCount": 0,
             "lastState": {}},
        ]},
    }
    a, b, c = pod_slots(pod)
    assert (a.attempts, a.started_at, a.container_id, a.last_state) == (3, T0, "x://1", last)
    assert (b.attempts, b.status()["restartCount"]) == (1, 0)
    assert c.attempts == 0


def test_status_of_a_running_pod() -> None:
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "m", "image": "img"}]},
           "status": {"conditions": [{"type": "PodScheduled", "status": "True",
                                      "lastTransitionTime": T0}]}}
    slots = pod_slots(pod)
    slots[0].state = phases.running(T0)
    slots[0].attempts = 1
    status = pod_status(pod, slots, start_time=T0, terminal=False, written=None, now=T0)
    assert status["phase"] == "Running"
    assert (status["podIP"], status["hostIP"], status["startTime"]) == ("127.0.0.1",) * 2 + (T0,)
    assert [c["type"] for c in status["conditions"]] == [
        "PodScheduled", "Initialized", "ContainersReady", "Ready"]
    assert status["containerStatuses"] == [{
        "name": "m", "state": phases.running(T0), "lastState": {}, "ready": True,
        "started": True, "restartCount": 0, "image": "img", "imageID": "",
    }]
    assert "initContainerStatuses" not in status


def test_a_container_waiting_to_restart_keeps_its_last_container_id() -> None:
    last = phases.terminated(2, started_at=T0, finished_at=T0, container_id="x://7")
    pod = {"spec": {"containers": [{"name": "a"}]}, "status": {"containerStatuses": [
        {"name": "a", "state": phases.waiting("CrashLoopBackOff", "back-off 10s ..."),
         "restartCount": 1, "lastState": last, "containerID": "x://7"}]}}
    (slot,) = pod_slots(pod)
    assert slot.startable
    body = slot.status()
    assert (body["containerID"], body["restartCount"], body["ready"], body["started"]) == (
        "x://7", 1, False, False)
    assert pod_slots({"spec": {"containers": [{"name": "a"}]}})[0].status().get(
        "containerID") is None
