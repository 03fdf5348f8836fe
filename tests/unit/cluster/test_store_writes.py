"""The end of every update, patch and apply in the store, without HTTP: no new finalizer on
an object being deleted, the last finalizer's removal ending the deletion, the status
strategy's own validation on /status, a CRD's status and finalizer, and what a write that
changes nothing or only pretends to (dry run) answers."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from engine.cluster.apiserver.core import Core
from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.registry import builtins as kinds
from engine.cluster.apiserver.registry.crds import CLEANUP_FINALIZER
from engine.cluster.apiserver.registry.deletion import DeleteOptions, delete
from tests.unit.cluster.store_support import ManualReactor

MERGE = "application/merge-patch+json"
HOLD = "example.com/hold"
JOB_SPEC = {"template": {"spec": {"containers": [{"name": "c", "image": "i"}],
                                  "restartPolicy": "Never"}}}
CRD = {"metadata": {"name": "gadgets.example.com"}, "spec": {
    "group": "example.com", "scope": "Namespaced",
    "names": {"plural": "gadgets", "kind": "Gadget"},
    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}],
}}


def _finalizers(*names: str) -> bytes:
    return orjson.dumps({"metadata": {"finalizers": list(names)}})


def test_no_new_finalizer_once_deletion_started(core: Core) -> None:
    core.store.create(kinds.JOBS, "default", {"metadata": {"name": "j", "finalizers": [HOLD]},
                                              "spec": JOB_SPEC})
    delete(core.store, kinds.JOBS, "default", "j", DeleteOptions(propagation="Background"))
    with pytest.raises(ApiError) as error:
        core.store.patch(kinds.JOBS, "default", "j", MERGE,
                         _finalizers(HOLD, "example.com/more"))
    why = ('Forbidden: no new finalizers can be added if the object is being deleted, found new '
           'finalizers []string{"example.com/more"}')
    assert error.value.to_status() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f'Job.batch "j" is invalid: metadata.finalizers: {why}',
        "reason": "Invalid",
        "details": {"name": "j", "group": "batch", "kind": "Job", "causes": [
            {"reason": "FieldValueForbidden", "message": why, "field": "metadata.finalizers"}
        ]},
        "code": 422,
    }
    assert core.store.get(kinds.JOBS, "default", "j").obj["metadata"]["finalizers"] == [HOLD]


def test_removing_the_last_finalizer_ends_a_namespaced_deletion(core: Core) -> None:
    core.store.create(kinds.CONFIGMAPS, "default", {"metadata": {"name": "a",
                                                                 "finalizers": [HOLD]}})
    delete(core.store, kinds.CONFIGMAPS, "default", "a", DeleteOptions())
    written = core.store.patch(kinds.CONFIGMAPS, "default", "a", MERGE, _finalizers())
    assert core.store.table.get(kinds.CONFIGMAPS.key, "default", "a") is None
    final = written.entry.obj
    assert final["metadata"]["resourceVersion"] == str(core.store.table.rv)
    assert final["metadata"]["deletionTimestamp"] and "finalizers" not in final["metadata"]


def test_removing_the_last_finalizer_ends_a_cluster_scoped_deletion(core: Core) -> None:
    body = {"metadata": {"name": "low", "finalizers": [HOLD]}, "value": 1}
    core.store.create(kinds.PRIORITY_CLASSES, "", body)
    delete(core.store, kinds.PRIORITY_CLASSES, "", "low", DeleteOptions())
    assert core.store.get(kinds.PRIORITY_CLASSES, "", "low").obj["metadata"]["deletionTimestamp"]
    core.store.patch(kinds.PRIORITY_CLASSES, "", "low", MERGE, _finalizers())
    assert core.store.table.get(kinds.PRIORITY_CLASSES.key, "", "low") is None


def test_a_namespace_waits_for_its_own_finalizer_too(core: Core) -> None:
    """A namespace's spec.finalizers ("kubernetes") hold it after its metadata finalizers
    are gone: only the namespace controller's /finalize ends it."""
    core.store.create(kinds.NAMESPACES, "", {"metadata": {"name": "team", "finalizers": [HOLD]}})
    delete(core.store, kinds.NAMESPACES, "", "team", DeleteOptions())
    written = core.store.patch(kinds.NAMESPACES, "", "team", MERGE, _finalizers()).entry.obj
    assert written["spec"]["finalizers"] == ["kubernetes"]
    assert core.store.get(kinds.NAMESPACES, "", "team").obj is written


