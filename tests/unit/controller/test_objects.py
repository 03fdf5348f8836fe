"""A job's child objects: built from the machine's rendering, created before pods, replaced when
they change, never taken from another owner. A recording client stands in for the API server."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from engine.controller.reconcile.children import JobKey
from engine.controller.reconcile.objects import (
    HASH_ANNOTATION,
    READY,
    ObjectRun,
    build_object,
    sync_objects,
)
from engine.controller.runtime.projections import project_child_object
from engine.definition import RenderedObject, render_objects
from engine.kube.cache import Cache
from engine.kube.errors import AlreadyExists, NotFound
from engine.kube.resources import BUILTIN_CHILDREN, CONFIGMAPS
from tests.kinds import shipped_definitions

SHIPPED_MPI = shipped_definitions()["MPIJob"]
# Most tests follow one object's life: the MPIJob machine with its hostfile ConfigMap only.
MPI = replace(SHIPPED_MPI, objects=tuple(o for o in SHIPPED_MPI.objects if o.kind == "ConfigMap"))
JOB = {
    "apiVersion": "kubeflow.org/v1", "kind": "MPIJob",
    "metadata": {"name": "ring", "namespace": "ml", "uid": "job-uid"},
    "spec": {"slotsPerWorker": 2, "mpiReplicaSpecs": {
        "Launcher": {"template": {"spec": {"containers": [{"name": "mpi", "image": "x"}]}}},
        "Worker": {"replicas": 2,
                   "template": {"spec": {"containers": [{"name": "mpi", "image": "x"}]}}},
    }},
}
VARIABLES = {"job": JOB, "gangScheduler": "",
             "hosts": {"Launcher": ["ring-launcher-0"],
                       "Worker": ["ring-worker-0", "ring-worker-1"]}}


@dataclass
class RecordingClient:
    """Records writes; with `existing`, a create answers AlreadyExists and a read gives it."""

    writes: list[tuple[str, str]] = field(default_factory=list)
    bodies: list[dict[str, Any]] = field(default_factory=list)
    existing: dict[str, Any] | None = None

    def get(self, resource: Any, name: str, namespace: str | None = None) -> Any:
        if self.existing is None:
            raise NotFound(404, "NotFound", "gone", {})
        return self.existing

    def create(self, resource: Any, body: dict[str, Any], namespace: str | None = None) -> Any:
        if self.existing is not None:
            raise AlreadyExists(409, "AlreadyExists", "exists", {})
        self.writes.append(("create", body["metadata"]["name"]))
        self.bodies.append(body)
        return body

    def replace(self, resource: Any, name: str, body: dict[str, Any], **_: Any) -> Any:
        self.writes.append(("replace", name))
        self.bodies.append(body)
        return body


@dataclass
class RecordingRecorder:
    events: list[tuple[str, str]] = field(default_factory=list)

    def record(self, involved: Any, *, type: str, reason: str, message: str) -> None:
        self.events.append((reason, message))


def run(cache: Cache, client: RecordingClient, recorder: RecordingRecorder,
        variables: dict[str, Any] = VARIABLES) -> bool:
    """Whether the job's objects are ready (its pods may be created)."""
    key = (CONFIGMAPS.api_version, CONFIGMAPS.kind)
    return sync_objects(ObjectRun(
        client=client, recorder=recorder, key=JobKey("MPIJob", "ml", "ring"),
        job=JOB, definition=MPI, variables=variables,
        resources={key: CONFIGMAPS}, caches={key: cache},
    )) == READY


def test_a_missing_object_is_created_owned_by_the_job_with_its_hash() -> None:
    client, recorder = RecordingClient(), RecordingRecorder()

    assert run(Cache(project_child_object), client, recorder) is True

    assert client.writes == [("create", "ring-config")]
    (body,) = client.bodies
    assert body["data"]["hostfile"] == "ring-worker-0 slots=2\nring-worker-1 slots=2\n"
    assert body["metadata"]["ownerReferences"][0]["uid"] == "job-uid"
    assert body["metadata"]["labels"]["jobmachine.dev/object"] == "config"
    assert HASH_ANNOTATION in body["metadata"]["annotations"]


def test_an_object_as_rendered_is_left_alone_and_a_changed_one_is_replaced() -> None:
    cache = Cache(project_child_object)
    current = build_object(JOB, _rendered(VARIABLES))
    current["metadata"].update(resourceVersion="7", uid="cm-uid")
    cache.apply("ADDED", current)
    client = RecordingClient()

    assert run(cache, client, RecordingRecorder()) is True
    assert client.writes == []

    more = {**VARIABLES, "hosts": {**VARIABLES["hosts"], "Worker": ["ring-worker-0"]}}
    assert run(cache, client, RecordingRecorder(), more) is True
    assert client.writes == [("replace", "ring-config")]
    assert client.bodies[0]["metadata"]["resourceVersion"] == "7"


