"""Releasing a pod's tracking finalizer once the written status holds its outcome
(`release_tracking`) and the removal itself (`remove_finalizer`): a JSON patch that tests the
list it read and replaces it without that finalizer, not sent again while the cache shows the
copy from before; a pod whose outcome the status holds is released (the job holds its
replicas, the pod ended, no replica owns it any more, or it is of an older attempt), a pod
that may still run keeps it. A spec.child object carries no tracking finalizer.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

import pytest

from engine.controller.reconcile.actions import ActionRun, release_tracking, remove_finalizer
from engine.controller.reconcile.children import TRACKING_FINALIZER, JobKey, ReplicaId
from engine.controller.reconcile.claims import Claimed
from engine.controller.reconcile.decide import Decision
from engine.controller.reconcile.jobspec import read_job_spec
from engine.controller.reconcile.observe import PodFacts
from engine.controller.reconcile.record import MachineRecord
from engine.controller.reporting.events import EventRecorder
from engine.controller.runtime.expectations import Expectations
from engine.controller.runtime.freshness import ReleasedFinalizers
from engine.kube.client import KubeClient
from engine.kube.errors import Invalid, NotFound
from engine.kube.resources import PODS, Resource
from engine.settings import EngineSettings
from tests.scenarios.world import DEFINITIONS, machine_job, worker

OTHER = "example.com/keep"
JOB_KIND = Resource("jobmachine.dev", "v1alpha1", "machinejobs", "MachineJob")


class Api:
    """Answers patches with the object at the next resourceVersion (or the error given),
    noting each patch sent."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.patches: list[tuple[Resource, str, Any, str | None, str]] = []

    def patch(self, resource: Resource, name: str, body: Any, *, namespace: str | None = None,
              patch_type: str = "merge") -> dict[str, Any]:
        self.patches.append((resource, name, body, namespace, patch_type))
        if self.error is not None:
            raise self.error
        return {"metadata": {"name": name, "resourceVersion": "8"}}

    @property
    def patched(self) -> list[str]:
        return [name for _, name, *_ in self.patches]


def pod(name: str, *finalizers: str, version: str = "7") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "team", "uid": f"uid-{name}",
                         "resourceVersion": version, "finalizers": list(finalizers)}}


def test_the_patch_tests_the_list_read_and_replaces_it_without_the_finalizer() -> None:
    api = Api()
    released = ReleasedFinalizers()
    remove_finalizer(cast(KubeClient, api), pod("p", OTHER, TRACKING_FINALIZER, OTHER + "2"),
                     TRACKING_FINALIZER, released=released)
    assert api.patches == [(PODS, "p", [
        {"op": "test", "path": "/metadata/finalizers",
         "value": [OTHER, TRACKING_FINALIZER, OTHER + "2"]},
        {"op": "replace", "path": "/metadata/finalizers", "value": [OTHER, OTHER + "2"]},
    ], "team", "json")]
    # The cache still shows the copy from before (version 7): not sent again.
    assert released.pending("uid-p", TRACKING_FINALIZER, "7")
    assert not released.pending("uid-p", TRACKING_FINALIZER, "8")


def test_a_removal_is_not_sent_again_while_the_cache_shows_the_copy_from_before() -> None:
    api = Api()
    released = ReleasedFinalizers()
    before = pod("p", TRACKING_FINALIZER)
    remove_finalizer(cast(KubeClient, api), before, TRACKING_FINALIZER, released=released)
    remove_finalizer(cast(KubeClient, api), before, TRACKING_FINALIZER, released=released)
    assert api.patched == ["p"]


def test_a_copy_at_the_version_the_removal_answered_with_is_not_from_before_it() -> None:
    # Our last removal was answered at version 7; a copy at 7 that has the finalizer again
    # is not the stale one the removal was made from: the removal is sent.
    api = Api()
    released = ReleasedFinalizers()
    released.released("uid-p", TRACKING_FINALIZER, "7")
    remove_finalizer(cast(KubeClient, api), pod("p", TRACKING_FINALIZER, version="7"),
                     TRACKING_FINALIZER, released=released)
    assert api.patched == ["p"]


def test_an_object_without_the_finalizer_is_not_patched() -> None:
    api = Api()
    remove_finalizer(cast(KubeClient, api), pod("p", OTHER), TRACKING_FINALIZER)
    remove_finalizer(cast(KubeClient, api), {"metadata": {"name": "q"}}, TRACKING_FINALIZER)
    assert api.patches == []


def test_the_finalizer_of_another_resource_is_removed_there() -> None:
    api = Api()
    job = {"metadata": {"name": "train", "namespace": "team", "uid": "u",
                        "finalizers": ["jobmachine.dev/cleanup"]}}
    remove_finalizer(cast(KubeClient, api), job, "jobmachine.dev/cleanup", resource=JOB_KIND)
    assert [(r, name, ns) for r, name, _, ns, _ in api.patches] == [(JOB_KIND, "train", "team")]


