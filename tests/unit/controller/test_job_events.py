"""Which job and pod watch events queue a reconcile: not the echo of the engine's own write.

The reconcile that wrote a job's status (or its finalizer) already acted on what it wrote;
reconciling again for the watch event of that version costs CPU and finds nothing to do.
Anything someone else changed must still be reconciled, even when it arrives folded into
the version of our write (a relist after a gap in the watch).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client import Configuration

from engine.controller.reconcile.children import JOB_NAME_LABEL, TRACKING_FINALIZER, JobKey
from engine.controller.runtime.manager import Engine
from engine.kube.cache import Cache
from engine.kube.client import KubeClient
from engine.kube.resources import Resource
from engine.settings import EngineSettings

KEY = JobKey("PyTorchJob", "default", "train")


@pytest.fixture
def engine() -> Iterator[Engine]:
    configuration = Configuration()
    configuration.host = "https://127.0.0.1:1"  # never contacted: nothing is started
    client = KubeClient(configuration)
    yield Engine(client, EngineSettings())
    client.close()


def job(version: str, **metadata: Any) -> dict[str, Any]:
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": "train", "namespace": "default", "resourceVersion": version,
                         "generation": 1, **metadata},
            "spec": {}, "status": {"record": "{}"}}


def deliver(engine: Engine, event: str, old: dict[str, Any] | None,
            new: dict[str, Any] | None) -> None:
    engine._job_handler(KEY.kind)(event, old, new)  # what the job watch calls


def test_the_echo_of_our_own_status_write_queues_nothing(engine: Engine) -> None:
    engine.written.wrote(KEY.id, "12")
    deliver(engine, "MODIFIED", job("11"), job("12"))
    assert len(engine.queue) == 0


def test_someone_elses_version_queues_the_job(engine: Engine) -> None:
    engine.written.wrote(KEY.id, "12")
    deliver(engine, "MODIFIED", job("10"), job("11"))
    assert len(engine.queue) == 1


@pytest.mark.parametrize("change", [
    {"generation": 2}, {"labels": {"team": "a"}}, {"annotations": {"note": "x"}},
    {"deletionTimestamp": "2026-11-25T10:00:00Z"},
])
def test_a_change_folded_into_our_version_still_queues_the_job(
    engine: Engine, change: dict[str, Any]
) -> None:
    """After a gap in the watch, our version can carry another writer's change with it."""
    engine.written.wrote(KEY.id, "12")
    deliver(engine, "MODIFIED", job("10"), job("12", **copy.deepcopy(change)))
    assert len(engine.queue) == 1


def test_added_and_deleted_events_always_queue_the_job(engine: Engine) -> None:
    engine.written.wrote(KEY.id, "12")
    deliver(engine, "ADDED", None, job("12"))
    assert len(engine.queue) == 1


