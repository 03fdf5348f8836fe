"""Creates in the store, without HTTP: where an object may be created (its namespace exists
and is not terminating, its CRD is not being deleted), the name it gets (given, generated,
or neither), and the refusals, in kube-apiserver's codes and words."""

from __future__ import annotations

from typing import Any

import pytest

from engine.cluster.apiserver.core import Core
from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.registry import builtins as kinds
from engine.cluster.apiserver.registry.deletion import DeleteOptions, delete
from engine.cluster.apiserver.registry.registry import Registry
from engine.cluster.apiserver.registry.resources import ResourceType
from engine.cluster.apiserver.registry.store import Store
from tests.unit.cluster.store_support import ManualReactor, make_core

HOLD = "example.com/hold"
JOB_SPEC = {"template": {"spec": {"containers": [{"name": "c", "image": "i"}],
                                  "restartPolicy": "Never"}}}


@pytest.fixture
def core() -> Core:
    return make_core(ManualReactor())


def _status(core: Core, rt: ResourceType, ns: str, body: dict[str, Any]) -> dict[str, Any]:
    with pytest.raises(ApiError) as error:
        core.store.create(rt, ns, body)
    return error.value.to_status()


def _terminating(core: Core, name: str) -> None:
    core.store.create(kinds.NAMESPACES, "", {"metadata": {"name": name, "finalizers": [HOLD]}})
    delete(core.store, kinds.NAMESPACES, "", name, DeleteOptions())
    assert core.store.get(kinds.NAMESPACES, "", name).obj["metadata"]["deletionTimestamp"]


def test_an_object_in_a_missing_namespace_is_not_found(core: Core) -> None:
    rv = core.store.table.rv
    assert _status(core, kinds.CONFIGMAPS, "nope", {"metadata": {"name": "a"}}) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'namespaces "nope" not found', "reason": "NotFound",
        "details": {"name": "nope", "kind": "namespaces"}, "code": 404,
    }
    assert core.store.table.rv == rv


def test_cluster_scoped_objects_need_no_namespace(core: Core) -> None:
    written = core.store.create(kinds.PRIORITY_CLASSES, "", {"metadata": {"name": "high"},
                                                            "value": 10})
    assert written.created and written.entry.obj["metadata"]["name"] == "high"
    assert "namespace" not in written.entry.obj["metadata"]


def test_nothing_new_in_a_terminating_namespace(core: Core) -> None:
    """NamespaceLifecycle's refusal: 403 naming the resource and the object as sent (a
    generated name is not made yet), with a NamespaceTerminating cause."""
    _terminating(core, "going")
    configmap = _status(core, kinds.CONFIGMAPS, "going", {"metadata": {"name": "a"}})
    assert configmap == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'configmaps "a" is forbidden: unable to create new content in namespace '
                   "going because it is being terminated",
        "reason": "Forbidden",
        "details": {"name": "a", "kind": "configmaps", "causes": [{
            "reason": "NamespaceTerminating", "message": "namespace going is being terminated",
            "field": "metadata.namespace",
        }]},
        "code": 403,
    }
    job = _status(core, kinds.JOBS, "going", {"metadata": {"generateName": "j-"},
                                             "spec": JOB_SPEC})
    assert job["message"] == (
        'jobs.batch "" is forbidden: unable to create new content in namespace going because '
        "it is being terminated"
    )
    causes = configmap["details"]["causes"]
    assert job["details"] == {"group": "batch", "kind": "jobs", "causes": causes}
    assert core.store.table.bucket(kinds.CONFIGMAPS.key).entries.get(("going", "a")) is None


def _gadgets(core: Core) -> ResourceType:
    crd = {"metadata": {"name": "gadgets.example.com", "finalizers": [HOLD]}, "spec": {
        "group": "example.com", "scope": "Namespaced",
        "names": {"plural": "gadgets", "kind": "Gadget"},
        "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
            "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}],
    }}
    core.store.create(kinds.CRDS, "", crd)
    rt = core.registry.lookup("example.com", "v1", "gadgets")
    assert rt is not None
    return rt


def _gadget(name: str) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": name}}


def test_no_custom_resource_is_created_while_its_definition_is_deleted(core: Core) -> None:
    rt = _gadgets(core)
    assert core.store.create(rt, "default", _gadget("before")).created
    delete(core.store, kinds.CRDS, "", "gadgets.example.com", DeleteOptions())
    assert _status(core, rt, "default", _gadget("after")) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "create not allowed while custom resource definition is terminating",
        "reason": "MethodNotAllowed",
        "details": {"group": "example.com", "kind": "gadgets"},
        "code": 405,
    }
    assert core.store.table.get(rt.key, "default", "after") is None


def test_a_name_or_a_generate_name_is_required(core: Core) -> None:
    cause = {"reason": "FieldValueRequired", "field": "metadata.name",
             "message": "Required value: name or generateName is required"}
    assert _status(core, kinds.CONFIGMAPS, "default", {"data": {"k": "v"}}) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'ConfigMap "" is invalid: metadata.name: Required value: name or '
                   "generateName is required",
        "reason": "Invalid",
        "details": {"kind": "ConfigMap", "causes": [cause]},
        "code": 422,
    }
    job = _status(core, kinds.JOBS, "default", {"metadata": {"generateName": ""},
                                               "spec": JOB_SPEC})
    assert job["message"] == (
        'Job.batch "" is invalid: metadata.name: Required value: name or generateName is '
        "required"
    )
    assert job["details"] == {"group": "batch", "kind": "Job", "causes": [cause]}


