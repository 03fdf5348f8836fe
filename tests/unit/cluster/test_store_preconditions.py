"""Updates, patches and applies in the store, without HTTP: the object they name, the
preconditions they carry (uid, resourceVersion, and the resourceVersion a CRD's update must
give), a PUT that creates (Events and Leases), a dry run, and the field manager a write
without one is recorded under; refusals in kube-apiserver's codes and words."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from engine.cluster.apiserver.core import Core
from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.registry import builtins as kinds
from tests.unit.cluster.store_support import ManualReactor, make_core

MERGE = "application/merge-patch+json"
MODIFIED = (
    "the object has been modified; please apply your changes to the latest version and try again"
)
JOB_SPEC = {"template": {"spec": {"containers": [{"name": "c", "image": "i"}],
                                  "restartPolicy": "Never"}}}


@pytest.fixture
def core() -> Core:
    return make_core(ManualReactor())


def _job(core: Core, name: str = "j") -> dict[str, Any]:
    body = {"metadata": {"name": name, "labels": {"a": "1"}}, "spec": JOB_SPEC}
    return core.store.create(kinds.JOBS, "default", body).entry.obj


def _refused(call: Any) -> dict[str, Any]:
    with pytest.raises(ApiError) as error:
        call()
    return error.value.to_status()


def _conflict(name: str, why: str) -> dict[str, Any]:
    return {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f'Operation cannot be fulfilled on jobs.batch "{name}": {why}',
        "reason": "Conflict",
        "details": {"name": name, "group": "batch", "kind": "jobs"},
        "code": 409,
    }


def _labelled(obj: dict[str, Any], **labels: str) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "labels": labels}}


# --- the object named ------------------------------------------------------------------------


def test_reading_updating_or_patching_a_missing_object_is_not_found(core: Core) -> None:
    missing = {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'jobs.batch "nope" not found', "reason": "NotFound",
        "details": {"name": "nope", "group": "batch", "kind": "jobs"}, "code": 404,
    }
    store = core.store
    assert _refused(lambda: store.get(kinds.JOBS, "default", "nope")) == missing
    body = {"metadata": {"name": "nope"}, "spec": JOB_SPEC}
    assert _refused(lambda: store.update(kinds.JOBS, "default", "nope", body)) == missing
    assert _refused(lambda: store.patch(kinds.JOBS, "default", "nope", MERGE, b"{}")) == missing
    status = orjson.dumps({"apiVersion": "batch/v1", "kind": "Job",
                           "metadata": {"name": "nope"}, "status": {"active": 1}})
    assert _refused(lambda: store.apply(kinds.JOBS, "default", "nope", status, field_manager="m",
                                        subresource="status")) == missing


def test_an_update_must_name_the_object_of_the_url(core: Core) -> None:
    job = _job(core)
    other = {**job, "metadata": {**job["metadata"], "name": "k"}}
    status = _refused(lambda: core.store.update(kinds.JOBS, "default", "j", other))
    assert (status["code"], status["message"]) == (
        400, "the name of the object (k) does not match the name on the URL (j)"
    )


def test_an_apply_must_name_the_object_and_namespace_of_the_url(core: Core) -> None:
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"},
              "data": {"k": "1"}}
    core.store.apply(kinds.CONFIGMAPS, "default", "a", orjson.dumps(config), field_manager="m")
    renamed = orjson.dumps({**config, "metadata": {"name": "b"}})
    status = _refused(lambda: core.store.apply(kinds.CONFIGMAPS, "default", "a", renamed,
                                               field_manager="m"))
    assert (status["code"], status["message"]) == (
        400, "the name of the object (b) does not match the name on the URL (a)"
    )
    assert core.store.get(kinds.CONFIGMAPS, "default", "a").obj["data"] == {"k": "1"}
    here = {**config, "metadata": {"name": "c", "namespace": "default"}}
    made = core.store.apply(kinds.CONFIGMAPS, "default", "c", orjson.dumps(here),
                            field_manager="m")
    assert made.created and made.entry.obj["metadata"]["namespace"] == "default"


@pytest.mark.parametrize(
    ("content_type", "patch", "named"),
    [
        (MERGE, b'{"metadata":{"name":null}}', ""),
        (MERGE, b'{"metadata":{"name":"k"}}', "k"),
        (MERGE, b'{"metadata":null}', ""),
    ],
    ids=["name removed", "name changed", "metadata removed"],
)
def test_a_patch_must_leave_the_object_named_as_the_url(
    core: Core, content_type: str, patch: bytes, named: str
) -> None:
    _job(core)
    status = _refused(lambda: core.store.patch(kinds.JOBS, "default", "j", content_type, patch))
    assert (status["code"], status["reason"]) == (400, "BadRequest")
    assert status["message"] == (
        f"the name of the object ({named}) does not match the name on the URL (j)"
    )


@pytest.mark.parametrize("metadata", [None, {}], ids=["null", "empty"])
def test_an_apply_that_creates_must_name_the_object(core: Core, metadata: Any) -> None:
    config = orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata})
    status = _refused(lambda: core.store.apply(kinds.CONFIGMAPS, "default", "a", config,
                                               field_manager="m"))
    assert (status["code"], status["message"]) == (
        400, "the name of the object () does not match the name on the URL (a)"
    )
    assert core.store.table.get(kinds.CONFIGMAPS.key, "default", "a") is None


# --- uid and resourceVersion preconditions -----------------------------------------------


def test_a_stale_resource_version_conflicts_on_update_patch_and_apply(core: Core) -> None:
    job = _job(core)
    core.store.update(kinds.JOBS, "default", "j", _labelled(job, a="2"))
    stale = job["metadata"]["resourceVersion"]
    assert _refused(
        lambda: core.store.update(kinds.JOBS, "default", "j", _labelled(job, a="3"))
    ) == _conflict("j", MODIFIED)
    patch = orjson.dumps({"metadata": {"resourceVersion": stale, "labels": {"a": "3"}}})
    assert _refused(
        lambda: core.store.patch(kinds.JOBS, "default", "j", MERGE, patch)
    ) == _conflict("j", MODIFIED)
    config = orjson.dumps({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": "j", "resourceVersion": stale, "labels": {"b": "1"}}})
    assert _refused(
        lambda: core.store.apply(kinds.JOBS, "default", "j", config, field_manager="m")
    ) == _conflict("j", MODIFIED)
    assert core.store.get(kinds.JOBS, "default", "j").obj["metadata"]["labels"] == {"a": "2"}


def test_the_current_resource_version_or_none_updates(core: Core) -> None:
    job = _job(core)
    first = core.store.update(kinds.JOBS, "default", "j", _labelled(job, a="2")).entry.obj
    assert first["metadata"]["labels"] == {"a": "2"}
    unconditional = _labelled(first, a="3")
    del unconditional["metadata"]["resourceVersion"]
    second = core.store.update(kinds.JOBS, "default", "j", unconditional).entry.obj
    assert second["metadata"]["labels"] == {"a": "3"}


def test_another_uid_is_a_failed_precondition_of_an_update(core: Core) -> None:
    """A PUT's uid is its precondition (DefaultUpdatedObjectInfo takes it from the body)."""
    job = _job(core)
    uid = job["metadata"]["uid"]
    other = {**job, "metadata": {**job["metadata"], "uid": "someone-else"}}
    why = ("StorageError: invalid object, Code: 4, Key: /registry/jobs/default/j, "
           "ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: "
           f"someone-else, UID in object meta: {uid}")
    assert _refused(
        lambda: core.store.update(kinds.JOBS, "default", "j", other)
    ) == _conflict("j", why)


