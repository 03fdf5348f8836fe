"""runPolicy.pendingTimeoutSeconds: a replica Pending longer than that fails the job.

Every shipped machine gives the replica state Pending that timeout; the job fails with
reason PendingTimeout. The timer is kept in status.replicaTimers, so it survives an engine
restart (a new engine neither restarts it nor forgets it), it is dropped when the replica
leaves Pending, and a suspended job starts it afresh when it resumes. The replicas here are
kept Pending by a long init container.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from engine.controller.reconcile.record import read_record, state_of
from engine.kube.client import KubeClient, WatchStream
from engine.kube.resources import PODS, Resource
from engine.kube.timestamps import parse_time
from tests.integration.engine.helpers import (
    FAST,
    PYTORCHJOBS,
    Replica,
    condition,
    count_events,
    get_job,
    get_pod,
    history,
    job_events,
    job_path,
    new_namespace,
    pytorchjob,
    record,
    replica_path,
    replica_state,
    start_engine,
    status,
    stored,
    wait_for,
    wait_for_phase,
    wait_until,
    watching_pods,
)
from tests.integration.engine.timeouts_support import (
    StatusWatch,
    kept_pending,
    timer_of,
    watching_status,
    with_pending_timeout,
)

Obj = dict[str, Any]


@pytest.fixture(scope="module")
def server_client(engineless: RunningApiServer) -> Iterator[KubeClient]:
    """The tests' client of the engineless API server (the engines are started by hand)."""
    kube = KubeClient.from_kubeconfig(engineless.kubeconfig)
    yield kube
    kube.close()


@pytest.fixture
def server_ns(server_client: KubeClient) -> str:
    return new_namespace(server_client)


def stuck_worker(name: str, namespace: str, timeout_s: int) -> Obj:
    """One Worker whose pod stays Pending for a minute, with a Pending timeout of `timeout_s`."""
    job = pytorchjob(name, namespace, workers=Replica(run_s=60))
    return with_pending_timeout(kept_pending(job, "Worker"), timeout_s)


def transition_time(job: Obj, replica: str, target: str) -> datetime:
    """When the history says the replica entered `target` (the last time it did)."""
    times = [h["time"] for h in history(job)
             if h.get("replica") == replica and h["to"] == target]
    assert times, f"{replica} never entered {target}: {replica_path(job, replica)}"
    return parse_time(times[-1])


def first_timer(watch: StatusWatch) -> str:
    """Wait until the engine has written Worker-0's Pending timer; its start then."""
    timers = wait_for(lambda: [t for t in watch.timers("Worker", 0) if t is not None],
                      bool, what="a timer for Worker-0 in status.replicaTimers")
    return timers[0]


def timers_written(watch: StatusWatch) -> list[str]:
    """Every Worker-0 timer start the engine ever wrote, in order."""
    return [t for t in watch.timers("Worker", 0) if t is not None]


def target_while_failing(watch: StatusWatch, failed: Obj) -> Obj:
    """The FailureTarget condition of the last status the job had while Failing, before
    `failed` (Failed takes its place)."""
    failing = [s for s in watch.through(failed) if s.get("phase") == "Failing"]
    assert failing, "no status recorded the job Failing"
    target = condition({"status": failing[-1]}, "FailureTarget")
    assert target is not None, failing[-1]
    return target


def assert_failed_by_pending_timeout(client: KubeClient, job: Obj, timeout_s: int,
                                     target: Obj) -> None:
    """FailureTarget (`target`, while Failing) said PendingTimeout, and Failed took it over
    with that reason and message; one event for the replica, one for the job; no timer is
    left."""
    failed = condition(job, "Failed")
    assert failed is not None and (failed["status"], failed["reason"]) == ("True", "PendingTimeout")
    assert (target["status"], target["reason"]) == ("True", "PendingTimeout")
    assert condition(job, "FailureTarget") is None
    assert failed["message"] == target["message"]
    assert f"stayed Pending longer than {timeout_s}s" in failed["message"]
    assert job_path(job) == ["Created", "Failing", "Failed"]
    assert replica_path(job, "Worker-0") == ["Pending", "PendingTimedOut"]
    assert stored(job)["replicas"] == {"Worker": {"PendingTimedOut": "0"}}
    assert status(job).get("restarts", 0) == 0
    assert not record(job).replica_timers

    wait_until(lambda: count_events(job_events(client, job), "PendingTimeout") == 2,
               what="two PendingTimeout events (the replica's and the job's)")
    events = [e for e in job_events(client, job) if e["reason"] == "PendingTimeout"]
    assert [e.get("count", 1) for e in events] == [1, 1]
    [replica_event] = [e for e in events if e["message"].startswith("Worker-0")]
    [job_event] = [e for e in events if e is not replica_event]
    assert replica_event["message"] == (
        f"Worker-0 stayed Pending longer than {timeout_s}s.")
    assert job_event["type"] == "Warning"
    assert job_event["message"].startswith(f"PyTorchJob {job['metadata']['name']} has failed")


