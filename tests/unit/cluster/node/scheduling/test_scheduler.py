"""The local scheduler's passes against a recording API: which pod is bound first, what a
pod that does not fit is told (once), how room freed is given back, and gangs bound
together. No thread and no server: each test feeds watch events and runs one pass."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from engine.cluster.node.scheduling.capacity import Capacity
from engine.cluster.node.scheduling.gangs import VOLCANO, VOLCANO_ANNOTATION
from engine.cluster.node.scheduling.scheduler import LocalScheduler
from engine.kube.errors import ApiError, Conflict, NotFound
from engine.kube.resources import EVENTS, PODS, Resource

NODE = "jobmachine-local"
NS = "ml"
OLD, NEW = "2026-11-30T10:00:00Z", "2026-11-30T10:01:00Z"


class RecordingApi:
    """What the scheduler asks of the API server, answered from a script."""

    def __init__(self) -> None:
        self.bindings: list[str] = []
        self.status_patches: list[tuple[str, dict[str, Any]]] = []
        self.events: list[tuple[str, str, str]] = []  # (pod, reason, message)
        self.group_statuses: list[tuple[str, dict[str, Any]]] = []
        self.binding_errors: dict[str, ApiError] = {}

    def create_subresource(self, resource: Resource, name: str, subresource: str,
                           body: dict[str, Any], namespace: str) -> dict[str, Any]:
        assert (resource, subresource) == (PODS, "binding")
        assert body["target"] == {"apiVersion": "v1", "kind": "Node", "name": NODE}
        error = self.binding_errors.get(name)
        if error is not None:
            raise error
        self.bindings.append(name)
        return body

    def patch(self, resource: Resource, name: str, body: dict[str, Any], *,
              namespace: str = "", subresource: str | None = None) -> dict[str, Any]:
        if resource == PODS:
            self.status_patches.append((name, body))
        elif resource == VOLCANO.resource:
            self.group_statuses.append((name, body["status"]))
        return body

    def create(self, resource: Resource, body: dict[str, Any], namespace: str) -> dict[str, Any]:
        assert resource == EVENTS
        self.events.append((body["involvedObject"]["name"], body["reason"], body["message"]))
        return body


def scheduler(api: RecordingApi, cpu: str = "2") -> LocalScheduler:
    return LocalScheduler(api, NODE, Capacity({"cpu": cpu, "pods": "110"}))  # type: ignore[arg-type]


def pod(name: str, *, cpu: str = "1", priority: int | None = None, created: str = OLD,
        node: str = "", phase: str = "Pending", gang: str = "") -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": NS, "uid": f"uid-{name}",
                                "creationTimestamp": created}
    if gang:
        metadata["annotations"] = {VOLCANO_ANNOTATION: gang}
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if priority is not None:
        spec["priority"] = priority
    if node:
        spec["nodeName"] = node
    return {"metadata": metadata, "spec": spec, "status": {"phase": phase}}


def one_pass(s: LocalScheduler) -> None:
    s._schedule()


UNSCHEDULABLE = ("0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are "
                 "available: 1 No preemption victims found for incoming pod.")


def test_pending_pods_that_fit_are_bound_and_told_where() -> None:
    api = RecordingApi()
    s = scheduler(api)
    s.observe("ADDED", pod("a"))
    s.observe("ADDED", pod("b"))
    one_pass(s)
    assert sorted(api.bindings) == ["a", "b"]
    assert ("a", "Scheduled", f"Successfully assigned {NS}/a to {NODE}") in api.events
    assert api.status_patches == []


def test_higher_priority_goes_first_then_the_older_pod() -> None:
    api = RecordingApi()
    s = scheduler(api, cpu="1")
    s.observe("ADDED", pod("old", created=OLD))
    s.observe("ADDED", pod("urgent", created=NEW, priority=1000))
    s.observe("ADDED", pod("young", created=NEW))
    one_pass(s)
    assert api.bindings == ["urgent"]
    api2 = RecordingApi()
    s2 = scheduler(api2, cpu="1")
    s2.observe("ADDED", pod("young", created=NEW))
    s2.observe("ADDED", pod("old", created=OLD))
    one_pass(s2)
    assert api2.bindings == ["old"]


def test_a_pod_that_does_not_fit_is_told_once_why_it_waits() -> None:
    api = RecordingApi()
    s = scheduler(api, cpu="1")
    s.observe("ADDED", pod("big", cpu="2"))
    one_pass(s)
    one_pass(s)
    assert api.bindings == []
    [(name, body)] = api.status_patches
    [condition] = body["status"]["conditions"]
    assert name == "big"
    assert {k: condition[k] for k in ("type", "status", "reason", "message")} == {
        "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
        "message": UNSCHEDULABLE}
    assert api.events == [("big", "FailedScheduling", UNSCHEDULABLE)]


def test_a_pod_already_showing_the_reason_gets_no_second_patch() -> None:
    api = RecordingApi()
    s = scheduler(api, cpu="1")
    waiting = pod("big", cpu="2")
    waiting["status"]["conditions"] = [{"type": "PodScheduled", "status": "False",
                                        "reason": "Unschedulable", "message": UNSCHEDULABLE}]
    s.observe("ADDED", waiting)
    one_pass(s)
    assert api.status_patches == [] and api.events == []


def test_room_freed_by_a_pod_that_ended_goes_to_the_waiting_pod() -> None:
    api = RecordingApi()
    s = scheduler(api, cpu="1")
    s.observe("ADDED", pod("first"))
    s.observe("ADDED", pod("second", created=NEW))
    one_pass(s)
    assert api.bindings == ["first"]
    s.observe("MODIFIED", pod("first", node=NODE, phase="Running"))
    one_pass(s)
    assert api.bindings == ["first"]  # still running: no room
    s.observe("MODIFIED", pod("first", node=NODE, phase="Succeeded"))
    one_pass(s)
    assert api.bindings == ["first", "second"]


def test_pods_bound_elsewhere_or_deleted_take_no_room() -> None:
    api = RecordingApi()
    s = scheduler(api, cpu="1")
    s.observe("ADDED", pod("other-node", node="elsewhere", phase="Running"))
    s.observe("ADDED", pod("gone"))
    s.observe("DELETED", pod("gone"))
    s.observe("ADDED", pod("here"))
    one_pass(s)
    assert api.bindings == ["here"]


def test_a_pending_pod_being_deleted_is_not_bound() -> None:
    api = RecordingApi()
    s = scheduler(api)
    leaving = pod("leaving")
    leaving["metadata"]["deletionTimestamp"] = NEW
    s.observe("ADDED", pod("leaving"))
    s.observe("MODIFIED", leaving)
    one_pass(s)
    assert api.bindings == []


def test_a_pod_gone_before_its_binding_is_dropped_and_its_room_kept() -> None:
    api = RecordingApi()
    api.binding_errors["vanished"] = NotFound(404, "NotFound", "pods \"vanished\" not found", {})
    s = scheduler(api, cpu="1")
    s.observe("ADDED", pod("vanished"))
    s.observe("ADDED", pod("next", created=NEW))
    one_pass(s)
    assert api.bindings == ["next"]  # the room the vanished pod would have taken went on
    api.binding_errors.clear()
    one_pass(s)
    assert api.bindings == ["next"]  # the vanished pod is not tried again


def test_a_binding_refused_otherwise_is_tried_again() -> None:
    api = RecordingApi()
    api.binding_errors["busy"] = ApiError(500, "InternalError", "try again", {})
    s = scheduler(api)
    s.observe("ADDED", pod("busy"))
    one_pass(s)
    del api.binding_errors["busy"]
    one_pass(s)
    assert api.bindings == ["busy"]


def test_a_conflicting_binding_means_bound_meanwhile() -> None:
    api = RecordingApi()
    api.binding_errors["raced"] = Conflict(409, "Conflict", "already bound", {})
    s = scheduler(api)
    s.observe("ADDED", pod("raced"))
    one_pass(s)
    one_pass(s)
    assert api.bindings == [] and api.events == []


def test_a_gang_is_bound_together_or_not_at_all() -> None:
    api = RecordingApi()
    s = scheduler(api, cpu="2")
    s._on_group(VOLCANO, "ADDED", {"metadata": {"name": "g", "namespace": NS},
                                   "spec": {"minMember": 2}})
    s.observe("ADDED", pod("g0", gang="g"))
    one_pass(s)
    assert api.bindings == []
    [(_, body)] = api.status_patches
    assert body["status"]["conditions"][0]["message"] == (
        "pod group g is not ready: 1 of its 2 pods (minMember) exist; waiting for the rest")
    [(group, status)] = api.group_statuses
    assert group == "g" and status["conditions"][0]["reason"] == "NotEnoughTasks"
    s.observe("ADDED", pod("g1", gang="g"))
    one_pass(s)
    assert sorted(api.bindings) == ["g0", "g1"]


def test_a_gang_that_does_not_fit_leaves_the_room_to_a_lone_pod_after_it() -> None:
    api = RecordingApi()
    s = scheduler(api, cpu="2")
    s._on_group(VOLCANO, "ADDED", {"metadata": {"name": "g", "namespace": NS},
                                   "spec": {"minMember": 2}})
    s.observe("ADDED", pod("g0", gang="g", cpu="2"))
    s.observe("ADDED", pod("g1", gang="g", cpu="2"))
    s.observe("ADDED", pod("lone", created=NEW))
    one_pass(s)
    assert api.bindings == ["lone"]
    used = s._used
    assert used["cpu"] == Decimal(1) and used["pods"] == Decimal(1)