_UID_IMMUTABLE = {
    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
    "message": 'Job.batch "j" is invalid: metadata.uid: Invalid value: "someone-else": '
               "field is immutable",
    "reason": "Invalid",
    "details": {"name": "j", "group": "batch", "kind": "Job", "causes": [{
        "reason": "FieldValueInvalid", "field": "metadata.uid",
        "message": 'Invalid value: "someone-else": field is immutable'}]},
    "code": 422,
}


def test_another_uid_in_a_patch_or_apply_is_immutable_not_a_precondition(core: Core) -> None:
    """A patch takes no precondition from its body (the patcher's updated-object info holds
    no object): its uid meets ValidateObjectMetaUpdate, the 422 controllers read as "this
    name holds another object now" (the controller reference manager ignores it). A stale
    resourceVersion is refused before it, with the 409."""
    job = _job(core)
    patch = b'{"metadata":{"uid":"someone-else"}}'
    assert _refused(
        lambda: core.store.patch(kinds.JOBS, "default", "j", MERGE, patch)
    ) == _UID_IMMUTABLE
    config = orjson.dumps({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": "j", "uid": "someone-else", "labels": {"b": "1"}}})
    assert _refused(
        lambda: core.store.apply(kinds.JOBS, "default", "j", config, field_manager="m")
    ) == _UID_IMMUTABLE
    stale = orjson.dumps({"metadata": {"uid": "someone-else", "resourceVersion": "1"}})
    assert _refused(
        lambda: core.store.patch(kinds.JOBS, "default", "j", MERGE, stale)
    ) == _conflict("j", MODIFIED)
    same = orjson.dumps({"metadata": {"uid": job["metadata"]["uid"], "labels": {"a": "2"}}})
    assert core.store.patch(kinds.JOBS, "default", "j", MERGE, same).entry.obj["metadata"][
        "labels"] == {"a": "2"}


def test_a_definition_is_only_updated_at_a_resource_version(core: Core) -> None:
    """The CRD strategy allows no unconditional update: a PUT without resourceVersion is 422."""
    crd = {"metadata": {"name": "gadgets.example.com"}, "spec": {
        "group": "example.com", "scope": "Namespaced",
        "names": {"plural": "gadgets", "kind": "Gadget"},
        "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
            "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}],
    }}
    stored = core.store.create(kinds.CRDS, "", crd).entry.obj
    body = {**stored, "metadata": {"name": "gadgets.example.com", "labels": {"a": "1"}}}
    with pytest.raises(ApiError) as error:
        core.store.update(kinds.CRDS, "", "gadgets.example.com", body)
    assert (error.value.code, error.value.reason) == (422, "Invalid")
    assert error.value.message.startswith(
        'CustomResourceDefinition.apiextensions.k8s.io "gadgets.example.com" is invalid: '
        "metadata.resourceVersion"
    )
    assert [c.field for c in error.value.causes] == ["metadata.resourceVersion"]
    current = {**body, "metadata": {**body["metadata"],
                                    "resourceVersion": stored["metadata"]["resourceVersion"]}}
    updated = core.store.update(kinds.CRDS, "", "gadgets.example.com", current).entry.obj
    assert updated["metadata"]["labels"] == {"a": "1"}


# --- a PUT that creates ------------------------------------------------------------------------


def test_a_lease_put_where_none_is_creates_it_under_the_url_name(core: Core) -> None:
    bare = core.store.update(kinds.LEASES, "default", "bare", {"spec": {"holderIdentity": "a"}})
    assert bare.created
    assert bare.entry.obj["metadata"]["name"] == "bare"
    assert core.store.get(kinds.LEASES, "default", "bare") is bare.entry
    labelled = core.store.update(kinds.LEASES, "default", "l", {
        "metadata": {"labels": {"team": "x"}}, "spec": {"holderIdentity": "a"},
    }, field_manager="elector")
    obj = labelled.entry.obj
    assert (obj["metadata"]["name"], obj["metadata"]["labels"]) == ("l", {"team": "x"})
    assert [e["manager"] for e in obj["metadata"]["managedFields"]] == ["elector"]


def test_a_put_that_creates_follows_field_validation_and_dry_run(core: Core) -> None:
    body = {"metadata": {"name": "e"}, "reason": "Made", "extra": 1,
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}}
    status = _refused(lambda: core.store.update(kinds.EVENTS, "default", "e", body,
                                                field_validation="Strict"))
    assert (status["code"], status["reason"]) == (400, "BadRequest")
    assert 'unknown field "extra"' in status["message"]
    rv = core.store.table.rv
    dry = core.store.update(kinds.EVENTS, "default", "e", body, dry_run=True)
    assert dry.created and dry.warnings == ['unknown field "extra"']
    assert core.store.table.rv == rv
    assert core.store.table.get(kinds.EVENTS.key, "default", "e") is None


# --- dry runs and field validation of updates, patches and applies --------------------------


def test_a_dry_run_update_patch_or_apply_stores_nothing(core: Core) -> None:
    job = _job(core)
    rv = core.store.table.rv
    store = core.store
    updated = store.update(kinds.JOBS, "default", "j", _labelled(job, a="2"), dry_run=True)
    patched = store.patch(kinds.JOBS, "default", "j", MERGE, b'{"metadata":{"labels":{"a":"3"}}}',
                          dry_run=True)
    config = orjson.dumps({"apiVersion": "batch/v1", "kind": "Job",
                           "metadata": {"name": "j", "labels": {"b": "4"}}})
    applied = store.apply(kinds.JOBS, "default", "j", config, field_manager="m", dry_run=True)
    created = orjson.dumps({"apiVersion": "batch/v1", "kind": "Job",
                            "metadata": {"name": "new"}, "spec": JOB_SPEC})
    new = store.apply(kinds.JOBS, "default", "new", created, field_manager="m", dry_run=True)
    assert updated.entry.obj["metadata"]["labels"] == {"a": "2"}
    assert patched.entry.obj["metadata"]["labels"] == {"a": "3"}
    assert applied.entry.obj["metadata"]["labels"]["b"] == "4"
    assert new.created and new.entry.obj["metadata"]["name"] == "new"
    assert store.table.rv == rv
    assert store.get(kinds.JOBS, "default", "j").obj == job
    assert store.table.get(kinds.JOBS.key, "default", "new") is None


def test_updates_and_patches_follow_field_validation(core: Core) -> None:
    job = _job(core)
    unknown = {**job, "spec": {**job["spec"], "paralelism": 2}}
    status = _refused(lambda: core.store.update(kinds.JOBS, "default", "j", unknown,
                                                field_validation="Strict"))
    assert status["code"] == 400 and 'unknown field "spec.paralelism"' in status["message"]
    patch = b'{"spec":{"paralelism":2}}'
    status = _refused(lambda: core.store.patch(kinds.JOBS, "default", "j", MERGE, patch,
                                               field_validation="Strict"))
    assert status["code"] == 400 and 'unknown field "spec.paralelism"' in status["message"]
    warned = core.store.patch(kinds.JOBS, "default", "j", MERGE, patch)
    assert warned.warnings == ['unknown field "spec.paralelism"']


# --- the field manager of a write that names none --------------------------------------------


def test_writes_that_name_no_manager_are_recorded_as_unknown(core: Core) -> None:
    cm = core.store.create(kinds.CONFIGMAPS, "default", {"metadata": {"name": "a"},
                                                         "data": {"k": "1"}}).entry.obj
    assert [e["manager"] for e in cm["metadata"]["managedFields"]] == ["unknown"]
    core.store.create(kinds.CONFIGMAPS, "default", {"metadata": {"name": "b"},
                                                    "data": {"k": "1"}}, field_manager="me")
    updated = core.store.update(kinds.CONFIGMAPS, "default", "b", {
        "metadata": {"name": "b"}, "data": {"k": "1", "u": "2"}}).entry.obj
    patched = core.store.patch(kinds.CONFIGMAPS, "default", "b", MERGE,
                               b'{"data":{"p":"3"}}').entry.obj
    assert [e["manager"] for e in updated["metadata"]["managedFields"]] == ["me", "unknown"]
    assert [e["manager"] for e in patched["metadata"]["managedFields"]] == ["me", "unknown"]
    assert patched["metadata"]["managedFields"][1]["fieldsV1"] == {
        "f:data": {"f:p": {}, "f:u": {}}
    }


def test_an_apply_conflicts_with_another_manager_unless_forced(core: Core) -> None:
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"},
              "data": {"k": "1"}}
    core.store.apply(kinds.CONFIGMAPS, "default", "a", orjson.dumps(config), field_manager="one")
    other = orjson.dumps({**config, "data": {"k": "2"}})
    status = _refused(lambda: core.store.apply(kinds.CONFIGMAPS, "default", "a", other,
                                               field_manager="two"))
    assert (status["code"], status["message"]) == (
        409, 'Apply failed with 1 conflict: conflict with "one": .data.k'
    )
    forced = core.store.apply(kinds.CONFIGMAPS, "default", "a", other, field_manager="two",
                              force=True).entry.obj
    assert forced["data"] == {"k": "2"}
    assert [e["manager"] for e in forced["metadata"]["managedFields"]] == ["two"]
