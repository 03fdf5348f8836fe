"""The event recorder: what it posts, how repeats aggregate, and that it never blocks or raises."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from loguru import logger

from engine.controller.reporting import events
from engine.controller.reporting.events import COMBINED_PREFIX, EventRecorder
from engine.kube.errors import (
    AlreadyExists,
    ApiError,
    Conflict,
    Invalid,
    NotFound,
    Unavailable,
)
from engine.kube.resources import EVENTS, Resource

from .conftest import FakeClock

WAIT = 10.0  # generous bound for the recorder thread; never asserted as a duration
T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z
T0_TEXT = "2027-01-15T08:00:00Z"

JOB: dict[str, Any] = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": {"name": "train", "namespace": "team", "uid": "uid-1", "resourceVersion": "7"},
    "spec": {"pytorchReplicaSpecs": {}},
}
OTHER_JOB: dict[str, Any] = {**JOB, "metadata": {**JOB["metadata"], "name": "b", "uid": "uid-2"}}


def refused() -> Unavailable:
    """What the client raises when the API server cannot be reached."""
    return Unavailable(0, "ConnectionError", "ConnectionRefusedError: refused", {})


class FakeEventClient:
    """Stores events like a server would; `failures` are raised by the next calls, in order."""

    def __init__(self) -> None:
        self.events: dict[tuple[str, str], dict[str, Any]] = {}
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.failures: list[ApiError] = []
        self.lock = threading.Lock()

    def create(
        self, res: Resource, body: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        assert res == EVENTS
        with self.lock:
            self.calls.append(("create", body["metadata"]["name"], _copy(body)))
            self._maybe_fail()
            key = (namespace or "", body["metadata"]["name"])
            if key in self.events:
                raise AlreadyExists(409, "AlreadyExists", "exists", {})
            self.events[key] = _copy(body)
            return self.events[key]

    def patch(
        self, res: Resource, name: str, body: Any, *, namespace: str | None = None,
        patch_type: str = "merge", subresource: str | None = None,
    ) -> dict[str, Any]:
        assert res == EVENTS and patch_type == "merge" and subresource is None
        with self.lock:
            self.calls.append(("patch", name, _copy(body)))
            self._maybe_fail()
            key = (namespace or "", name)
            if key not in self.events:
                raise NotFound(404, "NotFound", "not found", {})
            self.events[key].update(body)
            return self.events[key]

    def _maybe_fail(self) -> None:
        if self.failures:
            raise self.failures.pop(0)

    def messages(self) -> list[str]:
        return [event["message"] for event in self.events.values()]

    def kinds(self) -> list[str]:
        return [kind for kind, _, _ in self.calls]


def _copy(body: dict[str, Any]) -> dict[str, Any]:
    return {k: dict(v) if isinstance(v, dict) else v for k, v in body.items()}


@pytest.fixture
def api() -> FakeEventClient:
    return FakeEventClient()


@pytest.fixture
def clock() -> FakeClock:
    clock = FakeClock()
    clock.now = T0
    return clock


@pytest.fixture
def recorder(api: FakeEventClient, clock: FakeClock) -> Iterator[EventRecorder]:
    recorder = EventRecorder(api, host="node-1", aggregation_window_s=600, clock=clock)
    recorder.start()
    yield recorder
    recorder.stop(flush_timeout_s=WAIT)


def record(recorder: EventRecorder, message: str, *, reason: str = "Restarting",
           type: str = "Normal", job: dict[str, Any] = JOB) -> None:
    recorder.record(job, type=type, reason=reason, message=message)  # type: ignore[arg-type]


def settle(recorder: EventRecorder) -> None:
    assert recorder.flush(WAIT)


class TestPosting:
    def test_first_event_is_created_on_the_job_with_the_kubernetes_fields(
        self, recorder: EventRecorder, api: FakeEventClient
    ) -> None:
        record(recorder, "Worker 0 exited with code 137")
        settle(recorder)
        [(kind, name, body)] = api.calls
        assert kind == "create"
        assert name.startswith("train.")
        assert int(name.removeprefix("train."), 16) > 0
        assert body == {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"namespace": "team", "name": name},
            "involvedObject": {
                "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "train",
                "namespace": "team", "uid": "uid-1",
            },
            "reason": "Restarting",
            "message": "Worker 0 exited with code 137",
            "type": "Normal",
            "source": {"component": "jobmachine", "host": "node-1"},
            "count": 1,
            "firstTimestamp": T0_TEXT,
            "lastTimestamp": T0_TEXT,
            "reportingComponent": "jobmachine",
            "reportingInstance": "node-1",
        }
        assert recorder.stats().created == 1

    def test_every_event_gets_its_own_name(
        self, recorder: EventRecorder, api: FakeEventClient
    ) -> None:
        for index in range(3):
            record(recorder, f"message {index}")
        settle(recorder)
        assert len({name for _, name, _ in api.calls}) == 3

    def test_a_cluster_scoped_object_gets_its_events_in_default(
        self, recorder: EventRecorder, api: FakeEventClient
    ) -> None:
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "uid": "u"}}
        recorder.record(node, type="Warning", reason="NotReady", message="gone")
        settle(recorder)
        [(_, _, body)] = api.calls
        assert body["metadata"]["namespace"] == "default"
        assert "namespace" not in body["involvedObject"]


class TestIdenticalEvents:
    def test_a_repeat_within_the_window_patches_count_and_last_timestamp(
        self, recorder: EventRecorder, api: FakeEventClient, clock: FakeClock
    ) -> None:
        record(recorder, "Worker 0 exited with code 137")
        clock.advance(30)
        record(recorder, "Worker 0 exited with code 137")
        clock.advance(30)
        record(recorder, "Worker 0 exited with code 137")
        settle(recorder)
        assert api.kinds() == ["create", "patch", "patch"]
        [event] = api.events.values()
        assert event["count"] == 3
        assert event["firstTimestamp"] == T0_TEXT
        assert event["lastTimestamp"] == "2027-01-15T08:01:00Z"
        assert api.calls[1][2] == {
            "count": 2, "lastTimestamp": "2027-01-15T08:00:30Z",
            "message": "Worker 0 exited with code 137",
        }
        assert recorder.stats().aggregated == 2

    def test_a_repeat_after_the_window_is_a_new_event(
        self, recorder: EventRecorder, api: FakeEventClient, clock: FakeClock
    ) -> None:
        record(recorder, "same")
        clock.advance(601)
        record(recorder, "same")
        settle(recorder)
        assert api.kinds() == ["create", "create"]
        assert [event["count"] for event in api.events.values()] == [1, 1]

    def test_the_window_slides_with_each_repeat(
        self, recorder: EventRecorder, api: FakeEventClient, clock: FakeClock
    ) -> None:
        for _ in range(4):
            record(recorder, "same")
            clock.advance(500)
        settle(recorder)
        assert api.kinds() == ["create", "patch", "patch", "patch"]

    @pytest.mark.parametrize(
        "change",
        [
            {"message": "other"},
            {"reason": "Failed"},
            {"type": "Warning"},
            {"job": OTHER_JOB},
        ],
    )
    def test_any_difference_makes_a_separate_event(
        self, recorder: EventRecorder, api: FakeEventClient, change: dict[str, Any]
    ) -> None:
        record(recorder, "same")
        record(recorder, **{"message": "same", **change})
        settle(recorder)
        assert api.kinds() == ["create", "create"]

    def test_an_event_deleted_on_the_server_is_created_again_keeping_its_count(
        self, recorder: EventRecorder, api: FakeEventClient, clock: FakeClock
    ) -> None:
        record(recorder, "same")
        settle(recorder)
        api.events.clear()  # events expire on real servers (an hour by default)
        clock.advance(60)
        record(recorder, "same")
        settle(recorder)
        assert api.kinds() == ["create", "patch", "create"]
        [event] = api.events.values()
        assert event["count"] == 2
        assert event["firstTimestamp"] == T0_TEXT
        record(recorder, "same")
        settle(recorder)
        assert api.kinds()[-1] == "patch"
        assert next(iter(api.events.values()))["count"] == 3


class TestSimilarEvents:
    def test_the_eleventh_distinct_message_becomes_a_combined_event(
        self, recorder: EventRecorder, api: FakeEventClient
    ) -> None:
        for index in range(11):
            record(recorder, f"Worker {index} restarting")
        settle(recorder)
        assert api.kinds() == ["create"] * 11
        assert api.calls[-1][2]["message"] == COMBINED_PREFIX + "Worker 10 restarting"
        assert api.messages()[:10] == [f"Worker {i} restarting" for i in range(10)]

    def test_the_combined_event_is_patched_with_the_latest_message(
        self, recorder: EventRecorder, api: FakeEventClient
    ) -> None:
        for index in range(14):
            record(recorder, f"Worker {index} restarting")
        settle(recorder)
        assert api.kinds() == ["create"] * 11 + ["patch"] * 3
        combined = [e for e in api.events.values() if e["message"].startswith(COMBINED_PREFIX)]
        assert len(combined) == 1
        assert combined[0]["count"] == 4
        assert combined[0]["message"] == COMBINED_PREFIX + "Worker 13 restarting"

    def test_a_repeat_of_an_early_message_still_counts_on_its_own_event(
        self, recorder: EventRecorder, api: FakeEventClient
    ) -> None:
        for index in range(12):
            record(recorder, f"Worker {index} restarting")
        record(recorder, "Worker 0 restarting")
        settle(recorder)
        first = next(iter(api.events.values()))
        assert first["message"] == "Worker 0 restarting"
        assert first["count"] == 2

    def test_other_reasons_and_objects_are_not_combined(
        self, recorder: EventRecorder, api: FakeEventClient
    ) -> None:
        for index in range(12):
            record(recorder, f"Worker {index} restarting")
        record(recorder, "Worker 99 failed", reason="Failed")
        record(recorder, "Worker 99 restarting", job=OTHER_JOB)
        settle(recorder)
        # Another object's events may be posted by another thread, so not in this order.
        assert {"Worker 99 failed", "Worker 99 restarting"} <= set(api.messages())

    def test_after_a_quiet_window_messages_get_their_own_events_again(
        self, recorder: EventRecorder, api: FakeEventClient, clock: FakeClock
    ) -> None:
        for index in range(11):
            record(recorder, f"Worker {index} restarting")
        clock.advance(601)
        record(recorder, "Worker 50 restarting")
        settle(recorder)
        assert api.messages()[-1] == "Worker 50 restarting"


class TestFailures:
    def test_a_transient_failure_is_retried(
        self, recorder: EventRecorder, api: FakeEventClient
    ) -> None:
        api.failures.append(Unavailable(503, "ServiceUnavailable", "busy", {}))
        record(recorder, "hello")
        settle(recorder)
        assert api.kinds() == ["create", "create"]
        assert api.messages() == ["hello"]
        assert recorder.stats().failed == 0

    def test_a_throttled_post_is_tried_again_as_client_go_does(
        self, recorder: EventRecorder, api: FakeEventClient
    ) -> None:
        api.failures.extend(Unavailable(429, "TooManyRequests", "slow down", {})
                            for _ in range(5))
        record(recorder, "hello")
        settle(recorder)
        assert api.kinds() == ["create"] * 6
        assert api.messages() == ["hello"] and recorder.stats().failed == 0

    def test_a_conflict_on_a_count_bump_is_retried(
        self, recorder: EventRecorder, api: FakeEventClient
    ) -> None:
        record(recorder, "hello")
        settle(recorder)
        api.failures.append(Conflict(409, "Conflict", "the object has been modified", {}))
        record(recorder, "hello")
        settle(recorder)
        assert api.kinds() == ["create", "patch", "patch"]
        assert [event["count"] for event in api.events.values()] == [2]
        assert recorder.stats().failed == 0

    def test_a_name_clash_is_retried_with_a_new_name(
        self, recorder: EventRecorder, api: FakeEventClient
    ) -> None:
        api.failures.append(AlreadyExists(409, "AlreadyExists", "taken", {}))
        record(recorder, "hello")
        settle(recorder)
        first, second = (name for _, name, _ in api.calls)
        assert first != second
        assert list(api.events) == [("team", second)]

    def test_a_refused_event_is_counted_and_the_next_one_still_goes_out(
        self, recorder: EventRecorder, api: FakeEventClient
    ) -> None:
        api.failures.append(Invalid(422, "Invalid", "bad event", {}))
        record(recorder, "refused")
        record(recorder, "accepted")
        settle(recorder)
        assert api.messages() == ["accepted"]
        assert recorder.stats().failed == 1


class AwayClient(FakeEventClient):
    """An API server that cannot be reached, ever."""

    def _maybe_fail(self) -> None:
        raise refused()


class TestUnreachableServer:
    """An API server out of reach is waited for: nothing is lost or logged per event, and
    whatever stopping leaves unposted is counted and said once."""

    @pytest.fixture(autouse=True)
    def quick_retries(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(events, "_RETRY_DELAY_S", 0.001)
        monkeypatch.setattr(events, "_RETRY_CAP_S", 0.002)

    def test_events_wait_for_the_server_and_are_all_posted(
        self, recorder: EventRecorder, api: FakeEventClient, records: list[dict[str, Any]]
    ) -> None:
        api.failures.extend(refused() for _ in range(10))
        record(recorder, "first")
        record(recorder, "second")
        settle(recorder)
        assert api.messages() == ["first", "second"]
        stats = recorder.stats()
        assert (stats.created, stats.failed, stats.dropped) == (2, 0, 0)
        assert not [r for r in records if r["level"].no >= logger.level("WARNING").no]

    def test_stopping_while_it_is_away_counts_the_unposted_and_says_so_once(
        self, clock: FakeClock, records: list[dict[str, Any]]
    ) -> None:
        recorder = EventRecorder(AwayClient(), clock=clock)
        recorder.start()
        for index in range(3):
            record(recorder, f"m{index}")
        recorder.stop(flush_timeout_s=0.2)
        stats = recorder.stats()
        assert stats.created == 0
        assert stats.failed + stats.dropped == 3
        loud = [r for r in records if r["level"].no >= logger.level("WARNING").no]
        assert [r["level"].name for r in loud] == ["ERROR"]
        assert "3 events not posted" in loud[0]["message"]


class TestNeverBlocksNorRaises:
    def test_a_full_queue_drops_and_counts(self, api: FakeEventClient, clock: FakeClock) -> None:
        recorder = EventRecorder(api, queue_size=2, clock=clock)
        for index in range(3):
            record(recorder, f"m{index}")
        assert recorder.stats().dropped == 1
        assert recorder.stats().recorded == 2
        recorder.start()
        try:
            settle(recorder)
        finally:
            recorder.stop()
        assert api.messages() == ["m0", "m1"]

    @pytest.mark.parametrize(
        "involved",
        [{}, {"metadata": {}}, {"metadata": {"name": ""}}, {"metadata": None}],
    )
    def test_an_object_without_a_name_is_dropped(
        self, recorder: EventRecorder, api: FakeEventClient, involved: dict[str, Any]
    ) -> None:
        recorder.record(involved, type="Normal", reason="Created", message="x")
        settle(recorder)
        assert api.calls == []
        assert recorder.stats().dropped == 1

    def test_an_unknown_type_or_empty_reason_is_dropped(
        self, recorder: EventRecorder, api: FakeEventClient
    ) -> None:
        record(recorder, "x", type="Error")
        record(recorder, "x", reason="")
        settle(recorder)
        assert api.calls == []
        assert recorder.stats().dropped == 2

    def test_flush_without_a_running_recorder_gives_up(
        self, api: FakeEventClient, clock: FakeClock
    ) -> None:
        recorder = EventRecorder(api, clock=clock)
        record(recorder, "waiting")
        assert not recorder.flush(0.01)

    def test_stop_posts_what_is_queued_and_later_events_are_dropped(
        self, api: FakeEventClient, clock: FakeClock
    ) -> None:
        recorder = EventRecorder(api, clock=clock)
        for index in range(5):
            record(recorder, f"m{index}")
        recorder.start()
        recorder.stop(flush_timeout_s=WAIT)
        assert api.messages() == [f"m{i}" for i in range(5)]
        record(recorder, "late")
        assert recorder.stats().dropped == 1
        assert api.messages() == [f"m{i}" for i in range(5)]

    def test_starting_twice_is_an_error(self, recorder: EventRecorder) -> None:
        with pytest.raises(RuntimeError):
            recorder.start()

    def test_invalid_settings_are_refused(self, api: FakeEventClient) -> None:
        with pytest.raises(ValueError):
            EventRecorder(api, queue_size=0)
        with pytest.raises(ValueError):
            EventRecorder(api, aggregation_window_s=0)


class GatedEventClient(FakeEventClient):
    """Holds every call until `gate` is set, as a slow or rate-limited API server would."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def create(
        self, res: Resource, body: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        assert self.gate.wait(WAIT)
        return super().create(res, body, namespace)