def test_a_status_write_is_judged_by_the_status_rules(core: Core) -> None:
    core.store.create(kinds.JOBS, "default", {"metadata": {"name": "j"}, "spec": JOB_SPEC})
    with pytest.raises(ApiError) as error:
        core.store.patch(kinds.JOBS, "default", "j", MERGE,
                         b'{"status":{"completionTime":"2023-11-14T22:13:20Z"}}',
                         subresource="status")
    assert error.value.code == 422
    assert [c.field for c in error.value.causes] == ["status.completionTime"]


def test_a_definition_gets_its_status_and_cleanup_finalizer_once(
    core: Core, reactor: ManualReactor
) -> None:
    reactor.advance(7)
    created = core.store.create(kinds.CRDS, "", CRD).entry.obj
    assert created["metadata"]["finalizers"] == [CLEANUP_FINALIZER]
    times = {c["type"]: c["lastTransitionTime"] for c in created["status"]["conditions"]}
    assert times == {"NamesAccepted": "2023-11-14T22:13:27Z",
                     "Established": "2023-11-14T22:13:27Z"}
    released = core.store.patch(kinds.CRDS, "", "gadgets.example.com", MERGE,
                                b'{"metadata":{"finalizers":null}}').entry.obj
    assert "finalizers" not in released["metadata"]
    labelled = core.store.patch(kinds.CRDS, "", "gadgets.example.com", MERGE,
                                b'{"metadata":{"labels":{"a":"b"}}}').entry.obj
    assert "finalizers" not in labelled["metadata"]
    assert labelled["status"]["conditions"] == created["status"]["conditions"]


def test_an_unchanged_write_is_answered_with_its_warnings(core: Core) -> None:
    created = core.store.create(kinds.JOBS, "default", {"metadata": {"name": "j"},
                                                        "spec": JOB_SPEC}).entry
    again = core.store.patch(kinds.JOBS, "default", "j", MERGE, b'{"spec":{"paralelism":2}}')
    assert again.entry is created
    assert again.warnings == ['unknown field "spec.paralelism"']


def test_a_leases_unknown_spec_field_is_dropped_with_a_warning(core: Core) -> None:
    """LeaseSpec is a typed struct upstream: a field it lacks is not stored."""
    written = core.store.create(kinds.LEASES, "default", {
        "metadata": {"name": "l"},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15, "holderIdentiy": "typo"},
    })
    assert written.entry.obj["spec"] == {"holderIdentity": "a", "leaseDurationSeconds": 15}
    assert written.warnings == ['unknown field "spec.holderIdentiy"']


def test_a_dry_run_write_answers_the_object_and_its_warnings(core: Core) -> None:
    core.store.create(kinds.JOBS, "default", {"metadata": {"name": "j"}, "spec": JOB_SPEC})
    rv = core.store.table.rv
    dry = core.store.patch(kinds.JOBS, "default", "j", MERGE,
                           b'{"metadata":{"labels":{"a":"b"}},"spec":{"paralelism":2}}',
                           dry_run=True)
    assert dry.entry.obj["metadata"]["labels"]["a"] == "b"
    assert dry.warnings == ['unknown field "spec.paralelism"']
    assert core.store.table.rv == rv


def _pod_body() -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}


def test_a_pod_update_is_admitted_where_the_pod_lives(core: Core) -> None:
    """The Priority plugin keeps a pod's priority on an update that leaves it out; its
    refusals name the stored pod."""
    core.store.create(kinds.NAMESPACES, "", {"metadata": {"name": "team"}})
    created = core.store.create(kinds.PODS, "team", _pod_body()).entry.obj
    body = {**created, "spec": {k: v for k, v in created["spec"].items() if k != "priority"}}
    kept = core.store.update(kinds.PODS, "team", "p", body).entry.obj
    assert kept["spec"]["priority"] == 0
    changed = {**created, "spec": {**created["spec"], "priority": 7}}
    with pytest.raises(ApiError) as error:
        core.store.update(kinds.PODS, "team", "p", changed)
    assert error.value.code == 422 and 'Pod "p" is invalid' in error.value.message
