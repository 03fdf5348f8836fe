"""runPolicy.ttlSecondsAfterFinished across an engine restart: the TTL lives in status.

The engine that saw a job finish is stopped before the job's TTL ran out, so its timed
wake-up is lost with it. The next engine must work the deletion out from
status.completionTime alone: at once when the TTL has already expired, else by
scheduling it itself, and never before completionTime + ttl.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from engine.controller.reconcile.children import JobKey
from engine.kube.client import KubeClient
from engine.kube.timestamps import parse_time
from tests.integration.engine.helpers import (
    FAST,
    HOLD,
    PYTORCHJOBS,
    WAIT_S,
    EngineRun,
    Replica,
    condition,
    get_job,
    pods_of,
    pytorchjob,
    start_engine,
    status,
    wait_for,
    wait_until,
)

Obj = dict[str, Any]
StartEngine = Callable[[], EngineRun]


@pytest.fixture(scope="module")
def client(engineless: RunningApiServer) -> Iterator[KubeClient]:
    kube = KubeClient.from_kubeconfig(engineless.kubeconfig)
    yield kube
    kube.close()


@pytest.fixture
def engines(engineless: RunningApiServer) -> Iterator[StartEngine]:
    """Starts engines on their own clients; every one started is stopped at teardown."""
    started: list[EngineRun] = []

    def start() -> EngineRun:
        started.append(start_engine(KubeClient.from_kubeconfig(engineless.kubeconfig), FAST))
        return started[-1]

    yield start
    for run in started:
        run.stop()


def ttl_job(name: str, namespace: str, ttl: int, *, finalizers: tuple[str, ...] = ()) -> Obj:
    """One worker that exits 0; the job is deleted `ttl` seconds after it finished."""
    job = pytorchjob(name, namespace, workers=Replica(), finalizers=finalizers)
    job["spec"]["runPolicy"]["ttlSecondsAfterFinished"] = ttl
    return job


def succeeded(job: Obj | None) -> bool:
    """Finished successfully: condition Succeeded is True and completionTime is recorded."""
    done = condition(job, "Succeeded") if job is not None else None
    return done is not None and done["status"] == "True" and "completionTime" in status(job)


def finish_under(engine: EngineRun, client: KubeClient, namespace: str, job: Obj) -> Obj:
    """Create the job, let `engine` run it to success, then stop `engine`; the finished job."""
    name = job["metadata"]["name"]
    client.create(PYTORCHJOBS, job, namespace)
    done = wait_for(lambda: get_job(client, namespace, name), succeeded,
                    what=f"{namespace}/{name} Succeeded with a completionTime")
    engine.stop()
    assert done is not None
    return done


def expiry(job: Obj) -> datetime:
    """completionTime + ttlSecondsAfterFinished: when the job is due for deletion."""
    ttl = job["spec"]["runPolicy"]["ttlSecondsAfterFinished"]
    return parse_time(status(job)["completionTime"]) + timedelta(seconds=ttl)


def assert_not_deleting(client: KubeClient, namespace: str, name: str) -> Obj:
    """The job is there and nobody has asked to delete it; the job."""
    job = get_job(client, namespace, name)
    assert job is not None, f"{namespace}/{name} is gone"
    assert "deletionTimestamp" not in job["metadata"], job["metadata"]
    return job


def wait_until_gone(client: KubeClient, namespace: str, name: str) -> None:
    """The job is NotFound and the garbage collector took its pods."""
    wait_until(lambda: get_job(client, namespace, name) is None, what=f"{name} deleted")
    wait_until(lambda: not pods_of(client, namespace, name), what=f"{name}'s pods deleted")


def test_a_ttl_that_expired_while_no_engine_ran_is_applied_by_the_next(
    client: KubeClient, ns: str, engines: StartEngine
) -> None:
    finished = finish_under(engines(), client, ns, ttl_job("short", ns, ttl=2))
    assert_not_deleting(client, ns, "short")
    due = expiry(finished)
    wait_until(lambda: datetime.now(UTC) >= due, what="the TTL expired",
               timeout=(due - datetime.now(UTC)).total_seconds() + WAIT_S)
    assert_not_deleting(client, ns, "short")

    engines()

    wait_until_gone(client, ns, "short")


def test_a_ttl_still_running_at_restart_is_scheduled_by_the_next_engine(
    client: KubeClient, ns: str, engines: StartEngine, held: str
) -> None:
    """The new engine wakes itself at completionTime + ttl and deletes the job then, not before.

    It starts two seconds after completionTime, well before the 15-second TTL ends (room
    for a slow start on a loaded machine: a wake-up that already fired is gone). The
    HOLD finalizer keeps the deleted job readable, so its deletionTimestamp tells when
    the engine asked for the deletion.
    """
    finished = finish_under(engines(), client, ns, ttl_job(held, ns, ttl=15, finalizers=(HOLD,)))
    due = expiry(finished)
    # A later second than completionTime's, so a clock started at first sight would show.
    later = parse_time(status(finished)["completionTime"]) + timedelta(seconds=2)
    wait_until(lambda: datetime.now(UTC) >= later, what="two seconds after completionTime")

    second = engines()
    wait_until(lambda: second.engine.synced, what="the new engine's caches synced")
    key = JobKey("PyTorchJob", ns, held)

    def scheduled_or_asked() -> datetime | str | None:
        """The wake-up the new engine scheduled, or, once it has fired (a start slower
        than the TTL on a loaded machine), that the deletion was asked for."""
        when = second.engine.scheduler.next_wake(key, "ttl")
        if when is not None:
            return when
        job = get_job(client, ns, held)
        return "asked" if job is not None and "deletionTimestamp" in job["metadata"] else None

    seen = wait_for(scheduled_or_asked, lambda found: found is not None,
                    what="the new engine scheduled the TTL deletion")
    if seen != "asked":
        assert seen == due
        assert succeeded(assert_not_deleting(client, ns, held))

    # The ended job has only HOLD left (the engine let go of its own at the end), so wait
    # for the deletion itself.
    deleting = wait_for(lambda: get_job(client, ns, held),
                        lambda job: job is not None and "deletionTimestamp" in job["metadata"],
                        what="the TTL deletion asked for")
    assert deleting is not None
    assert deleting["metadata"]["finalizers"] == [HOLD]
    assert parse_time(deleting["metadata"]["deletionTimestamp"]) >= due
    assert deleting["metadata"]["uid"] == finished["metadata"]["uid"]

    client.patch(PYTORCHJOBS, held, {"metadata": {"finalizers": None}}, namespace=ns)
    wait_until_gone(client, ns, held)