def test_what_is_left_at_stop_goes_through_the_flush_client(clock: FakeClock) -> None:
    """The engine hands a client with a higher budget to `stop`, so the queue fits the grace:
    the event in flight finishes on the old client, the rest go through the new one."""
    api = GatedEventClient()
    recorder = EventRecorder(api, clock=clock)
    recorder.start()
    for index in range(5):
        record(recorder, f"m{index}")
    assert recorder.pending == 5
    flush = FakeEventClient()
    stopping = threading.Thread(target=recorder.stop,
                                kwargs={"flush_timeout_s": WAIT, "flush_client": flush})
    stopping.start()
    probes = 0
    while recorder.stats().dropped == 0:  # refused once stopping began: the swap is done
        assert probes < 100_000
        probes += 1
        record(recorder, "late")
    api.gate.set()
    stopping.join(WAIT + 1)
    assert api.messages() + flush.messages() == [f"m{i}" for i in range(5)]
    assert len(api.messages()) <= 1, "only the event held at the gate used the old client"
    assert recorder.pending == 0


def test_events_queued_at_shutdown_are_posted_folded_not_abandoned(clock: FakeClock) -> None:
    """Stopping posts what is queued; identical events become one Event with their count, so
    a long queue fits the grace period."""
    api = GatedEventClient()
    recorder = EventRecorder(api, aggregation_window_s=600, clock=clock)
    recorder.start()
    recorder.record(JOB, type="Normal", reason="First", message="held at the gate")
    for _ in range(300):
        recorder.record(JOB, type="Warning", reason="PodRestarted", message="Worker-0 ended")
    recorder.record(OTHER_JOB, type="Warning", reason="PodRestarted", message="Worker-0 ended")
    stopping = threading.Thread(target=recorder.stop, kwargs={"flush_timeout_s": WAIT})
    stopping.start()
    probes = 0
    while recorder.stats().dropped == 0:  # an event recorded once stopping began is refused
        assert probes < 100_000
        probes += 1
        recorder.record(JOB, type="Normal", reason="Late", message="after stop")
    api.gate.set()
    stopping.join(WAIT + 1)

    assert not stopping.is_alive()
    counts = {(e["involvedObject"]["uid"], e["reason"]): e["count"] for e in api.events.values()}
    late = counts.pop(("uid-1", "Late"), 0)  # probes queued before stop closed the recorder
    assert late == probes - 1
    assert counts == {("uid-1", "First"): 1, ("uid-1", "PodRestarted"): 300,
                      ("uid-2", "PodRestarted"): 1}
    assert api.kinds() == ["create"] * (3 + bool(late))
    assert recorder.stats().dropped == 1  # the probe recorded after stop began


