"""The objects jobs name through governs.references (a TrainJob's runtime): found in the
cache of a watch started the first time a job names their kind, and every change to one
(its creation too) queuing exactly the jobs that name it now. The informer is a fake that
the test drives, so no thread runs: the test plays the watch's events itself."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from engine.controller.reconcile.children import JobKey
from engine.controller.runtime import references
from engine.controller.runtime.references import ReferenceWatches
from engine.definition import ReferenceTarget
from engine.kube.cache import Cache
from engine.kube.resources import Resource

GROUP = "trainer.kubeflow.org"
V1 = f"{GROUP}/v1alpha1"
CLUSTER_RUNTIMES = Resource(GROUP, "v1alpha1", "clustertrainingruntimes",
                            "ClusterTrainingRuntime", namespaced=False)
RUNTIMES = Resource(GROUP, "v1alpha1", "trainingruntimes", "TrainingRuntime")
SERVED = {(V1, "ClusterTrainingRuntime"): CLUSTER_RUNTIMES, (V1, "TrainingRuntime"): RUNTIMES}
TORCH = ReferenceTarget(V1, "ClusterTrainingRuntime", None, "torch-distributed")
JAX = ReferenceTarget(V1, "ClusterTrainingRuntime", None, "jax-distributed")
OWN = ReferenceTarget(V1, "TrainingRuntime", "team", "mine")
FIRST = JobKey("TrainJob", "team", "first")
SECOND = JobKey("TrainJob", "team", "second")


class FakeInformer:
    """Stands in for an Informer: keeps what it was started with; never runs a thread."""

    made: list[FakeInformer] = []
    synced = True

    def __init__(self, client: Any, resource: Resource, *, cache: Cache,
                 handler: Callable[[str, Any, Any], None], namespace: str | None,
                 name: str) -> None:
        self.resource, self.cache, self.handler = resource, cache, handler
        self.namespace, self.name = namespace, name
        self.started = self.stopped = False
        FakeInformer.made.append(self)

    def start(self) -> None:
        self.started = True

    def stop(self) -> None:
        self.stopped = True

    def wait_synced(self, timeout: float) -> bool:
        return FakeInformer.synced


@pytest.fixture
def informers(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[FakeInformer]]:
    made: list[FakeInformer] = []
    monkeypatch.setattr(FakeInformer, "made", made)
    monkeypatch.setattr(FakeInformer, "synced", True)
    monkeypatch.setattr(references, "Informer", FakeInformer)
    yield made


class World:
    """The watches under test, the resources served now and the jobs queued."""

    def __init__(self, served: dict[tuple[str, str], Resource] | None = None) -> None:
        self.served = dict(SERVED if served is None else served)
        self.queued: list[JobKey] = []
        self.watches = ReferenceWatches(object(), namespace="team",  # type: ignore[arg-type]
                                        resources=lambda: self.served,
                                        enqueue=self.queued.append)


def runtime(name: str, namespace: str | None = None, **spec: Any) -> dict[str, Any]:
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"metadata": metadata, "spec": spec}


def test_a_named_object_is_found_in_the_cache_of_its_kinds_watch(
    informers: list[FakeInformer]
) -> None:
    world = World()
    assert world.watches.resolve(FIRST, {"runtime": TORCH}) == {"runtime": {}}
    (informer,) = informers
    assert informer.started and informer.resource is CLUSTER_RUNTIMES
    informer.cache.replace([runtime("torch-distributed", nodes=2)])
    assert world.watches.resolve(FIRST, {"runtime": TORCH}) == {
        "runtime": runtime("torch-distributed", nodes=2)}
    assert len(informers) == 1


def test_each_kind_is_watched_once_cluster_wide_or_in_the_engines_namespace(
    informers: list[FakeInformer]
) -> None:
    world = World()
    world.watches.resolve(FIRST, {"runtime": TORCH})
    world.watches.resolve(SECOND, {"runtime": JAX, "own": OWN})
    assert [(i.resource.kind, i.namespace, i.name) for i in informers] == [
        ("ClusterTrainingRuntime", None, "informer-references-clustertrainingruntimes"),
        ("TrainingRuntime", "team", "informer-references-trainingruntimes"),
    ]


def test_a_kind_no_one_serves_is_absent_until_it_is_served(
    informers: list[FakeInformer], records: list[dict[str, Any]]
) -> None:
    world = World(served={})
    assert world.watches.resolve(FIRST, {"runtime": TORCH}) == {"runtime": {}}
    assert informers == []
    assert any("the API server serves no ClusterTrainingRuntime" in r["message"]
               for r in records)
    world.served = dict(SERVED)
    world.watches.resolve(FIRST, {"runtime": TORCH})
    assert [i.resource for i in informers] == [CLUSTER_RUNTIMES]


def test_a_reference_that_cannot_be_named_is_absent_and_says_why(
    informers: list[FakeInformer], records: list[dict[str, Any]]
) -> None:
    world = World()
    found = world.watches.resolve(FIRST, {"runtime": "spec.runtimeRef.name is empty"})
    assert found == {"runtime": {}} and informers == []
    assert any(r["message"] == "reference runtime cannot be named: spec.runtimeRef.name is "
               "empty" for r in records)


def test_a_kind_not_listed_in_time_is_taken_as_absent_with_a_warning(
    informers: list[FakeInformer], records: list[dict[str, Any]]
) -> None:
    FakeInformer.synced = False
    world = World()
    assert world.watches.resolve(FIRST, {"runtime": TORCH}) == {"runtime": {}}
    assert any("were not listed within 10s" in r["message"] for r in records)


def test_a_change_to_a_named_object_queues_exactly_the_jobs_that_name_it(
    informers: list[FakeInformer]
) -> None:
    world = World()
    world.watches.resolve(FIRST, {"runtime": TORCH})
    world.watches.resolve(SECOND, {"runtime": TORCH, "own": OWN})
    cluster, namespaced = informers
    cluster.handler("ADDED", None, runtime("torch-distributed"))
    assert sorted(world.queued) == [FIRST, SECOND]
    world.queued.clear()
    cluster.handler("ADDED", None, runtime("jax-distributed"))
    namespaced.handler("MODIFIED", runtime("mine", "other"), runtime("mine", "other"))
    assert world.queued == []
    namespaced.handler("DELETED", runtime("mine", "team"), None)
    assert world.queued == [SECOND]


def test_a_job_that_names_another_object_or_is_forgotten_is_no_longer_queued(
    informers: list[FakeInformer]
) -> None:
    world = World()
    world.watches.resolve(FIRST, {"runtime": TORCH})
    world.watches.resolve(SECOND, {"runtime": TORCH})
    world.watches.resolve(FIRST, {"runtime": JAX})
    world.watches.forget(SECOND)
    (informer,) = informers
    informer.handler("MODIFIED", None, runtime("torch-distributed"))
    assert world.queued == []
    informer.handler("MODIFIED", None, runtime("jax-distributed"))
    assert world.queued == [FIRST]


def test_stop_ends_every_watch_and_a_later_reference_starts_a_new_one(
    informers: list[FakeInformer]
) -> None:
    world = World()
    world.watches.resolve(FIRST, {"runtime": TORCH, "own": OWN})
    world.watches.stop()
    assert [i.stopped for i in informers] == [True, True]
    world.watches.resolve(FIRST, {"runtime": TORCH})
    assert len(informers) == 3 and informers[2].started and not informers[2].stopped
