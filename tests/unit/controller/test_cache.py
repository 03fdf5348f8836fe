"""The cache: projections keep what the engine reads, indexes follow every change, a relist
reports what differed, and concurrent writers and readers never see a broken index."""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest

from engine.controller.reconcile.children import JOB_NAME_LABEL
from engine.controller.runtime.projections import (
    project_job,
    project_node,
    project_pod,
    project_service,
)
from engine.kube.cache import Cache


def obj(name: str, *, ns: str | None = "default", rv: str = "1", uid: str | None = None,
        owners: tuple[str, ...] = (), job: str | None = None, **extra: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "uid": uid or f"uid-{name}", "resourceVersion": rv}
    if ns is not None:
        metadata["namespace"] = ns
    if owners:
        metadata["ownerReferences"] = [{"uid": o, "kind": "PyTorchJob", "name": o} for o in owners]
    if job is not None:
        metadata["labels"] = {JOB_NAME_LABEL: job}
    return {"metadata": metadata, **extra}


FULL_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "a-worker-0", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
        "labels": {JOB_NAME_LABEL: "a", "training.kubeflow.org/job-name": "a"},
        "annotations": {"x": "y", "controller.kubernetes.io/pod-deletion-cost": "5"},
        "ownerReferences": [{"uid": "job-uid", "controller": True}],
        "deletionTimestamp": "2024-01-01T00:00:00Z", "finalizers": ["jobmachine.dev/tracking"],
        "creationTimestamp": "2024-01-01T00:00:00Z", "managedFields": [{"manager": "kubectl"}],
        "generateName": "a-",
    },
    "spec": {
        "nodeName": "local", "restartPolicy": "Never", "schedulerName": "default",
        "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "1"]}],
    },
    "status": {
        "phase": "Failed", "reason": "Error", "message": "m", "podIP": "10.0.0.1",
        "startTime": "2024-01-01T00:00:01Z", "qosClass": "BestEffort",
        "conditions": [{"type": "Ready", "lastTransitionTime": "2024-01-01T00:00:03Z"},
                       {"type": "PodScheduled", "lastTransitionTime": "2024-01-01T00:00:01Z"}],
        "containerStatuses": [{
            "name": "main", "lastState": {},
            "state": {"terminated": {"exitCode": 137, "reason": "Error", "message": "oom",
                                     "startedAt": "2024-01-01T00:00:02Z",
                                     "containerID": "c1"}},
            "restartCount": 2, "ready": False, "image": "busybox", "imageID": "sha",
        }],
        "initContainerStatuses": [{"name": "init", "state": {}, "restartCount": 0,
                                   "ready": True, "containerID": "c"}],
    },
}


def test_pod_projection_keeps_only_what_the_engine_reads() -> None:
    view = project_pod(FULL_POD)
    assert view == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "a-worker-0", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
            # Every label (a selector matches them), the deletion cost and the creation time
            # (they rank interchangeable pods), no other annotation.
            "labels": {JOB_NAME_LABEL: "a", "training.kubeflow.org/job-name": "a"},
            "annotations": {"controller.kubernetes.io/pod-deletion-cost": "5"},
            "ownerReferences": ({"uid": "job-uid", "controller": True},),
            "deletionTimestamp": "2024-01-01T00:00:00Z",
            "finalizers": ("jobmachine.dev/tracking",),
            "creationTimestamp": "2024-01-01T00:00:00Z", "generateName": "a-",
        },
        "spec": {"nodeName": "local", "restartPolicy": "Never", "containers": ({"name": "main"},)},
        "status": {
            "phase": "Failed", "reason": "Error", "message": "m",
            # Only Ready keeps its time: how long a pod has been ready (minReadySeconds).
            "conditions": ({"type": "Ready", "lastTransitionTime": "2024-01-01T00:00:03Z"},
                           {"type": "PodScheduled"}),
            "containerStatuses": ({
                "name": "main", "restartCount": 2, "ready": False,
                "state": {"terminated": {"exitCode": 137, "reason": "Error", "message": "oom"}},
            },),
            "initContainerStatuses": ({"name": "init", "restartCount": 0, "ready": True},),
        },
    }


