"""What the node keeps of a pod: never its managedFields, and of a pod it will never run
again only what the scheduler, gang counts, deletion and attempt counts still read."""

from __future__ import annotations

from typing import Any

from engine.cluster.node.pod_views import finished_view, without_managed_fields
from engine.cluster.node.runtime.attempts import pod_group
from engine.cluster.node.scheduling.gangs import gang_of

POD: dict[str, Any] = {
    "metadata": {
        "name": "train-worker-0", "namespace": "jobs", "uid": "u-1", "resourceVersion": "42",
        "labels": {"scheduling.x-k8s.io/pod-group": "train"},
        "annotations": {"scheduling.k8s.io/group-name": "train"},
        "ownerReferences": [{"uid": "job-1", "controller": True}],
        "deletionTimestamp": "2026-01-01T00:00:00Z", "deletionGracePeriodSeconds": 0,
        "managedFields": [{"manager": "engine", "fieldsV1": {"f:spec": {}}}],
        "creationTimestamp": "2026-01-01T00:00:00Z",
    },
    "spec": {"nodeName": "jobmachine-local",
             "containers": [{"name": "main", "resources": {"requests": {"cpu": "2"}}}]},
    "status": {"phase": "Succeeded", "containerStatuses": [{"name": "main"}]},
}


def test_managed_fields_are_dropped_and_the_rest_kept() -> None:
    kept = without_managed_fields(POD)
    assert "managedFields" not in kept["metadata"]
    assert {**kept["metadata"], "managedFields": POD["metadata"]["managedFields"]} \
        == POD["metadata"]
    assert (kept["spec"], kept["status"]) == (POD["spec"], POD["status"])
    bare = {"metadata": {"name": "x"}}
    assert without_managed_fields(bare) is bare


def test_a_finished_pod_keeps_what_is_still_read_of_it() -> None:
    view = finished_view(POD)
    assert view["spec"] == {"nodeName": "jobmachine-local"}
    assert view["status"] == {"phase": "Succeeded"}
    assert set(view["metadata"]) == set(POD["metadata"]) - {"managedFields", "creationTimestamp"}
    assert pod_group(view) == pod_group(POD) == "jobs/train-worker-0/job-1"
    assert gang_of(view) == gang_of(POD)
    unbound = finished_view({"metadata": {"name": "p", "uid": "u"}})
    assert (unbound["spec"], unbound["status"]) == ({}, {})
