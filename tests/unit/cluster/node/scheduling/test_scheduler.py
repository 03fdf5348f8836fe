"""The local scheduler's passes against a recording API: which pod is bound first, what a
pod that does not fit is told (once), how room freed is given back, and gangs bound
together. No server: each test feeds watch events and runs one pass itself (one test
starts the scheduler's own thread)."""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

import pytest

from engine.cluster.node.scheduling import scheduler as scheduler_module
from engine.cluster.node.scheduling.capacity import Capacity
from engine.cluster.node.scheduling.gangs import PLUGINS, VOLCANO, VOLCANO_ANNOTATION
from engine.cluster.node.scheduling.scheduler import LocalScheduler
from engine.kube.errors import ApiError, Conflict, NotFound
from engine.kube.resources import EVENTS, PODS, Resource

NODE = "jobmachine-local"
NS = "ml"
OLD, NEW = "2026-11-30T10:00:00Z", "2026-11-30T10:01:00Z"


class RecordingApi:
    """What the scheduler asks of the API server, answered from a script: every binding,
    patch and event with the namespace and subresource it was sent to."""

    def __init__(self) -> None:
        self.bindings: list[str] = []
        self.status_patches: list[tuple[str, dict[str, Any]]] = []
        self.events: list[tuple[str, str, str]] = []  # (pod, reason, message)
        self.event_bodies: list[dict[str, Any]] = []
        self.group_statuses: list[tuple[str, dict[str, Any]]] = []
        self.binding_errors: dict[str, ApiError] = {}
        self.patch_errors: dict[str, ApiError] = {}
        self.served_error: ApiError | None = None

    def create_subresource(self, resource: Resource, name: str, subresource: str,
                           body: dict[str, Any], namespace: str) -> dict[str, Any]:
        assert (resource, subresource, namespace) == (PODS, "binding", NS)
        assert (body["apiVersion"], body["kind"]) == ("v1", "Binding")
        assert body["target"] == {"apiVersion": "v1", "kind": "Node", "name": NODE}
        assert body["metadata"] == {"name": name, "namespace": NS, "uid": f"uid-{name}"}
        error = self.binding_errors.get(name)
        if error is not None:
            raise error
        self.bindings.append(name)
        return body

    def patch(self, resource: Resource, name: str, body: dict[str, Any], *,
              namespace: str = "", subresource: str | None = None) -> dict[str, Any]:
        assert (namespace, subresource) == (NS, "status")
        error = self.patch_errors.get(name)
        if error is not None:
            raise error
        if resource == PODS:
            self.status_patches.append((name, body))
        else:
            assert resource == VOLCANO.resource
            self.group_statuses.append((name, body["status"]))
        return body

    def create(self, resource: Resource, body: dict[str, Any], namespace: str) -> dict[str, Any]:
        assert (resource, namespace) == (EVENTS, NS)
        self.events.append((body["involvedObject"]["name"], body["reason"], body["message"]))
        self.event_bodies.append(body)
        return body

    def resources_of(self, group: str, version: str) -> list[Any]:
        if self.served_error is not None:
            raise self.served_error
        return [f"{group}/{version}"]


def scheduler(api: RecordingApi, cpu: str = "2", pods: str = "110") -> LocalScheduler:
    return LocalScheduler(api, NODE, Capacity({"cpu": cpu, "pods": pods}))  # type: ignore[arg-type]


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


def woken(s: LocalScheduler) -> bool:
    """Whether the last events asked for a pass; forgets the request."""
    asked = s._wake.is_set()
    s._wake.clear()
    return asked


def test_a_new_pending_pod_asks_for_a_pass_and_seeing_it_again_does_not() -> None:
    s = scheduler(RecordingApi())
    s.observe("ADDED", pod("a"))
    assert woken(s)
    s.observe("MODIFIED", pod("a"))
    assert not woken(s)


def test_room_freed_asks_for_a_pass_only_when_a_pod_waits() -> None:
    s = scheduler(RecordingApi())
    s.observe("ADDED", pod("running", node=NODE, phase="Running"))
    assert not woken(s)  # took room, nobody waits
    s.observe("MODIFIED", pod("running", node=NODE, phase="Succeeded"))
    assert not woken(s)  # room freed, nobody waits
    s.observe("ADDED", pod("other", node=NODE, phase="Running"))
    s.observe("ADDED", pod("waiting"))
    woken(s)
    s.observe("DELETED", pod("other", node=NODE, phase="Running"))
    assert woken(s)