def pod(version: str, *finalizers: str, phase: str = "Succeeded", **metadata: Any
        ) -> dict[str, Any]:
    """A pod of the job, controlled by it."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "train-master-0", "namespace": "default",
                         "resourceVersion": version, "uid": "pod-uid",
                         "labels": {"jobmachine.dev/replica-type": "Master"},
                         "finalizers": list(finalizers),
                         "ownerReferences": [{"controller": True, "kind": KEY.kind,
                                              "name": KEY.name, "uid": "job-uid"}],
                         **metadata},
            "spec": {"nodeName": "node-1"}, "status": {"phase": phase}}


def deliver_pod(engine: Engine, event: str, old: dict[str, Any] | None,
                new: dict[str, Any] | None) -> None:
    engine.caches.jobs.setdefault(KEY.kind, Cache())  # the kind is watched
    engine._on_replica_object(event, old, new)  # what the pod watch calls


def test_a_pod_that_only_lost_the_tracking_finalizer_queues_nothing(engine: Engine) -> None:
    """The echo of the engine's release of a pod whose outcome the status holds: the pass
    that released it acted, and one more found nothing (then put itself off, the job's own
    write not yet in the cache, for a third)."""
    deliver_pod(engine, "MODIFIED", pod("5", TRACKING_FINALIZER, "other/keep"),
                pod("6", "other/keep"))
    assert len(engine.queue) == 0


@pytest.mark.parametrize(("old", "new"), [
    (pod("5", TRACKING_FINALIZER), pod("6", TRACKING_FINALIZER)),  # nothing released
    (pod("5", "other/keep"), pod("6")),  # another's finalizer
    (pod("5", TRACKING_FINALIZER), pod("6", phase="Failed")),  # and it ended otherwise
    (pod("5", TRACKING_FINALIZER), pod("6", deletionTimestamp="2026-11-25T10:00:00Z")),
    (pod("5", TRACKING_FINALIZER), pod("6", labels={"jobmachine.dev/replica-type": "W"})),
    (pod("5", TRACKING_FINALIZER, "other/keep"), pod("6", "other/keep", "other/new")),
])
def test_a_pod_that_changed_otherwise_queues_its_job(
        engine: Engine, old: dict[str, Any], new: dict[str, Any]) -> None:
    deliver_pod(engine, "MODIFIED", old, new)
    assert len(engine.queue) == 1


def test_a_pod_added_or_deleted_queues_its_job(engine: Engine) -> None:
    deliver_pod(engine, "ADDED", None, pod("5", TRACKING_FINALIZER))
    deliver_pod(engine, "DELETED", pod("6"), None)
    assert len(engine.queue) == 1  # one key, queued once
    assert engine.queue.get(timeout=0) == KEY


def service(version: str, *, owned: bool = True, replica: bool = True) -> dict[str, Any]:
    labels = {JOB_NAME_LABEL: KEY.name}
    if replica:
        labels["jobmachine.dev/replica-type"] = "Master"
    metadata: dict[str, Any] = {"name": "train-master-0", "namespace": "default",
                                "resourceVersion": version, "labels": labels}
    if owned:
        metadata["ownerReferences"] = [{"controller": True, "kind": KEY.kind,
                                        "name": KEY.name, "uid": "job-uid"}]
    return {"apiVersion": "v1", "kind": "Service", "metadata": metadata,
            "spec": {"clusterIP": "None"}}


def watching(engine: Engine) -> Engine:
    """The engine watching the job's kind, with the job in its cache."""
    jobs = engine.caches.jobs.setdefault(KEY.kind, Cache())
    jobs.apply("ADDED", job("1"))
    return engine


def test_a_replica_service_its_job_made_queues_nothing_when_it_appears(engine: Engine) -> None:
    """The engine's own create: no decision reads a Service, and the pass it queued found
    the replica's pod not yet seen and put itself off."""
    watching(engine)
    engine._on_child("ADDED", None, service("5"))
    assert len(engine.queue) == 0


@pytest.mark.parametrize(("event", "old", "new"), [
    ("ADDED", None, service("5", owned=False)),  # an orphan: adopted
    ("ADDED", None, service("5", replica=False)),  # a declared Service (a JobSet's)
    ("MODIFIED", service("5"), service("6")),
    ("DELETED", service("5"), None),  # made again
])
def test_any_other_service_event_queues_its_job(
        engine: Engine, event: str, old: dict[str, Any] | None,
        new: dict[str, Any] | None) -> None:
    watching(engine)._on_child(event, old, new)
    assert engine.queue.get(timeout=0) == KEY


def test_declared_services_are_read_from_the_services_watch(engine: Engine) -> None:
    """A machine that declares a Service (a JobSet's headless one) adds no second watch:
    every Service of the cluster would be listed, cached and decoded twice."""
    resource = Resource("", "v1", "services", "Service")
    engine.watch_objects({("v1", "Service"): resource})
    assert engine._object_informers == {}
    assert engine.caches.objects[("v1", "Service")] == (resource, engine.caches.services)
    engine.watch_objects({})
    assert engine.caches.objects == {}


def test_a_declared_service_queues_its_job_ahead_of_other_work(engine: Engine) -> None:
    """A declared object's job looks at once (urgent), as any declared object's does; a
    replica's Service queues its job as other work."""
    watching(engine)
    other = JobKey(KEY.kind, "default", "other")
    engine.queue.add(other)
    engine._on_child("ADDED", None, service("5", replica=False))
    assert engine.queue.get(timeout=0) == KEY
    engine.queue.done(KEY)
    engine._on_child("MODIFIED", service("5"), service("6"))
    assert engine.queue.get(timeout=0) == other
