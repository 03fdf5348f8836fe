"""The local scheduler with bindings in flight at once (`binders` > 1, as the node runs it):
a pass's bindings are sent together, and a pod is refused only against the room the
bindings before it really took. The recording API is test_scheduler.py's."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from engine.cluster.node.scheduling.capacity import Capacity
from engine.cluster.node.scheduling.gangs import VOLCANO
from engine.cluster.node.scheduling.scheduler import LocalScheduler
from engine.kube.errors import ApiError, NotFound
from engine.kube.resources import Resource
from tests.unit.cluster.node.scheduling.test_scheduler import NEW, NODE, NS, RecordingApi, pod

BINDERS = 4


class TogetherApi(RecordingApi):
    """A recording API whose bindings answer only once `together` of them are in flight at
    once (a pass that sends them one after another breaks the barrier instead of hanging)."""

    def __init__(self, together: int) -> None:
        super().__init__()
        self._barrier = threading.Barrier(together, timeout=10)
        self._lock = threading.Lock()

    def create_subresource(self, resource: Resource, name: str, subresource: str,
                           body: dict[str, Any], namespace: str) -> dict[str, Any]:
        self._barrier.wait()
        with self._lock:
            return super().create_subresource(resource, name, subresource, body, namespace)


def scheduler(api: RecordingApi, cpu: str = "8") -> LocalScheduler:
    return LocalScheduler(api, NODE, Capacity({"cpu": cpu, "pods": "110"}),  # type: ignore[arg-type]
                          binders=BINDERS)


@pytest.fixture
def made() -> Any:
    """Schedulers made by a test, their binding threads stopped after it."""
    schedulers: list[LocalScheduler] = []
    yield schedulers
    for s in schedulers:
        s.stop()


def test_a_pass_sends_its_bindings_at_once_and_says_each(made: list[LocalScheduler]) -> None:
    api = TogetherApi(BINDERS)
    s = scheduler(api)
    made.append(s)
    names = [f"w{i}" for i in range(BINDERS)]
    for name in names:
        s.observe("ADDED", pod(name))
    s._schedule()
    assert sorted(api.bindings) == names
    assert sorted(e[0] for e in api.events if e[1] == "Scheduled") == names
    assert s._pending == {} and sorted(s._placed) == [f"uid-{n}" for n in names]


@pytest.mark.parametrize("error", [
    NotFound(404, "NotFound", 'pods "first" not found', {}),
    ApiError(500, "InternalError", "try again", {}),
])
def test_room_a_failed_binding_leaves_goes_to_the_next_pod_in_the_pass(
        made: list[LocalScheduler], error: ApiError) -> None:
    api = RecordingApi()
    api.binding_errors["first"] = error
    s = scheduler(api, cpu="1")
    made.append(s)
    s.observe("ADDED", pod("first"))
    s.observe("ADDED", pod("second", created=NEW))
    s._schedule()
    assert api.bindings == ["second"]
    assert api.status_patches == [] and all(e[1] != "FailedScheduling" for e in api.events)
    assert s._used["cpu"] == 1


def test_a_pod_that_does_not_fit_after_the_bindings_answered_is_refused(
        made: list[LocalScheduler]) -> None:
    api = RecordingApi()
    s = scheduler(api, cpu="1")
    made.append(s)
    s.observe("ADDED", pod("first"))
    s.observe("ADDED", pod("second", created=NEW))
    s._schedule()
    assert api.bindings == ["first"]
    assert [e[:2] for e in api.events] == [("first", "Scheduled"), ("second", "FailedScheduling")]


def test_a_gang_is_planned_against_the_room_bindings_really_took(
        made: list[LocalScheduler]) -> None:
    api = RecordingApi()
    api.binding_errors["lone"] = ApiError(500, "InternalError", "try again", {})
    s = scheduler(api, cpu="2")
    made.append(s)
    s._on_group(VOLCANO, "ADDED", {"metadata": {"name": "g", "namespace": NS},
                                   "spec": {"minMember": 2}})
    s.observe("ADDED", pod("lone", priority=10))
    s.observe("ADDED", pod("g0", gang="g", created=NEW))
    s.observe("ADDED", pod("g1", gang="g", created=NEW))
    s._schedule()
    assert sorted(api.bindings) == ["g0", "g1"]
