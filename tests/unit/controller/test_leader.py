"""Leader election on a Lease: acquire, renew, lose, take over after expiry, release.

The lease lives in a fake client with resourceVersion preconditions; lease time is a fake
clock that only the tests move, while the elector's pauses between attempts are real but tiny.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from engine.controller.coordination.leader import LeaderElector, micro_time
from engine.kube.errors import AlreadyExists, ApiError, Conflict, NotFound, Unavailable
from engine.kube.resources import LEASES, Resource
from tests.polling import eventually

from .conftest import FakeClock

WAIT = 10.0  # generous bound for a condition to become true; never asserted as a duration
T0 = 1_800_000_000.0


class FakeLeaseClient:
    """One Lease with resourceVersion checks; `log` interleaves writes with the callbacks."""

    def __init__(self, log: list[str]) -> None:
        self.lease: dict[str, Any] | None = None
        self.version = 0
        self.log = log
        self.calls: list[str] = []
        self.failure: ApiError | None = None
        self.before_replace: Callable[[], None] | None = None
        self.after_get: Callable[[], None] | None = None
        self.lock = threading.RLock()

    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        assert (res, name, namespace) == (LEASES, "engine", "system")
        with self.lock:
            self.calls.append("get")
            if self.failure is not None:
                raise self.failure
            try:
                if self.lease is None:
                    raise NotFound(404, "NotFound", "no lease", {})
                return copy.deepcopy(self.lease)
            finally:
                if self.after_get is not None:
                    self.after_get()

    def create(
        self, res: Resource, body: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        with self.lock:
            self.calls.append("create")
            if self.failure is not None:
                raise self.failure
            if self.lease is not None:
                raise AlreadyExists(409, "AlreadyExists", "exists", {})
            assert body["metadata"] == {"name": "engine", "namespace": "system"}
            return self._store(body)

    def replace(
        self, res: Resource, name: str, body: dict[str, Any], *, namespace: str | None = None,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        with self.lock:
            self.calls.append("replace")
            if self.before_replace is not None:
                self.before_replace()
            if self.failure is not None:
                raise self.failure
            assert self.lease is not None
            if body["metadata"].get("resourceVersion") != str(self.version):
                raise Conflict(409, "Conflict", "the object has been modified", {})
            return self._store(body)

    def write(self, **spec: Any) -> None:
        """Another process writes the lease."""
        with self.lock:
            base = self.lease or {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                  "metadata": {"name": "engine", "namespace": "system"}}
            self._store({**base, "spec": spec})

    def spec(self) -> dict[str, Any]:
        with self.lock:
            assert self.lease is not None
            return dict(self.lease["spec"])

    def count(self, call: str) -> int:
        with self.lock:
            return self.calls.count(call)

    def _store(self, body: dict[str, Any]) -> dict[str, Any]:
        self.version += 1
        stored = copy.deepcopy(body)
        stored["metadata"]["resourceVersion"] = str(self.version)
        self.lease = stored
        self.log.append(f"write holder={stored['spec'].get('holderIdentity')!r}")
        return copy.deepcopy(stored)


class Campaign:
    """An elector running in a thread, with its callbacks recorded."""

    def __init__(self, api: FakeLeaseClient, clock: FakeClock, identity: str = "me") -> None:
        self.api = api
        self.elector = LeaderElector(
            api, namespace="system", name="engine", identity=identity,
            lease_duration_s=15, renew_deadline_s=10, retry_period_s=0.01, clock=clock,
        )
        self.started = threading.Event()
        self.stopped = threading.Event()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        self.elector.run(
            on_started_leading=self._on_started, on_stopped_leading=self._on_stopped,
            stop=self.stop,
        )

    def _on_started(self) -> None:
        self.api.log.append("started")
        self.started.set()

    def _on_stopped(self) -> None:
        self.api.log.append("stopped")
        self.stopped.set()

    def more_attempts(self, n: int = 3) -> None:
        """Wait until the elector has read the lease `n` more times."""
        target = self.api.count("get") + n
        eventually(lambda: self.api.count("get") >= target)

    def finish(self) -> None:
        self.stop.set()
        self.thread.join(WAIT)
        assert not self.thread.is_alive()


@pytest.fixture
def clock() -> FakeClock:
    clock = FakeClock()
    clock.now = T0
    return clock


@pytest.fixture
def api() -> FakeLeaseClient:
    return FakeLeaseClient([])


@pytest.fixture
def campaign(api: FakeLeaseClient, clock: FakeClock) -> Iterator[Campaign]:
    campaign = Campaign(api, clock)
    yield campaign
    campaign.finish()


def lead(campaign: Campaign) -> None:
    campaign.thread.start()
    assert campaign.started.wait(WAIT)


class TestAcquire:
    def test_creates_the_lease_when_there_is_none(
        self, campaign: Campaign, api: FakeLeaseClient
    ) -> None:
        lead(campaign)
        assert campaign.elector.is_leader
        assert api.spec() == {
            "holderIdentity": "me",
            "leaseDurationSeconds": 15,
            "acquireTime": micro_time(T0),
            "renewTime": micro_time(T0),
            "leaseTransitions": 0,
        }
        assert micro_time(T0) == "2027-01-15T08:00:00.000000Z"

    def test_takes_a_released_lease_at_once(
        self, campaign: Campaign, api: FakeLeaseClient
    ) -> None:
        api.write(holderIdentity="", leaseDurationSeconds=1, leaseTransitions=4)
        lead(campaign)
        assert api.spec()["holderIdentity"] == "me"
        assert api.spec()["leaseTransitions"] == 5

    def test_waits_for_a_held_lease_to_expire_unrenewed_then_takes_it_over(
        self, campaign: Campaign, api: FakeLeaseClient, clock: FakeClock
    ) -> None:
        api.write(holderIdentity="other", leaseDurationSeconds=15, leaseTransitions=2,
                  acquireTime="x", renewTime="x")
        campaign.thread.start()
        campaign.more_attempts()
        clock.advance(14)
        campaign.more_attempts()
        assert not campaign.started.is_set()
        assert not campaign.elector.is_leader
        assert api.count("replace") == 0
        clock.advance(1)
        assert campaign.started.wait(WAIT)
        assert api.spec() == {
            "holderIdentity": "me",
            "leaseDurationSeconds": 15,
            "acquireTime": micro_time(T0 + 15),
            "renewTime": micro_time(T0 + 15),
            "leaseTransitions": 3,
        }

    def test_a_renewal_by_the_holder_restarts_the_wait(
        self, campaign: Campaign, api: FakeLeaseClient, clock: FakeClock
    ) -> None:
        api.write(holderIdentity="other", leaseDurationSeconds=15, renewTime="r1")
        campaign.thread.start()
        campaign.more_attempts()
        clock.advance(10)
        api.write(holderIdentity="other", leaseDurationSeconds=15, renewTime="r2")
        campaign.more_attempts()
        clock.advance(10)
        campaign.more_attempts()
        assert not campaign.started.is_set()
        clock.advance(5)
        assert campaign.started.wait(WAIT)

    def test_expiry_follows_the_holders_lease_duration(
        self, campaign: Campaign, api: FakeLeaseClient, clock: FakeClock
    ) -> None:
        api.write(holderIdentity="other", leaseDurationSeconds=60)
        campaign.thread.start()
        campaign.more_attempts()
        clock.advance(30)
        campaign.more_attempts()
        assert not campaign.started.is_set()
        clock.advance(30)
        assert campaign.started.wait(WAIT)

    def test_a_conflict_means_someone_else_won(
        self, campaign: Campaign, api: FakeLeaseClient, clock: FakeClock
    ) -> None:
        api.write(holderIdentity="other", leaseDurationSeconds=15)

        def rival_wins() -> None:
            api.before_replace = None
            api.write(holderIdentity="rival", leaseDurationSeconds=15)

        campaign.thread.start()
        campaign.more_attempts()
        api.before_replace = rival_wins
        clock.advance(15)
        eventually(lambda: api.count("replace") == 1)
        campaign.more_attempts()
        assert not campaign.started.is_set()
        assert api.spec()["holderIdentity"] == "rival"

    def test_a_lease_created_meanwhile_is_not_overwritten(
        self, campaign: Campaign, api: FakeLeaseClient
    ) -> None:
        def rival_creates() -> None:
            if api.lease is None:
                api.write(holderIdentity="rival", leaseDurationSeconds=15)

        api.after_get = rival_creates
        campaign.thread.start()
        campaign.more_attempts()
        assert not campaign.started.is_set()
        assert api.spec()["holderIdentity"] == "rival"

    def test_stop_while_campaigning_returns_without_callbacks(
        self, campaign: Campaign, api: FakeLeaseClient
    ) -> None:
        api.write(holderIdentity="other", leaseDurationSeconds=15)
        campaign.thread.start()
        campaign.more_attempts()
        campaign.finish()
        assert api.log == ["write holder='other'"]


class TestRenew:
    def test_renews_every_retry_period_keeping_acquire_time(
        self, campaign: Campaign, api: FakeLeaseClient, clock: FakeClock
    ) -> None:
        lead(campaign)
        clock.advance(2)
        eventually(lambda: api.spec()["renewTime"] == micro_time(T0 + 2))
        assert api.spec()["acquireTime"] == micro_time(T0)
        assert api.spec()["leaseTransitions"] == 0
        assert campaign.elector.is_leader

    def test_keeps_leading_through_failures_shorter_than_the_deadline(
        self, campaign: Campaign, api: FakeLeaseClient, clock: FakeClock
    ) -> None:
        lead(campaign)
        api.failure = Unavailable(503, "ServiceUnavailable", "busy", {})
        campaign.more_attempts()
        clock.advance(9)
        campaign.more_attempts()
        assert campaign.elector.is_leader
        assert not campaign.stopped.is_set()
        api.failure = None
        clock.advance(0.5)
        eventually(lambda: api.spec()["renewTime"] == micro_time(T0 + 9.5))
        clock.advance(9)
        campaign.more_attempts()
        assert campaign.elector.is_leader


class TestLose:
    def test_no_renewal_within_the_deadline_stops_leading(
        self, campaign: Campaign, api: FakeLeaseClient, clock: FakeClock
    ) -> None:
        lead(campaign)
        api.failure = Unavailable(503, "ServiceUnavailable", "busy", {})
        campaign.more_attempts()
        clock.advance(10)
        assert campaign.stopped.wait(WAIT)
        campaign.thread.join(WAIT)
        assert not campaign.thread.is_alive()  # returned by itself, without `stop`
        assert not campaign.elector.is_leader
        assert api.log[-1] == "stopped"
        assert "write holder=''" not in api.log  # a lost lease is not ours to release

    def test_a_lease_taken_by_another_stops_leading_at_once(
        self, campaign: Campaign, api: FakeLeaseClient
    ) -> None:
        lead(campaign)
        api.write(holderIdentity="other", leaseDurationSeconds=15)
        assert campaign.stopped.wait(WAIT)
        campaign.thread.join(WAIT)
        assert not campaign.thread.is_alive()
        assert api.spec()["holderIdentity"] == "other"
        assert api.log[-1] == "stopped"

    def test_a_conflict_while_renewing_is_retried(
        self, campaign: Campaign, api: FakeLeaseClient, clock: FakeClock
    ) -> None:
        lead(campaign)
        api.failure = Conflict(409, "Conflict", "modified", {})
        campaign.more_attempts()
        api.failure = None
        clock.advance(1)
        eventually(lambda: api.spec()["renewTime"] == micro_time(T0 + 1))
        assert campaign.elector.is_leader


class TestRelease:
    def test_stop_stops_the_work_then_releases_the_lease(
        self, campaign: Campaign, api: FakeLeaseClient, clock: FakeClock
    ) -> None:
        lead(campaign)
        clock.advance(3)
        campaign.finish()
        assert api.log[-2:] == ["stopped", "write holder=''"]
        assert set(api.log[:-2]) == {"write holder='me'", "started"}
        assert api.spec() == {
            "holderIdentity": "",
            "leaseDurationSeconds": 1,
            "acquireTime": micro_time(T0 + 3),
            "renewTime": micro_time(T0 + 3),
            "leaseTransitions": 0,
        }
        assert not campaign.elector.is_leader

    def test_a_released_lease_goes_to_the_next_candidate(
        self, campaign: Campaign, api: FakeLeaseClient, clock: FakeClock
    ) -> None:
        lead(campaign)
        standby = Campaign(api, clock, identity="standby")
        standby.thread.start()
        standby.more_attempts()
        assert not standby.started.is_set()
        campaign.finish()
        assert standby.started.wait(WAIT)
        assert api.spec()["holderIdentity"] == "standby"
        assert api.spec()["leaseTransitions"] == 1
        standby.finish()


class TestCallbacks:
    def test_a_failing_start_callback_does_not_end_the_election(
        self, api: FakeLeaseClient, clock: FakeClock
    ) -> None:
        elector = LeaderElector(
            api, namespace="system", name="engine", identity="me",
            lease_duration_s=15, renew_deadline_s=10, retry_period_s=0.01, clock=clock,
        )
        stop = threading.Event()
        stopped = threading.Event()

        def boom() -> None:
            raise RuntimeError("cannot start")

        thread = threading.Thread(
            target=elector.run,
            kwargs={"on_started_leading": boom, "on_stopped_leading": stopped.set, "stop": stop},
        )
        thread.start()
        eventually(lambda: elector.is_leader)
        clock.advance(5)
        eventually(lambda: api.spec()["renewTime"] == micro_time(T0 + 5))
        stop.set()
        thread.join(WAIT)
        assert stopped.is_set()
        assert api.spec()["holderIdentity"] == ""

    @pytest.mark.parametrize(
        ("lease", "renew", "retry"), [(10, 10, 2), (15, 2, 2), (15, 10, 0), (10, 15, 2)]
    )
    def test_inconsistent_timings_are_refused(
        self, api: FakeLeaseClient, lease: float, renew: float, retry: float
    ) -> None:
        with pytest.raises(ValueError):
            LeaderElector(
                api, namespace="system", name="engine", identity="me",
                lease_duration_s=lease, renew_deadline_s=renew, retry_period_s=retry,
            )

    def test_an_identity_is_required(self, api: FakeLeaseClient) -> None:
        with pytest.raises(ValueError):
            LeaderElector(api, namespace="system", name="engine", identity="")