@pytest.mark.parametrize("error", [
    NotFound(404, "NotFound", "gone", {}),
    Invalid(422, "Invalid", "the test operation failed", {}),
], ids=["gone", "list-changed"])
def test_a_pod_gone_or_changed_since_it_was_read_is_left_to_its_watch_event(
    error: Exception,
) -> None:
    api = Api(error)
    released = ReleasedFinalizers()
    remove_finalizer(cast(KubeClient, api), pod("p", TRACKING_FINALIZER), TRACKING_FINALIZER,
                     released=released)
    assert api.patched == ["p"]
    # Nothing was released: the next pass may send it again.
    assert not released.pending("uid-p", TRACKING_FINALIZER, "7")


def test_another_failure_is_raised() -> None:
    api = Api(RuntimeError("connection reset"))
    with pytest.raises(RuntimeError, match="connection reset"):
        remove_finalizer(cast(KubeClient, api), pod("p", TRACKING_FINALIZER),
                         TRACKING_FINALIZER)


# release_tracking ------------------------------------------------------------------------


RUNNING = PodFacts("podRunning")
SUCCEEDED = PodFacts("podSucceeded")


def run_of(api: Api, *, pods: dict[ReplicaId, dict[str, Any]],
           facts: dict[ReplicaId, PodFacts], states: dict[ReplicaId, str] | None = None,
           holds: bool = False, unplaced: tuple[dict[str, Any], ...] = (),
           old_attempt: frozenset[ReplicaId] = frozenset(),
           resource: Resource = PODS, workers: int = 2) -> ActionRun:
    """A pass over a MachineJob with `workers` Workers whose pods are `pods`."""
    job = machine_job(workers=workers)
    definition = DEFINITIONS["MachineJob"]
    record = MachineRecord(state="Running", replica_states=states or {
        worker(i): "Running" for i in range(workers)})
    return ActionRun(
        client=cast(KubeClient, api), expectations=Expectations(),
        recorder=cast(EventRecorder, None), settings=EngineSettings(),
        key=JobKey("MachineJob", "team", "train"), job=job, definition=definition,
        spec=read_job_spec(job, definition),
        decision=Decision(record, holds_replicas=holds),
        replica_objects=Claimed(pods, unplaced=unplaced, resource=resource),
        services=Claimed({}), facts=facts, now=datetime(2027, 1, 15, tzinfo=UTC),
        old_attempt=old_attempt, released=ReleasedFinalizers())


def test_a_pod_that_may_still_run_keeps_its_finalizer_one_that_ended_is_released() -> None:
    api = Api()
    release_tracking(run_of(api, pods={
        worker(0): pod("w0", TRACKING_FINALIZER), worker(1): pod("w1", TRACKING_FINALIZER),
    }, facts={worker(0): RUNNING, worker(1): SUCCEEDED}))
    assert api.patched == ["w1"]


def test_every_pod_is_released_once_the_job_holds_its_replicas() -> None:
    api = Api()
    release_tracking(run_of(api, pods={
        worker(0): pod("w0", TRACKING_FINALIZER), worker(1): pod("w1", TRACKING_FINALIZER),
    }, facts={worker(0): RUNNING, worker(1): RUNNING}, holds=True))
    assert api.patched == ["w0", "w1"]


def test_pods_no_replica_owns_and_pods_of_an_older_attempt_are_released() -> None:
    api = Api()
    release_tracking(run_of(api, workers=1, pods={
        worker(0): pod("w0", TRACKING_FINALIZER),  # of the last attempt
        worker(1): pod("w1", TRACKING_FINALIZER),  # scaled down
        ReplicaId("Gone", 0): pod("g0", TRACKING_FINALIZER),  # a removed type
    }, facts={worker(0): RUNNING, worker(1): RUNNING, ReplicaId("Gone", 0): RUNNING},
        unplaced=(pod("u", TRACKING_FINALIZER),), old_attempt=frozenset({worker(0)})))
    assert api.patched == ["w0", "w1", "g0", "u"]


def test_a_pod_without_facts_is_judged_missing_and_keeps_its_finalizer() -> None:
    api = Api()
    release_tracking(run_of(api, pods={worker(0): pod("w0", TRACKING_FINALIZER)}, facts={}))
    assert api.patched == []


def test_a_child_object_carries_no_tracking_finalizer() -> None:
    api = Api()
    child_kind = Resource("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet")
    release_tracking(run_of(api, pods={worker(1): pod("w1", TRACKING_FINALIZER)},
                            facts={worker(1): SUCCEEDED}, holds=True, resource=child_kind))
    assert api.patched == []
