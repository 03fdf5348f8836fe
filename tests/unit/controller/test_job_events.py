"""Which job watch events queue a reconcile: not the echo of the engine's own write.

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

from engine.controller.reconcile.children import JobKey
from engine.controller.runtime.manager import Engine
from engine.kube.client import KubeClient
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
