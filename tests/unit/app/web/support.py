"""Objects as the watch delivers them, for the web view's unit tests."""

from __future__ import annotations

from typing import Any

import orjson

from engine.app.web.state import Feed
from engine.kube.resources import Resource

PYTORCHJOBS = Resource("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob")
TFJOBS = Resource("kubeflow.org", "v1", "tfjobs", "TFJob")


def job(name: str, *, namespace: str = "default", uid: str = "uid-1", state: str = "Running",
        restarts: int = 0, replicas: dict[str, dict[str, str]] | None = None,
        counts: dict[str, list[list[Any]]] | None = None, rv: str = "1",
        conditions: list[dict[str, str]] | None = None, revision: str = "pytorchjob-abc",
        ) -> dict[str, Any]:
    """A job whose status holds the engine's record (`replicas`: type -> state -> ranges)."""
    record: dict[str, Any] = {"v": 1, "replicas": replicas or {}, "counts": counts or {}}
    return {
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": namespace, "uid": uid, "resourceVersion": rv,
                     "creationTimestamp": "2027-01-15T08:00:00Z"},
        "spec": {"pytorchReplicaSpecs": {}},
        "status": {"state": state, "restarts": restarts, "record": orjson.dumps(record).decode(),
                   "conditions": conditions or [],
                   "machine": revision},
    }


def pod(name: str, job_name: str, *, replica_type: str = "Worker", index: int = 0,
        namespace: str = "default", phase: str = "Running", owner: str = "uid-1",
        rv: str = "1", state: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "resourceVersion": rv, "labels": {
            "jobmachine.dev/job-name": job_name, "jobmachine.dev/replica-type": replica_type,
            "jobmachine.dev/replica-index": str(index)},
            "ownerReferences": [{"uid": owner, "controller": True, "kind": "PyTorchJob",
                                 "name": job_name}]},
        "spec": {"containers": [{"name": "pytorch"}]},
        "status": {"phase": phase, "containerStatuses": [
            {"name": "pytorch", "restartCount": 0, "state": state or {"running": {}}}]},
    }


def event(name: str, *, about_uid: str = "uid-1", about: str = "one", reason: str = "Running",
          message: str = "", last: str = "2027-01-15T08:00:01Z", rv: str = "1",
          namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": name, "namespace": namespace, "resourceVersion": rv},
        "involvedObject": {"kind": "PyTorchJob", "name": about, "namespace": namespace,
                           "uid": about_uid},
        "type": "Normal", "reason": reason, "message": message, "count": 1,
        "lastTimestamp": last,
    }


def deliver(feed: Feed, event_type: str, obj: dict[str, Any]) -> None:
    """What an informer does with one watch event: apply it to the cache, then tell."""
    old, new = feed.cache.apply(event_type, obj)
    feed.handler(event_type, old, new)
