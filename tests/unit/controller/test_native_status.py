"""A built-in kind's job (batch/v1 Job): the engine's status kept in an annotation, the Job
API's status written from it, and who runs a Job (its spec.managedBy)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from engine.controller.reconcile.jobspec import managed_by_us
from engine.controller.reconcile.native_status import (
    ENGINE_STATUS_ANNOTATION,
    NATIVE_STATUS,
    engine_view,
    native_status,
    write_native,
)
from engine.kube.resources import Resource
from tests.scenarios.world import DEFINITIONS, World

BATCH = DEFINITIONS["Job"]
MACHINEJOB = DEFINITIONS["MachineJob"]
JOBS = Resource("batch", "v1", "jobs", "Job", namespaced=True)


def batch_job(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "j", "namespace": "team", "uid": "uid-j", "generation": 1,
                     "resourceVersion": "7"},
        "spec": {**spec, "template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}},
        "status": {"ready": 0},
    }


class Recorder:
    """A client that records the writes and answers with the object it was sent."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def patch(self, resource: Resource, name: str, body: Any, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(("patch", body))
        return {"metadata": {"name": name, "resourceVersion": "8"}, "spec": {"parallelism": 1}}

    def replace(self, resource: Resource, name: str, body: Any, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(("replace", body, kwargs.get("subresource")))
        return {**body, "metadata": {**body["metadata"], "resourceVersion": "9"}}


# Reading -------------------------------------------------------------------------------------


def test_a_native_job_without_the_annotation_has_no_engine_status_yet() -> None:
    view = engine_view(batch_job(), BATCH)
    assert view["status"] == {}
    assert view[NATIVE_STATUS] == {"ready": 0}


def test_the_annotation_is_the_engine_status_whoever_reads() -> None:
    job = batch_job()
    job["metadata"]["annotations"] = {ENGINE_STATUS_ANNOTATION: '{"state":"Active"}'}
    assert engine_view(job)["status"] == {"state": "Active"}
    assert engine_view(job, BATCH)["status"] == {"state": "Active"}


def test_an_unreadable_annotation_starts_the_record_again() -> None:
    job = batch_job()
    job["metadata"]["annotations"] = {ENGINE_STATUS_ANNOTATION: "{not json"}
    assert engine_view(job, BATCH)["status"] == {}


def test_an_engine_layout_job_is_read_as_it_comes() -> None:
    job = {"metadata": {"name": "m"}, "status": {"state": "Running"}}
    assert engine_view(job, MACHINEJOB) == job


# Writing -------------------------------------------------------------------------------------


def test_the_native_status_is_the_job_apis() -> None:
    world = World(batch_job(completions=3, parallelism=2))
    decided = world.reconcile()
    status = {**decided.status, "conditions": [{
        "type": "Complete", "status": "True", "reason": "CompletionsReached", "message": "m",
        "lastUpdateTime": "2027-01-15T08:00:05Z", "lastTransitionTime": "2027-01-15T08:00:04Z"}]}
    native = native_status(BATCH, status, decided.decision.variables)
    assert native == {
        "conditions": [{"type": "Complete", "status": "True", "reason": "CompletionsReached",
                        "message": "m", "lastProbeTime": "2027-01-15T08:00:05Z",
                        "lastTransitionTime": "2027-01-15T08:00:04Z"}],
        "startTime": status["startTime"],
        "ready": 0, "terminating": 0, "uncountedTerminatedPods": {},
    }


def test_completion_time_only_for_a_job_that_completed() -> None:
    world = World(batch_job())
    decided = world.reconcile()
    ended = {"state": "Failed", "startTime": "a", "completionTime": "b"}
    assert "completionTime" not in native_status(BATCH, ended, decided.decision.variables)
    done = {"state": "Complete", "startTime": "a", "completionTime": "b"}
    assert native_status(BATCH, done, decided.decision.variables)["completionTime"] == "b"


def test_the_record_is_written_first_on_the_decisions_resource_version() -> None:
    client = Recorder()
    job = engine_view(batch_job(), BATCH)
    written = write_native(client, JOBS, job, {"state": "Active"}, {"ready": 0, "active": 1})
    (patch_call, replace_call) = client.calls
    assert patch_call == ("patch", {"metadata": {
        "resourceVersion": "7",
        "annotations": {ENGINE_STATUS_ANNOTATION: orjson.dumps({"state": "Active"}).decode()}}})
    assert replace_call[2] == "status"
    assert replace_call[1]["metadata"]["resourceVersion"] == "8"
    assert replace_call[1]["status"] == {"ready": 0, "active": 1}
    assert written["metadata"]["resourceVersion"] == "9"


def test_nothing_is_written_that_did_not_change() -> None:
    client = Recorder()
    job = batch_job()
    job["metadata"]["annotations"] = {ENGINE_STATUS_ANNOTATION: '{"state":"Active"}'}
    view = engine_view(job, BATCH)
    write_native(client, JOBS, view, {"state": "Active"}, {"ready": 0})
    assert client.calls == []


# Who runs a Job -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("managed_by", "stand_in", "ours"),
    [
        (None, True, True),
        (None, False, False),
        ("kubernetes.io/job-controller", True, True),
        ("kubernetes.io/job-controller", False, False),
        ("jobmachine.dev/job-controller", False, True),
        ("jobmachine.dev/job-controller", True, True),
        ("kueue.x-k8s.io/multikueue", True, False),
        ("kueue.x-k8s.io/multikueue", False, False),
    ],
)
def test_a_job_is_ours_as_its_managed_by_and_the_cluster_say(
    managed_by: str | None, stand_in: bool, ours: bool
) -> None:
    job = batch_job() if managed_by is None else batch_job(managedBy=managed_by)
    assert managed_by_us(job, BATCH, stand_in=stand_in) is ours


def test_a_crd_kind_is_ours_without_managed_by_wherever_the_engine_runs() -> None:
    job = {"spec": {"runPolicy": {}}}
    assert managed_by_us(job, MACHINEJOB, stand_in=False)