def test_a_generated_name_starts_with_the_prefix(core: Core) -> None:
    body = {"metadata": {"generateName": "cm-"}}
    first = core.store.create(kinds.CONFIGMAPS, "default", body).entry.obj
    second = core.store.create(kinds.CONFIGMAPS, "default", body).entry.obj
    names = [first["metadata"]["name"], second["metadata"]["name"]]
    assert all(n.startswith("cm-") and len(n) == len("cm-") + 5 for n in names)
    assert names[0] != names[1]
    assert first["metadata"]["generateName"] == "cm-"
    assert core.store.get(kinds.CONFIGMAPS, "default", names[0]).obj is first


def test_a_generated_name_is_looked_for_in_the_namespace_of_the_create(
    core: Core, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.cluster.apiserver.registry import store as store_module

    core.store.create(kinds.NAMESPACES, "", {"metadata": {"name": "other"}})
    core.store.create(kinds.CONFIGMAPS, "other", {"metadata": {"name": "x-aaaaa"}})
    monkeypatch.setattr(store_module, "generated_name", lambda base: f"{base}aaaaa")
    body = {"metadata": {"generateName": "x-"}}
    made = core.store.create(kinds.CONFIGMAPS, "default", body).entry.obj
    assert made["metadata"]["name"] == "x-aaaaa"


def test_when_every_generated_name_is_taken_the_create_may_be_tried_again(
    core: Core, monkeypatch: pytest.MonkeyPatch
) -> None:
    """apierrors.NewGenerateNameConflict: 409 AlreadyExists naming the last name tried,
    with a hint to retry, after 8 attempts (kube-apiserver's RetryGenerateName)."""
    from engine.cluster.apiserver.registry import store as store_module

    tried: list[str] = []

    def generated(base: str) -> str:
        tried.append(f"{base}{len(tried)}")
        return f"{base}taken"

    monkeypatch.setattr(store_module, "generated_name", generated)
    core.store.create(kinds.JOBS, "default", {"metadata": {"name": "j-taken"}, "spec": JOB_SPEC})
    status = _status(core, kinds.JOBS, "default", {"metadata": {"generateName": "j-"},
                                                   "spec": JOB_SPEC})
    assert status == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'jobs.batch "j-taken" already exists, the server was not able to generate '
                   "a unique name for the object",
        "reason": "AlreadyExists",
        "details": {"name": "j-taken", "group": "batch", "kind": "jobs",
                    "retryAfterSeconds": 1},
        "code": 409,
    }
    assert len(tried) == 8


def test_a_name_taken_is_already_exists(core: Core) -> None:
    core.store.create(kinds.JOBS, "default", {"metadata": {"name": "j"}, "spec": JOB_SPEC})
    rv = core.store.table.rv
    status = _status(core, kinds.JOBS, "default", {"metadata": {"name": "j"}, "spec": JOB_SPEC})
    assert status == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'jobs.batch "j" already exists', "reason": "AlreadyExists",
        "details": {"name": "j", "group": "batch", "kind": "jobs"}, "code": 409,
    }
    assert core.store.table.rv == rv


def test_the_same_name_in_another_namespace_or_kind_is_free(core: Core) -> None:
    core.store.create(kinds.NAMESPACES, "", {"metadata": {"name": "other"}})
    core.store.create(kinds.CONFIGMAPS, "default", {"metadata": {"name": "a"}})
    assert core.store.create(kinds.CONFIGMAPS, "other", {"metadata": {"name": "a"}}).created
    assert core.store.create(kinds.SECRETS, "default", {"metadata": {"name": "a"}}).created


def test_a_create_answers_created_with_the_stored_entry(core: Core) -> None:
    written = core.store.create(kinds.CONFIGMAPS, "default", {"metadata": {"name": "a"}})
    assert written.created and written.warnings == []
    assert core.store.get(kinds.CONFIGMAPS, "default", "a") is written.entry
    dry = core.store.create(kinds.CONFIGMAPS, "default", {"metadata": {"name": "b"}},
                            dry_run=True)
    assert dry.created and dry.entry.obj["metadata"]["name"] == "b"


def test_a_store_made_alone_keeps_its_own_table_and_history_bound() -> None:
    """A Store given no table makes one, and its watch history keeps `history` changes of a
    type: a watch from before them is answered 410."""
    reactor = ManualReactor()
    store = Store(Registry(), reactor, history=2, history_age=0, clock=reactor.clock)
    store.create(kinds.NAMESPACES, "", {"metadata": {"name": "default"}})
    start = store.table.rv
    for name in ("a", "b", "c"):
        store.create(kinds.CONFIGMAPS, "default", {"metadata": {"name": name}})
    assert store.get(kinds.CONFIGMAPS, "default", "c").obj["metadata"]["name"] == "c"
    assert [c.entry.obj["metadata"]["name"]
            for c in store.hub.changes_since(kinds.CONFIGMAPS.key, start + 1)] == ["b", "c"]
    with pytest.raises(ApiError) as error:
        store.hub.changes_since(kinds.CONFIGMAPS.key, start)
    assert error.value.code == 410