class StuckClient(FakeEventClient):
    """Holds every post about the object `stuck` until `release` is set."""

    def __init__(self, stuck: str) -> None:
        super().__init__()
        self.stuck = stuck
        self.release = threading.Event()

    def create(
        self, res: Resource, body: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        if body["involvedObject"]["uid"] == self.stuck:
            assert self.release.wait(WAIT)
        return super().create(res, body, namespace)


def test_a_post_stuck_on_one_object_holds_up_only_the_objects_sharing_its_thread(
    clock: FakeClock,
) -> None:
    posters = 4
    free = next(job for job in ({**JOB, "metadata": {**JOB["metadata"], "name": f"j{n}",
                                                      "uid": f"uid-{n}"}} for n in range(2, 99))
                if hash(job["metadata"]["uid"]) % posters != hash("uid-1") % posters)
    api = StuckClient("uid-1")
    recorder = EventRecorder(api, posters=posters, clock=clock)
    recorder.start()
    try:
        for index in range(3):
            record(recorder, f"stuck {index}")
        record(recorder, "free", job=free)
        deadline = time.monotonic() + WAIT
        while "free" not in api.messages() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert api.messages() == ["free"]
        api.release.set()
        settle(recorder)
        stuck = [m for m in api.messages() if m.startswith("stuck")]
        assert stuck == ["stuck 0", "stuck 1", "stuck 2"]  # one object's events in order
    finally:
        api.release.set()
        recorder.stop(flush_timeout_s=WAIT)