def test_a_gang_members_change_asks_for_a_pass() -> None:
    s = scheduler(RecordingApi())
    s.observe("ADDED", pod("g0", gang="g", node=NODE, phase="Running"))
    assert woken(s)
    s._on_group(VOLCANO, "ADDED", {"metadata": {"name": "g", "namespace": NS}})
    assert woken(s)


def test_pods_already_running_here_take_their_room() -> None:
    """After a restart the node's running pods are seen first: a pending pod fits only in
    what they leave."""
    api = RecordingApi()
    s = scheduler(api, cpu="2")
    s.observe("ADDED", pod("running", cpu="1500m", node=NODE, phase="Running"))
    s.observe("MODIFIED", pod("running", cpu="1500m", node=NODE, phase="Running"))
    s.observe("ADDED", pod("small", cpu="500m"))
    s.observe("ADDED", pod("big", cpu="1", created=NEW))
    one_pass(s)
    assert api.bindings == ["small"]
    assert s._used == {"cpu": Decimal(2), "pods": Decimal(2)}
    s.observe("DELETED", pod("running", cpu="1500m", node=NODE, phase="Running"))
    assert s._used == {"cpu": Decimal("0.5"), "pods": Decimal(1)}
    one_pass(s)
    assert api.bindings == ["small", "big"]


def test_a_pod_without_priority_ranks_as_zero_and_so_does_an_unreadable_one() -> None:
    for unranked in (pod("unranked", created=OLD), pod("unranked", created=OLD, priority=0)):
        api = RecordingApi()
        s = scheduler(api, cpu="1")
        s.observe("ADDED", unranked)
        s.observe("ADDED", pod("ranked", created=NEW, priority=1))
        one_pass(s)
        assert api.bindings == ["ranked"]
    api = RecordingApi()
    s = scheduler(api, cpu="1")
    odd = pod("odd", created=OLD)
    odd["spec"]["priority"] = "high"
    s.observe("ADDED", odd)
    s.observe("ADDED", pod("ranked", created=NEW, priority=1))
    one_pass(s)
    assert api.bindings == ["ranked"]


def test_the_scheduler_posts_as_default_scheduler_of_this_node() -> None:
    api = RecordingApi()
    s = scheduler(api)
    s.observe("ADDED", pod("a"))
    one_pass(s)
    [body] = api.event_bodies
    assert body["source"] == {"component": "default-scheduler"}
    assert body["reportingComponent"] == "default-scheduler"
    assert body["reportingInstance"] == f"default-scheduler-{NODE}"
    assert body["type"] == "Normal"


def test_a_waiting_pods_other_conditions_are_kept_and_a_new_reason_is_told() -> None:
    api = RecordingApi()
    s = scheduler(api, cpu="1")
    waiting = pod("big", cpu="2")
    ready = {"type": "Ready", "status": "False"}
    waiting["status"]["conditions"] = [ready, {"type": "PodScheduled", "status": "False",
                                               "reason": "Unschedulable", "message": "old"}]
    s.observe("ADDED", waiting)
    one_pass(s)
    [(_, body)] = api.status_patches
    conditions = body["status"]["conditions"]
    assert conditions[0] == ready and len(conditions) == 2
    assert conditions[1]["message"] == UNSCHEDULABLE
    assert conditions[1]["lastProbeTime"] is None and conditions[1]["lastTransitionTime"]
    [event] = api.event_bodies
    assert event["type"] == "Warning"


def test_a_reason_is_told_once_even_when_its_write_failed_and_a_new_one_again() -> None:
    api = RecordingApi()
    api.patch_errors["big"] = NotFound(404, "NotFound", "gone", {})
    s = scheduler(api, cpu="1", pods="1")
    s.observe("ADDED", pod("big", cpu="2"))
    one_pass(s)
    assert api.events == []  # no event for a pod whose condition was not written
    del api.patch_errors["big"]
    one_pass(s)
    assert api.status_patches == []  # the same reason: said once per pod
    s.observe("ADDED", pod("filler", node=NODE, phase="Running", cpu="0"))
    one_pass(s)
    [(_, body)] = api.status_patches  # now short of a pod slot too: a new reason
    assert body["status"]["conditions"][0]["message"].startswith(
        "0/1 nodes are available: 1 Insufficient cpu, 1 Too many pods.")


def test_a_deleted_pod_is_forgotten() -> None:
    s = scheduler(RecordingApi(), cpu="1")
    s.observe("ADDED", pod("big", cpu="2"))
    one_pass(s)
    s.observe("DELETED", pod("big", cpu="2"))
    assert (s._pending, s._told, s._wanted) == ({}, {}, {})