def test_an_object_of_another_owner_is_never_touched_and_the_pods_wait() -> None:
    cache = Cache(project_child_object)
    foreign = build_object(JOB, _rendered(VARIABLES))
    foreign["metadata"]["ownerReferences"] = [{"uid": "other", "controller": True}]
    foreign["metadata"]["labels"] = {}
    foreign["metadata"].update(resourceVersion="1", uid="cm-uid")
    cache.apply("ADDED", foreign)
    client, recorder = RecordingClient(), RecordingRecorder()

    assert run(cache, client, recorder) is False

    assert client.writes == []
    assert recorder.events[0][0] == "NameConflict"


def test_an_object_the_cache_does_not_show_is_read_and_reported_when_it_is_not_ours() -> None:
    foreign = {"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "ring-config", "namespace": "ml", "resourceVersion": "3",
                            "uid": "cm-uid", "labels": {}}}
    client, recorder = RecordingClient(existing=foreign), RecordingRecorder()

    assert run(Cache(project_child_object), client, recorder) is False

    assert client.writes == []
    assert [reason for reason, _ in recorder.events] == ["NameConflict"]


def test_an_orphan_labelled_for_the_job_is_adopted_on_create() -> None:
    orphan = build_object(JOB, _rendered(VARIABLES))
    del orphan["metadata"]["ownerReferences"]
    orphan["metadata"].update(resourceVersion="3", uid="cm-uid")
    client = RecordingClient(existing=orphan)

    assert run(Cache(project_child_object), client, RecordingRecorder()) is True

    assert client.writes == [("replace", "ring-config")]
    assert client.bodies[0]["metadata"]["ownerReferences"][0]["uid"] == "job-uid"


def test_the_hash_follows_the_content() -> None:
    first = build_object(JOB, _rendered(VARIABLES))
    same = build_object(JOB, _rendered(VARIABLES))
    other = build_object(JOB, _rendered({**VARIABLES, "hosts": {"Worker": []}}))

    def digest(body: dict[str, Any]) -> str:
        return str(body["metadata"]["annotations"][HASH_ANNOTATION])

    assert digest(first) == digest(same) != digest(other)


def _rendered(variables: dict[str, Any]) -> RenderedObject:
    (wanted,), _ = render_objects(MPI, variables)
    return wanted


def test_the_mpi_launcher_gets_an_account_a_role_to_exec_into_its_workers_and_a_binding() -> None:
    client, recorder = RecordingClient(), RecordingRecorder()
    rbac = "rbac.authorization.k8s.io/v1"
    kinds = [("v1", "ConfigMap"), ("v1", "ServiceAccount"), (rbac, "Role"), (rbac, "RoleBinding")]
    ready = sync_objects(ObjectRun(
        client=client, recorder=recorder, key=JobKey("MPIJob", "ml", "ring"),
        job=JOB, definition=SHIPPED_MPI, variables=VARIABLES,
        resources={k: BUILTIN_CHILDREN[k] for k in kinds},
        caches={k: Cache(project_child_object) for k in kinds},
    ))

    assert ready == READY
    assert [(b["kind"], b["metadata"]["name"]) for b in client.bodies] == [
        ("ConfigMap", "ring-config"), ("ServiceAccount", "ring-launcher"),
        ("Role", "ring-launcher"), ("RoleBinding", "ring-launcher")]
    _, account, role, binding = client.bodies
    assert role["rules"] == [
        {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods"]},
        {"verbs": ["get", "create"], "apiGroups": [""], "resources": ["pods/exec"],
         "resourceNames": ["ring-worker-0", "ring-worker-1"]}]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "namespace": "ml",
                                    "name": "ring-launcher"}]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                  "name": "ring-launcher"}
    assert all(b["metadata"]["labels"]["app"] == "ring" for b in (account, role, binding))


def test_a_launcher_that_names_its_account_gets_no_new_one_but_the_binding_names_it() -> None:
    job = {**JOB, "spec": {**JOB["spec"], "mpiReplicaSpecs": {
        **JOB["spec"]["mpiReplicaSpecs"],
        "Launcher": {"template": {"spec": {"serviceAccountName": "mine",
                                           "containers": [{"name": "mpi", "image": "x"}]}}}}}}
    wanted, absent = render_objects(SHIPPED_MPI, {**VARIABLES, "job": job})

    assert "ServiceAccount" in [o.kind for o in absent]
    assert "ServiceAccount" not in [o.kind for o in wanted]
    (binding,) = [o for o in wanted if o.kind == "RoleBinding"]
    assert binding.fields["subjects"][0]["name"] == "mine"
