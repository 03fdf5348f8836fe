"""The engine stopped mid-run and started again: status is the write-ahead log.

A new engine reads every job's state back from its status, so no transition is lost or
repeated: never two pods for one replica index at any time, and restarts and successes
are counted exactly once, whether the old engine stopped cleanly or died right after a
status write (before it could act on it).
"""

from __future__ import annotations

import re
import ssl
import threading
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from engine.kube.client import KubeClient
from engine.kube.resources import Resource
from tests.integration.engine.helpers import (
    CLEANUP,
    FAST,
    PYTORCHJOBS,
    PodWatch,
    Replica,
    get_job,
    history,
    pytorchjob,
    record,
    replica_path,
    start_engine,
    status,
    stored,
    wait_for_phase,
    wait_until,
    watching_pods,
)
from tests.integration.engine.helpers import (
    pytorchjob as make_pytorchjob,
)

Obj = dict[str, Any]


class EngineDiedError(Exception):
    """Raised for every write of an engine that has 'died': the server never sees them."""


class DyingClient(KubeClient):
    """A client whose engine dies right after the first status write `fatal` accepts.

    Every write after that one fails before reaching the server, exactly as if the
    process had been killed between writing status and acting on it.
    """

    fatal: Callable[[Obj], bool]
    died: threading.Event

    def _alive(self) -> None:
        if self.died.is_set():
            raise EngineDiedError("this engine is dead")

    def create(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
        self._alive()
        return super().create(res, body, namespace)

    def patch(self, res: Resource, name: str, body: Any, **kwargs: Any) -> Obj:
        self._alive()
        return super().patch(res, name, body, **kwargs)

    def delete(self, res: Resource, name: str, namespace: str | None = None,
               **kwargs: Any) -> None:
        self._alive()
        super().delete(res, name, namespace, **kwargs)

    def replace(self, res: Resource, name: str, body: Obj, **kwargs: Any) -> Obj:
        self._alive()
        written = super().replace(res, name, body, **kwargs)
        if kwargs.get("subresource") == "status" and self.fatal(written):
            self.died.set()
        return written


def dying_client(server: RunningApiServer, fatal: Callable[[Obj], bool]) -> DyingClient:
    client = DyingClient.from_kubeconfig(server.kubeconfig)
    client.fatal, client.died = fatal, threading.Event()
    return client


@pytest.fixture(scope="module")
def client(engineless: RunningApiServer) -> Iterator[KubeClient]:
    kube = KubeClient.from_kubeconfig(engineless.kubeconfig)
    yield kube
    kube.close()


def killed_workers(ns: str) -> Obj:
    """Three workers, each killed (137) once and then exiting 0; the job needs all three."""
    return pytorchjob("train", ns, workers=Replica(3, codes="137,0", policy="ExitCode", run_s=0.5))


def assert_exact_counts(job: Obj, pods: PodWatch) -> None:
    """Every worker restarted once and succeeded once; two pods each, never two at once."""
    done = status(job)
    assert stored(job)["replicas"] == {"Worker": {"Succeeded": "0-2"}}
    assert done.get("restarts", 0) == 3
    assert {i: r[0] for i, r in stored(job)["restarts"]["Worker"].items()} == {
        "0": 1, "1": 1, "2": 1}
    for worker in ("Worker-0", "Worker-1", "Worker-2"):
        path = replica_path(job, worker)
        story = [(h["from"], h["to"], h["reason"]) for h in history(job)
                 if h.get("replica") == worker]
        assert (path[0], path.count("Restarting"), path[-1]) == ("Pending", 1, "Succeeded"), story
    into: dict[tuple[str, str], int] = {}
    for (level, _, target, _), count in record(job).transition_counts.items():
        into[(level, target)] = into.get((level, target), 0) + count
    assert into[("replica", "Restarting")] == 3
    assert into[("replica", "Succeeded")] == 3
    assert into[("job", "Succeeded")] == 1
    assert pods.creations() == {"Worker-0": 2, "Worker-1": 2, "Worker-2": 2}
    assert max(pods.most_at_once.values()) == 1


def test_stopped_mid_run_and_started_again(
    engineless: RunningApiServer, client: KubeClient, ns: str
) -> None:
    with watching_pods(client, ns) as pods:
        first = start_engine(KubeClient.from_kubeconfig(engineless.kubeconfig), FAST)
        try:
            client.create(PYTORCHJOBS, killed_workers(ns), ns)
            wait_until(lambda: status(get_job(client, ns, "train")).get("restarts"),
                     what="a first restart recorded")
        finally:
            first.stop()
        second = start_engine(KubeClient.from_kubeconfig(engineless.kubeconfig), FAST)
        try:
            job = wait_for_phase(client, ns, "train", "Succeeded")
        finally:
            second.stop()
    assert_exact_counts(job, pods)


@pytest.mark.parametrize(
    "fatal",
    [
        pytest.param(lambda job: True, id="after-the-first-status-write"),
        pytest.param(lambda job: job["status"].get("phase") == "Running",
                     id="after-writing-running"),
        pytest.param(lambda job: job["status"].get("restarts", 0) >= 1,
                     id="after-writing-a-restart"),
    ],
)
def test_died_right_after_a_status_write(
    engineless: RunningApiServer, client: KubeClient, ns: str, fatal: Callable[[Obj], bool]
) -> None:
    with watching_pods(client, ns) as pods:
        dying = dying_client(engineless, fatal)
        first = start_engine(dying, FAST)
        try:
            client.create(PYTORCHJOBS, killed_workers(ns), ns)
            wait_until(dying.died.is_set, what="the engine died")
        finally:
            first.stop()
        second = start_engine(KubeClient.from_kubeconfig(engineless.kubeconfig), FAST)
        try:
            job = wait_for_phase(client, ns, "train", "Succeeded")
        finally:
            second.stop()
    assert_exact_counts(job, pods)


def _writes_by(server: RunningApiServer, client_name: str) -> dict[str, int]:
    """The server's count of create/update/patch/delete requests of one client, by resource."""
    request = urllib.request.Request(
        server.url + "/metrics", headers={"Authorization": f"Bearer {server.token}"})
    context = ssl.create_default_context(cafile=str(server.ca_file)) if server.ca_file else None
    with urllib.request.urlopen(request, context=context) as response:
        text = response.read().decode()
    writes: dict[str, int] = {}
    pattern = (rf'apiserver_request_total\{{client="{client_name}",verb="(create|update|patch|'
               r'delete)",resource="([^"]*)",subresource="([^"]*)",code="\d+"\} (\d+)')
    for verb, resource, subresource, count in re.findall(pattern, text):
        key = f"{verb} {resource}{'/' + subresource if subresource else ''}"
        writes[key] = writes.get(key, 0) + int(count)
    return writes


def test_a_restart_over_finished_jobs_writes_nothing(
    engineless: RunningApiServer, client: KubeClient, ns: str
) -> None:
    """A new engine reads finished jobs back and has nothing to write: no status rewritten
    (it builds the same status), no finalizer, no event, not even its own namespace."""
    first = start_engine(KubeClient.from_kubeconfig(engineless.kubeconfig), FAST)
    try:
        names = [f"done-{i}" for i in range(3)]
        for name in names:
            client.create(PYTORCHJOBS, make_pytorchjob(name, ns, master=Replica()), ns)
        for name in names:
            wait_for_phase(client, ns, name, "Succeeded")
    finally:
        first.stop()
    second = start_engine(
        KubeClient.from_kubeconfig(engineless.kubeconfig, user_agent="restarted"), FAST)
    try:
        queue = second.engine.queue
        wait_until(lambda: second.engine.synced and queue.metrics().processed >= len(names)
                   and len(queue) == 0, what="every job reconciled once by the new engine")
    finally:
        second.stop()
    assert _writes_by(engineless, "restarted") == {}


def test_a_finished_job_lets_go_of_its_finalizer(
    engineless: RunningApiServer, client: KubeClient, ns: str
) -> None:
    """As a Kubernetes Job: once it has ended (its clean-up done by its clean-pod policy),
    deleting it needs no engine, so removing the engine never leaves jobs stuck."""
    engine = start_engine(KubeClient.from_kubeconfig(engineless.kubeconfig), FAST)
    try:
        client.create(PYTORCHJOBS, pytorchjob("done", ns, master=Replica()), ns)
        wait_until(lambda: (get_job(client, ns, "done") or {}).get("status", {}).get("phase")
                   == "Succeeded", what="the job succeeded")
        wait_until(lambda: CLEANUP not in ((get_job(client, ns, "done") or {})["metadata"].get(
            "finalizers") or []), what="the cleanup finalizer removed")
    finally:
        engine.stop()
    client.delete(PYTORCHJOBS, "done", ns)  # no engine runs now
    wait_until(lambda: get_job(client, ns, "done") is None, what="the job is gone")