def test_pods_share_their_equal_parts_and_keep_their_own() -> None:
    """Thousands of pods are cached: equal specs, conditions and container states are one
    object; names, owners and labels are each pod's own."""
    other = copy.deepcopy(FULL_POD)
    other["metadata"].update(name="a-worker-1", uid="u2")
    first, second = project_pod(FULL_POD), project_pod(other)
    assert first["spec"] is second["spec"]
    assert first["status"]["conditions"] is second["status"]["conditions"]
    assert first["status"]["containerStatuses"] is second["status"]["containerStatuses"]
    assert first["metadata"]["labels"] is not second["metadata"]["labels"]
    assert second["metadata"]["uid"] == "u2"


def test_pod_projection_of_a_pod_without_status() -> None:
    view = project_pod({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}})
    assert view == {"metadata": {"name": "p"}, "spec": {"containers": ({"name": "c"},)},
                    "status": {}}


def test_service_and_node_projections() -> None:
    service = obj("svc", job="a", spec={"clusterIP": "None", "selector": {"a": "b"},
                                        "ports": [{"port": 1}], "type": "ClusterIP"})
    assert project_service(service)["spec"] == {"clusterIP": "None", "selector": {"a": "b"},
                                                "ports": [{"port": 1}]}
    assert project_service(service)["metadata"]["labels"] == {JOB_NAME_LABEL: "a"}
    node = obj("n", ns=None, status={"conditions": [{"type": "Ready", "status": "True"}],
                                     "capacity": {"cpu": "2"}}, spec={"podCIDR": "x"})
    node["metadata"]["labels"] = {"k": "v"}
    assert project_node(node) == {
        "metadata": {"name": "n", "uid": "uid-n", "resourceVersion": "1"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def test_job_projection_drops_managed_fields_only_and_copies() -> None:
    job = obj("a", spec={"x": 1}, status={"phase": "Running"})
    job["metadata"]["managedFields"] = [{"manager": "m"}]
    view = project_job(job)
    assert "managedFields" not in view["metadata"]
    assert "managedFields" in job["metadata"]
    assert view["spec"] == {"x": 1} and view["status"] == {"phase": "Running"}


def test_apply_returns_old_and_new_and_indexes_by_owner_and_job_label() -> None:
    cache = Cache(project_pod, indexed_label=JOB_NAME_LABEL)
    assert cache.apply("ADDED", obj("p0", owners=("j1",), job="a")) == (
        None, cache.get("default", "p0"))
    cache.apply("ADDED", obj("p1", owners=("j1", "other"), job="a"))
    cache.apply("ADDED", obj("p2", ns="elsewhere", owners=("j2",), job="a"))
    assert {p["metadata"]["name"] for p in cache.by_owner("j1")} == {"p0", "p1"}
    assert [p["metadata"]["name"] for p in cache.by_owner("other")] == ["p1"]
    assert {p["metadata"]["name"] for p in cache.by_label("default", JOB_NAME_LABEL, "a")} == {
        "p0", "p1"}
    assert [p["metadata"]["name"] for p in cache.by_label("elsewhere", JOB_NAME_LABEL, "a")] == [
        "p2"]

    old, new = cache.apply("MODIFIED", obj("p1", rv="2", owners=("j2",), job="b"))
    assert old is not None and old["metadata"]["resourceVersion"] == "1"
    assert new is not None and new["metadata"]["resourceVersion"] == "2"
    assert [p["metadata"]["name"] for p in cache.by_owner("j1")] == ["p0"]
    assert cache.by_owner("other") == []
    assert [p["metadata"]["name"] for p in cache.by_label("default", JOB_NAME_LABEL, "b")] == [
        "p1"]

    old, new = cache.apply("DELETED", obj("p0", rv="3", owners=("j1",), job="a"))
    assert new is None and old is not None and old["metadata"]["resourceVersion"] == "3"
    assert cache.get("default", "p0") is None
    assert cache.by_owner("j1") == []
    assert cache.by_label("default", JOB_NAME_LABEL, "a") == []
    assert len(cache) == 2


def test_other_labels_are_found_by_scanning_one_namespace() -> None:
    cache = Cache()
    for name, ns in (("a", "x"), ("b", "x"), ("c", "y")):
        item = obj(name, ns=ns)
        item["metadata"]["labels"] = {"team": "ml"}
        cache.apply("ADDED", item)
    assert {o["metadata"]["name"] for o in cache.by_label("x", "team", "ml")} == {"a", "b"}
    assert cache.by_label("x", "team", "web") == []


def test_get_and_list_by_namespace_and_cluster_scope() -> None:
    cache = Cache()
    cache.apply("ADDED", obj("a", ns="x"))
    cache.apply("ADDED", obj("a", ns="y"))
    cache.apply("ADDED", obj("node", ns=None))
    assert cache.get("x", "a") is not None and cache.get("z", "a") is None
    assert cache.get(None, "node") is not None
    assert [o["metadata"]["namespace"] for o in cache.list("y")] == ["y"]
    assert len(cache.list()) == 3


def test_apply_rejects_other_event_types() -> None:
    with pytest.raises(ValueError, match="BOOKMARK"):
        Cache().apply("BOOKMARK", obj("a"))


def test_replace_reports_added_modified_deleted_and_skips_unchanged() -> None:
    cache = Cache()
    for name in ("same", "changed", "gone"):
        cache.apply("ADDED", obj(name, owners=("j",)))
    changes = cache.replace(
        [obj("same", owners=("j",)), obj("changed", rv="2"), obj("new", owners=("j",))])
    summary = sorted((t, (old or new or {})["metadata"]["name"]) for t, old, new in changes)
    assert summary == [("ADDED", "new"), ("DELETED", "gone"), ("MODIFIED", "changed")]
    modified = next(c for c in changes if c[0] == "MODIFIED")
    assert modified[1] is not None and modified[1]["metadata"]["resourceVersion"] == "1"
    assert modified[2] is not None and modified[2]["metadata"]["resourceVersion"] == "2"
    assert {o["metadata"]["name"] for o in cache.list()} == {"same", "changed", "new"}
    assert {o["metadata"]["name"] for o in cache.by_owner("j")} == {"same", "new"}
    assert cache.replace([]) and len(cache) == 0 and cache.by_owner("j") == []


def test_a_projection_is_a_new_object() -> None:
    cache = Cache(project_pod)
    pod = obj("p", job="a", spec={"containers": [{"name": "c"}]})
    cache.apply("ADDED", pod)
    pod["spec"]["containers"].append({"name": "d"})
    view = cache.get("default", "p")
    assert view is not None and view["spec"]["containers"] == ({"name": "c"},)


def test_concurrent_writers_and_readers_keep_indexes_consistent() -> None:
    cache = Cache(project_pod)
    errors: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            for i in range(300):
                name = f"p{worker}-{i % 20}"
                event = "DELETED" if i % 7 == 0 else "MODIFIED"
                cache.apply(event, obj(name, rv=str(i), owners=(f"j{worker}",), job=f"a{i % 3}"))
        except BaseException as exc:
            errors.append(exc)

    def read() -> None:
        try:
            for _ in range(300):
                for view in cache.by_owner("j0") + cache.by_label("default", JOB_NAME_LABEL, "a1"):
                    assert view["metadata"]["name"].startswith("p")
                cache.list()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    threads += [threading.Thread(target=read) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    stored = cache.list()
    for worker in range(4):
        owned = {o["metadata"]["name"] for o in stored
                 if o["metadata"]["ownerReferences"][0]["uid"] == f"j{worker}"}
        assert {o["metadata"]["name"] for o in cache.by_owner(f"j{worker}")} == owned
    for job in ("a0", "a1", "a2"):
        labelled = {o["metadata"]["name"] for o in stored
                    if o["metadata"]["labels"][JOB_NAME_LABEL] == job}
        assert {o["metadata"]["name"] for o in cache.by_label("default", JOB_NAME_LABEL, job)} == (
            labelled)