def test_a_replica_pending_past_its_timeout_fails_the_job(client: KubeClient, ns: str) -> None:
    """Worker-0's pod is still initialising after 2 s -> Failing, then Failed (PendingTimeout),
    at the earliest when its timer ran out; its pod was never recreated."""
    with watching_pods(client, ns) as pods, watching_status(client, PYTORCHJOBS, ns,
                                                            "stuck") as watch:
        client.create(PYTORCHJOBS, stuck_worker("stuck", ns, 2), ns)
        since = first_timer(watch)
        failed = wait_for_phase(client, ns, "stuck", "Failed", timeout=30)
        assert pods.creations() == {"Worker-0": 1}
        target = target_while_failing(watch, failed)

    assert_failed_by_pending_timeout(client, failed, 2, target)
    assert timers_written(watch) == [since]
    assert transition_time(failed, "Worker-0", "PendingTimedOut") >= (
        parse_time(since) + timedelta(seconds=2))
    # The timed-out replica's pod is deleted, so it cannot start later for a failed job;
    # Failed waited for it to be gone.
    assert get_pod(client, ns, "stuck-worker-0") is None


def test_running_before_the_timeout_cancels_the_timer(client: KubeClient, ns: str) -> None:
    """Timeout 3 s, the pod starts at once and runs 6 s: the timer is dropped when Worker-0
    runs, so the job succeeds; no PendingTimeout."""
    job = with_pending_timeout(pytorchjob("quick", ns, workers=Replica(run_s=6)), 3)
    with watching_status(client, PYTORCHJOBS, ns, "quick") as watch:
        client.create(PYTORCHJOBS, job, ns)
        since = first_timer(watch)
        done = wait_for_phase(client, ns, "quick", "Succeeded", timeout=30)

    # The scenario: the timer would have run out while the replica ran.
    assert transition_time(done, "Worker-0", "Succeeded") >= (
        parse_time(since) + timedelta(seconds=3))
    assert replica_path(done, "Worker-0") == ["Pending", "Running", "Succeeded"]
    running = [s for s in watch.seen() if replica_state({"status": s}, "Worker", 0) == "Running"]
    assert running, "no status recorded Worker-0 Running"
    assert all(not read_record(s).replica_timers for s in running), running
    assert timers_written(watch) == [since]
    assert not record(done).replica_timers
    succeeded = condition(done, "Succeeded")
    assert succeeded is not None and succeeded["reason"] == "PyTorchJobSucceeded"
    assert condition(done, "FailureTarget") is None
    assert count_events(job_events(client, done), "PendingTimeout") == 0


def test_suspend_and_resume_restart_the_timer(client: KubeClient, ns: str) -> None:
    """Suspended while Pending: the timer is dropped; resumed a second later: a new timer
    starts, and the job fails when that one runs out."""
    with watching_status(client, PYTORCHJOBS, ns, "paused") as watch:
        client.create(PYTORCHJOBS, stuck_worker("paused", ns, 6), ns)
        before = first_timer(watch)
        client.patch(PYTORCHJOBS, "paused", {"spec": {"runPolicy": {"suspend": True}}},
                     namespace=ns)
        suspended = wait_for_phase(client, ns, "paused", "Suspended")
        assert not record(suspended).replica_timers
        time.sleep(1.1)  # timer starts have a resolution of one second
        client.patch(PYTORCHJOBS, "paused", {"spec": {"runPolicy": {"suspend": False}}},
                     namespace=ns)
        failed = wait_for_phase(client, ns, "paused", "Failed", timeout=30)
        target = target_while_failing(watch, failed)

    timers = timers_written(watch)
    assert len(timers) == 2 and timers[0] == before and timers[1] > before, timers
    assert all(not read_record(s).replica_timers
               for s in watch.seen() if state_of(s) == "Suspended")
    assert transition_time(failed, "Worker-0", "PendingTimedOut") >= (
        parse_time(timers[1]) + timedelta(seconds=6))
    assert target["reason"] == "PendingTimeout"
    assert condition(failed, "FailureTarget") is None
    final = condition(failed, "Failed") or {}
    assert (final.get("reason"), final.get("message")) == (target["reason"], target["message"])
    assert status(failed).get("restarts", 0) == 0
    assert job_path(failed) == ["Created", "Suspended", "Created", "Failing", "Failed"]


def _wait_past(moment: datetime) -> None:
    """Sleep until the wall clock is past `moment` (a scenario step, not an assertion)."""
    time.sleep(max(0.0, (moment - datetime.now(UTC)).total_seconds()) + 0.5)


