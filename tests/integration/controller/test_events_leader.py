"""The event recorder and leader election over real HTTPS against the embedded API server.

Events are read back with a list, as `kubectl describe` does; two electors share one Lease,
and only one of them ever leads at a time.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from engine.cluster import running_apiserver
from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from engine.controller.coordination.leader import LeaderElector
from engine.controller.reporting.events import COMBINED_PREFIX, EventRecorder
from engine.kube.client import KubeClient
from engine.kube.resources import EVENTS, LEASES
from tests.polling import eventually

WAIT = 30.0  # generous bound for a condition to become true; never asserted as a duration


@pytest.fixture(scope="module")
def server() -> Iterator[RunningApiServer]:
    with running_apiserver(tls=True) as running:
        yield running


def job(ns: str, name: str = "train") -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": ns, "uid": str(uuid.uuid4()),
                     "resourceVersion": "1"},
    }


class TestEvents:
    @pytest.fixture
    def recorder(self, client: KubeClient) -> Iterator[EventRecorder]:
        recorder = EventRecorder(client, host="test-host")
        recorder.start()
        yield recorder
        recorder.stop()

    def events_of(self, client: KubeClient, ns: str, obj: dict[str, Any]) -> list[dict[str, Any]]:
        items, _ = client.list(
            EVENTS, ns, field_selector=f"involvedObject.uid={obj['metadata']['uid']}"
        )
        return items

    def test_an_event_is_posted_on_the_object(
        self, client: KubeClient, ns: str, recorder: EventRecorder
    ) -> None:
        train = job(ns)
        recorder.record(train, type="Warning", reason="Restarting",
                        message="Worker 0 exited with code 137")
        assert recorder.flush(WAIT)
        [event] = self.events_of(client, ns, train)
        assert event["involvedObject"] == {
            "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "train",
            "namespace": ns, "uid": train["metadata"]["uid"],
        }
        assert (event["type"], event["reason"], event["message"], event["count"]) == (
            "Warning", "Restarting", "Worker 0 exited with code 137", 1)
        assert event["source"] == {"component": "jobmachine", "host": "test-host"}
        assert event["reportingComponent"] == "jobmachine"
        assert event["metadata"]["name"].startswith("train.")
        assert event["firstTimestamp"] == event["lastTimestamp"]

    def test_repeats_are_counted_on_one_event(
        self, client: KubeClient, ns: str, recorder: EventRecorder
    ) -> None:
        train = job(ns)
        for _ in range(5):
            recorder.record(train, type="Normal", reason="Running", message="all replicas run")
        assert recorder.flush(WAIT)
        [event] = self.events_of(client, ns, train)
        assert event["count"] == 5
        assert event["firstTimestamp"] <= event["lastTimestamp"]
        assert recorder.stats().created == 1
        assert recorder.stats().aggregated == 4

    def test_many_distinct_messages_collapse_into_a_combined_event(
        self, client: KubeClient, ns: str, recorder: EventRecorder
    ) -> None:
        train, other = job(ns), job(ns, "other")
        for index in range(14):
            recorder.record(train, type="Normal", reason="Restarting",
                            message=f"Worker {index} restarting")
        recorder.record(other, type="Normal", reason="Restarting", message="Worker 0 restarting")
        assert recorder.flush(WAIT)
        events = self.events_of(client, ns, train)
        single = sorted(e["message"] for e in events if e["count"] == 1)
        assert single == sorted(f"Worker {i} restarting" for i in range(10))
        [combined] = [e for e in events if e["message"].startswith(COMBINED_PREFIX)]
        assert combined["message"] == COMBINED_PREFIX + "Worker 13 restarting"
        assert combined["count"] == 4
        assert len(events) == 11
        assert len(self.events_of(client, ns, other)) == 1

    def test_events_queued_when_stopping_are_posted_not_abandoned(
        self, server: RunningApiServer, client: KubeClient, ns: str
    ) -> None:
        """At 5 requests a second, 400 events one by one would take 80 s; stopping posts
        what is queued, identical ones once with their count, within its 10 s."""
        slow = KubeClient.from_kubeconfig(server.kubeconfig, qps=5, burst=1)
        recorder = EventRecorder(slow, host="test-host")
        recorder.start()
        train = job(ns)
        try:
            for index in range(400):
                recorder.record(train, type="Warning", reason="PodRestarted",
                                message=f"Worker-{index % 4} ended (exit code 2, Error)")
            recorder.stop(flush_timeout_s=10)
        finally:
            slow.close()
        counts = {e["message"]: e["count"] for e in self.events_of(client, ns, train)}
        assert counts == {f"Worker-{i} ended (exit code 2, Error)": 100 for i in range(4)}
        assert recorder.stats().dropped == 0


class Candidate:
    """A LeaderElector running in a thread; `track` sees every start and stop of leadership."""

    def __init__(
        self, client: KubeClient, ns: str, identity: str, track: Callable[[str], None]
    ) -> None:
        self.identity = identity
        self.elector = LeaderElector(
            client, namespace=ns, name="jobmachine-leader", identity=identity,
            lease_duration_s=1.5, renew_deadline_s=1, retry_period_s=0.2,
        )
        self.started = threading.Event()
        self.stopped = threading.Event()
        self.stop = threading.Event()
        self._track = track
        self.thread = threading.Thread(target=self._run, name=identity, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.elector.run(
            on_started_leading=self._on_started, on_stopped_leading=self._on_stopped,
            stop=self.stop,
        )

    def _on_started(self) -> None:
        self._track(f"+{self.identity}")
        self.started.set()

    def _on_stopped(self) -> None:
        self._track(f"-{self.identity}")
        self.stopped.set()

    def finish(self) -> None:
        self.stop.set()
        self.thread.join(WAIT)
        assert not self.thread.is_alive()


class Leadership:
    """Who leads, checked at every change: never two at once."""

    def __init__(self) -> None:
        self.history: list[str] = []
        self.leaders: set[str] = set()
        self.overlaps: list[set[str]] = []
        self._lock = threading.Lock()

    def track(self, change: str) -> None:
        with self._lock:
            self.history.append(change)
            sign, identity = change[0], change[1:]
            if sign == "+":
                if self.leaders:
                    self.overlaps.append({*self.leaders, identity})
                self.leaders.add(identity)
            else:
                self.leaders.discard(identity)


class TestLeaderElection:
    @pytest.fixture
    def candidates(self, client: KubeClient, ns: str) -> Iterator[list[Candidate]]:
        created: list[Candidate] = []
        yield created
        for candidate in created:
            candidate.finish()

    def lease(self, client: KubeClient, ns: str) -> dict[str, Any]:
        spec: dict[str, Any] = client.get(LEASES, "jobmachine-leader", ns)["spec"]
        return spec

    def test_one_of_two_leads_and_the_other_takes_over_when_it_stops(
        self, client: KubeClient, ns: str, candidates: list[Candidate]
    ) -> None:
        leadership = Leadership()
        candidates += [Candidate(client, ns, name, leadership.track) for name in ("a", "b")]
        leader = eventually(lambda: next((c for c in candidates if c.started.is_set()), None))
        standby = next(c for c in candidates if c is not leader)
        renewals = {self.lease(client, ns)["renewTime"]}
        while len(renewals) < 4:  # the leader renews a few times; the standby must stay put
            renewals.add(eventually(
                lambda: self.lease(client, ns)["renewTime"] not in renewals
                and self.lease(client, ns)["renewTime"]
            ))
        assert self.lease(client, ns)["holderIdentity"] == leader.identity
        assert leader.elector.is_leader
        assert not standby.elector.is_leader
        assert not standby.started.is_set()

        leader.finish()
        assert leader.stopped.is_set()
        assert standby.started.wait(WAIT)
        spec = self.lease(client, ns)
        assert spec["holderIdentity"] == standby.identity
        assert spec["leaseTransitions"] == 1
        assert standby.elector.is_leader
        assert leadership.overlaps == []
        assert leadership.history == [f"+{leader.identity}", f"-{leader.identity}",
                                      f"+{standby.identity}"]

    def test_the_lease_has_the_coordination_fields(
        self, client: KubeClient, ns: str, candidates: list[Candidate]
    ) -> None:
        candidates.append(Candidate(client, ns, "solo", Leadership().track))
        assert candidates[0].started.wait(WAIT)
        spec = self.lease(client, ns)
        assert spec["holderIdentity"] == "solo"
        assert spec["leaseDurationSeconds"] == 2
        assert spec["leaseTransitions"] == 0
        for field in ("acquireTime", "renewTime"):
            assert time.strptime(spec[field], "%Y-%m-%dT%H:%M:%S.%fZ")

    def test_an_abandoned_lease_is_taken_over_once_it_expires(
        self, client: KubeClient, ns: str, candidates: list[Candidate]
    ) -> None:
        client.create(LEASES, {
            "metadata": {"name": "jobmachine-leader"},
            "spec": {"holderIdentity": "crashed", "leaseDurationSeconds": 1,
                     "acquireTime": "2026-01-01T00:00:00.000000Z",
                     "renewTime": "2026-01-01T00:00:00.000000Z", "leaseTransitions": 3},
        }, ns)
        candidates.append(Candidate(client, ns, "heir", Leadership().track))
        assert candidates[0].started.wait(WAIT)
        spec = self.lease(client, ns)
        assert (spec["holderIdentity"], spec["leaseTransitions"]) == ("heir", 4)

    def test_stopping_the_only_candidate_releases_the_lease(
        self, client: KubeClient, ns: str, candidates: list[Candidate]
    ) -> None:
        candidate = Candidate(client, ns, "solo", Leadership().track)
        assert candidate.started.wait(WAIT)
        candidate.finish()
        spec = self.lease(client, ns)
        assert spec["holderIdentity"] in ("", None)
        assert spec["leaseDurationSeconds"] == 1