def test_a_pod_seen_bound_is_no_longer_pending_nor_remembered() -> None:
    api = RecordingApi()
    s = scheduler(api, cpu="1")
    s.observe("ADDED", pod("big", cpu="2"))
    one_pass(s)
    s.observe("MODIFIED", pod("big", cpu="2", node="elsewhere", phase="Running"))
    assert (s._pending, s._told, s._wanted, s._used) == ({}, {}, {}, {})
    one_pass(s)
    assert api.bindings == []


def test_a_pending_pods_requests_are_computed_once_and_dropped_when_bound() -> None:
    api = RecordingApi()
    s = scheduler(api, cpu="1")
    s.observe("ADDED", pod("big", cpu="2"))
    one_pass(s)
    assert s._wanted == {"uid-big": {"cpu": Decimal(2), "pods": Decimal(1)}}
    s._wanted["uid-big"] = {"cpu": Decimal(1), "pods": Decimal(1)}  # the kept answer is used
    one_pass(s)
    assert api.bindings == ["big"] and s._wanted == {}


def test_a_gangs_status_write_that_failed_is_tried_again_and_a_missing_group_is_not() -> None:
    api = RecordingApi()
    api.patch_errors["g"] = ApiError(500, "InternalError", "busy", {})
    s = scheduler(api)
    s._on_group(VOLCANO, "ADDED", {"metadata": {"name": "g", "namespace": NS},
                                   "spec": {"minMember": 1}})
    s.observe("ADDED", pod("g0", gang="g", node=NODE, phase="Running"))
    one_pass(s)
    assert api.group_statuses == []
    del api.patch_errors["g"]
    one_pass(s)
    [(_, status)] = api.group_statuses
    assert status["phase"] == "Running"
    one_pass(s)
    assert len(api.group_statuses) == 1  # written: nothing new to say
    api.patch_errors["g"] = NotFound(404, "NotFound", "gone", {})
    s.observe("MODIFIED", pod("g0", gang="g", node=NODE, phase="Succeeded"))
    one_pass(s)
    del api.patch_errors["g"]
    one_pass(s)
    assert len(api.group_statuses) == 1  # the group is gone: not tried again


class FakeInformer:
    """Stands in for a PodGroup informer: records what it watches and the handler."""

    made: list[FakeInformer] = []

    def __init__(self, client: Any, resource: Resource, *, cache: Any, handler: Any,
                 name: str) -> None:
        self.resource, self.handler, self.name = resource, handler, name
        self.started = self.stopped = False
        FakeInformer.made.append(self)

    def start(self) -> None:
        self.started = True

    def stop(self) -> None:
        self.stopped = True


def test_podgroups_are_watched_for_each_api_the_server_serves_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(scheduler_module, "Informer", FakeInformer)
    FakeInformer.made = []
    api = RecordingApi()
    s = scheduler(api)
    s.watch_served_groups()
    s.watch_served_groups()
    assert [i.resource for i in FakeInformer.made] == [VOLCANO.resource, PLUGINS.resource]
    assert all(i.started for i in FakeInformer.made)
    assert FakeInformer.made[0].name == f"{NODE} volcano podgroups"
    group = {"metadata": {"name": "g", "namespace": NS}, "spec": {"minMember": 1}}
    FakeInformer.made[0].handler("ADDED", None, group)
    s.observe("ADDED", pod("g0", gang="g"))
    one_pass(s)
    assert api.bindings == ["g0"]  # the group seen through the informer let it bind
    FakeInformer.made[0].handler("DELETED", group, None)
    s.observe("ADDED", pod("g1", gang="g"))
    one_pass(s)
    assert api.bindings == ["g0"]  # the group is gone: its pods wait
    s.stop()
    assert all(i.stopped for i in FakeInformer.made)


def test_an_api_not_served_is_not_watched(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scheduler_module, "Informer", FakeInformer)
    for error in (NotFound(404, "NotFound", "no such group", {}),
                  ApiError(503, "ServiceUnavailable", "later", {})):
        FakeInformer.made = []
        api = RecordingApi()
        api.served_error = error
        scheduler(api).watch_served_groups()
        assert FakeInformer.made == []


def test_started_it_binds_in_its_own_thread_and_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scheduler_module, "Informer", FakeInformer)
    api = RecordingApi()
    s = scheduler(api)
    s.start()
    try:
        s.observe("ADDED", pod("a"))
        deadline = time.monotonic() + 30
        while not api.bindings and time.monotonic() < deadline:
            time.sleep(0.01)
        assert api.bindings == ["a"]
    finally:
        s.stop()
    assert not s._thread.is_alive()