def test_the_timer_survives_an_engine_stopped_until_after_it_ran_out(
    engineless: RunningApiServer, server_client: KubeClient, server_ns: str
) -> None:
    """The engine stops while Worker-0 is Pending; it starts again after the timeout passed
    with no engine running: the new engine fails the job from the recorded timer."""
    client, ns = server_client, server_ns
    with watching_status(client, PYTORCHJOBS, ns, "orphaned") as watch:
        first = start_engine(KubeClient.from_kubeconfig(engineless.kubeconfig), FAST)
        try:
            client.create(PYTORCHJOBS, stuck_worker("orphaned", ns, 3), ns)
            since = first_timer(watch)
        finally:
            first.stop()
        assert replica_state(get_job(client, ns, "orphaned"), "Worker", 0) == "Pending"
        _wait_past(parse_time(since) + timedelta(seconds=3))
        assert status(get_job(client, ns, "orphaned"))["phase"] != "Failed"
        second = start_engine(KubeClient.from_kubeconfig(engineless.kubeconfig), FAST)
        try:
            failed = wait_for_phase(client, ns, "orphaned", "Failed", timeout=30)
            assert_failed_by_pending_timeout(client, failed, 3,
                                             target_while_failing(watch, failed))
        finally:
            second.stop()

    assert timers_written(watch) == [since]


def test_the_timer_is_not_restarted_by_an_engine_started_before_it_runs_out(
    engineless: RunningApiServer, server_client: KubeClient, server_ns: str
) -> None:
    """The engine stops while Worker-0 is Pending and starts again at once: the new engine
    keeps the recorded timer (never writes another) and fails the job when it runs out."""
    client, ns = server_client, server_ns
    with watching_status(client, PYTORCHJOBS, ns, "resumed") as watch:
        first = start_engine(KubeClient.from_kubeconfig(engineless.kubeconfig), FAST)
        try:
            client.create(PYTORCHJOBS, stuck_worker("resumed", ns, 10), ns)
            since = first_timer(watch)
        finally:
            first.stop()
        second = start_engine(KubeClient.from_kubeconfig(engineless.kubeconfig), FAST)
        try:
            # The scenario: the new engine runs before the timer runs out.
            assert datetime.now(UTC) < parse_time(since) + timedelta(seconds=10), (
                "stopping and starting the engine took longer than the timeout")
            pending = get_job(client, ns, "resumed")
            assert replica_state(pending, "Worker", 0) == "Pending"
            assert timer_of(status(pending), "Worker", 0) == since
            failed = wait_for_phase(client, ns, "resumed", "Failed", timeout=30)
            assert_failed_by_pending_timeout(client, failed, 10,
                                             target_while_failing(watch, failed))
        finally:
            second.stop()

    assert timers_written(watch) == [since]
    assert transition_time(failed, "Worker-0", "PendingTimedOut") >= (
        parse_time(since) + timedelta(seconds=10))


class _LateStream:
    """A watch stream whose ADDED events of pods named `prefix`... arrive `delay_s` late."""

    def __init__(self, stream: WatchStream, prefix: str, delay_s: float) -> None:
        self._stream, self._prefix, self._delay_s = stream, prefix, delay_s

    def __iter__(self) -> _LateStream:
        return self

    def __next__(self) -> Obj:
        event = next(self._stream)
        name = ((event.get("object") or {}).get("metadata") or {}).get("name", "")
        if event.get("type") == "ADDED" and name.startswith(self._prefix):
            time.sleep(self._delay_s)
        return event

    def close(self) -> None:
        self._stream.close()


class _LateSeeingClient(KubeClient):
    """An engine's client whose pod watch shows the new pods of one job late (a loaded
    server or a slow network): the cache lacks a pod the engine has created."""

    prefix = "late-"
    delay_s = 4.0

    def watch(self, res: Resource, namespace: str | None = None, **kwargs: Any) -> Any:
        stream = super().watch(res, namespace, **kwargs)
        return _LateStream(stream, self.prefix, self.delay_s) if res == PODS else stream


def test_a_pod_the_watch_shows_late_is_deleted_before_the_job_fails(
    engineless: RunningApiServer, server_client: KubeClient, server_ns: str
) -> None:
    """The engine's pod watch shows Worker-0's pod 4 s after its creation, the Pending
    timeout is 2 s: when the timer runs out the engine's cache has no pod, yet the pod
    exists. The job is Failing until the pod is seen and deleted, then Failed; it never
    says Failed with the pod left behind."""
    client, ns = server_client, server_ns
    engine = start_engine(_LateSeeingClient.from_kubeconfig(engineless.kubeconfig), FAST)
    try:
        with watching_status(client, PYTORCHJOBS, ns, "late") as watch:
            client.create(PYTORCHJOBS, stuck_worker("late", ns, 2), ns)
            failed = wait_for_phase(client, ns, "late", "Failed", timeout=30)
            target = target_while_failing(watch, failed)
        assert_failed_by_pending_timeout(client, failed, 2, target)
        assert get_pod(client, ns, "late-worker-0") is None
    finally:
        engine.stop()
