"""The pods/binding subresource in the store, without HTTP: what a scheduler's POST of a
Binding does to the pod (node name, annotations, PodScheduled condition), and the refusals
kube-apiserver's BindingREST answers with (another name or namespace than the URL's, a target
without a name or of another kind, failed uid and resourceVersion preconditions, a pod already
bound, being deleted or held by scheduling gates)."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from engine.cluster.apiserver.core import Core
from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.registry.builtins import PODS
from engine.cluster.apiserver.registry.deletion import DeleteOptions, delete
from tests.unit.cluster.store_support import ManualReactor

MERGE = "application/merge-patch+json"


def _pod(core: Core, name: str = "p", **metadata: Any) -> dict[str, Any]:
    body = {"metadata": {"name": name, **metadata},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}
    return core.store.create(PODS, "default", body).entry.obj


def _binding(node: object, name: str = "p", **metadata: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, **metadata},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}}


def _refusal(core: Core, body: object, name: str = "p") -> dict[str, Any]:
    with pytest.raises(ApiError) as error:
        core.store.bind(PODS, "default", name, body, dry_run=False)
    return error.value.to_status()


def _binding_conflict(name: str, why: str) -> dict[str, Any]:
    return {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f'Operation cannot be fulfilled on pods/binding "{name}": {why}',
        "reason": "Conflict",
        "details": {"name": name, "kind": "pods/binding"},
        "code": 409,
    }


def test_binding_sets_the_node_and_a_true_pod_scheduled_condition(
    core: Core, reactor: ManualReactor
) -> None:
    before = _pod(core)
    kept = orjson.dumps(before)
    reactor.advance(5)
    bound = core.store.bind(PODS, "default", "p", _binding("node-1"), dry_run=False).obj
    assert core.store.table.get(PODS.key, "default", "p").obj is bound
    assert bound["spec"] == {**before["spec"], "nodeName": "node-1"}
    assert bound["status"] == {
        **before["status"],
        "conditions": [{"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                        "lastTransitionTime": "2023-11-14T22:13:25Z"}],
    }
    assert bound.keys() == before.keys()
    assert bound["metadata"] == {
        **before["metadata"], "resourceVersion": str(core.store.table.rv)
    }
    assert int(bound["metadata"]["resourceVersion"]) > int(before["metadata"]["resourceVersion"])
    assert orjson.dumps(before) == kept  # the stored pod is a new object, the old one untouched


@pytest.mark.parametrize(("was", "since"), [
    ("False", "2023-11-14T22:13:25Z"),  # now: the condition changed
    ("True", "2023-11-14T22:00:00Z"),  # kept: it was True already
])
def test_binding_replaces_a_pod_scheduled_condition_in_place_and_keeps_the_others(
    core: Core, reactor: ManualReactor, was: str, since: str
) -> None:
    """podutil.UpdatePodCondition: the condition keeps its place; reason and message go; its
    transition time moves only when its status does."""
    _pod(core)
    conditions = {"status": {"conditions": [
        {"type": "PodScheduled", "status": was, "reason": "Unschedulable",
         "lastTransitionTime": "2023-11-14T22:00:00Z"},
        {"type": "example.com/Gate", "status": "True"},
    ]}}
    core.store.patch(PODS, "default", "p", MERGE, orjson.dumps(conditions), subresource="status")
    reactor.advance(5)
    bound = core.store.bind(PODS, "default", "p", _binding("node-1"), dry_run=False).obj
    assert bound["status"]["conditions"] == [
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
         "lastTransitionTime": since},
        {"type": "example.com/Gate", "status": "True"},
    ]


def test_the_bindings_annotations_are_merged_into_the_pods(core: Core) -> None:
    _pod(core, annotations={"kept": "1", "replaced": "old"})
    body = _binding("node-1", annotations={"replaced": "new", "scheduler.example.com/why": "x"})
    bound = core.store.bind(PODS, "default", "p", body, dry_run=False).obj
    assert bound["metadata"]["annotations"] == {
        "kept": "1", "replaced": "new", "scheduler.example.com/why": "x"
    }
    assert core.store.table.get(PODS.key, "default", "p").obj is bound


@pytest.mark.parametrize(("annotations", "said"), [
    (["a"], "json: cannot unmarshal array into Go struct field ObjectMeta.metadata.annotations "
            "of type map[string]string"),
    ({"a": 1}, "json: cannot unmarshal number into Go struct field "
               "ObjectMeta.metadata.annotations of type string"),
])
def test_annotations_that_are_not_strings_cannot_be_decoded(
    core: Core, annotations: object, said: str
) -> None:
    _pod(core)
    status = _refusal(core, _binding("node-1", annotations=annotations))
    assert (status["code"], status["message"]) == (
        400, f'Binding in version "v1" cannot be handled as a Binding: {said}'
    )


@pytest.mark.parametrize("metadata", [{}, {"name": "q"}], ids=["no name", "another name"])
def test_the_bindings_name_must_be_the_urls(core: Core, metadata: dict[str, Any]) -> None:
    _pod(core)
    body = {"metadata": metadata, "target": {"kind": "Node", "name": "node-1"}}
    status = _refusal(core, body)
    assert (status["code"], status["reason"], status["message"]) == (
        400, "BadRequest", "name in URL does not match name in Binding object"
    )


def test_the_bindings_namespace_must_be_the_urls(core: Core) -> None:
    _pod(core)
    status = _refusal(core, _binding("node-1", namespace="elsewhere"))
    assert (status["code"], status["message"]) == (
        400, "the namespace of the provided object does not match the namespace sent on the "
             "request"
    )


def test_a_target_of_another_kind_is_not_supported(core: Core) -> None:
    _pod(core)
    body = {"metadata": {"name": "p"}, "target": {"kind": "Pod"}}
    status = _refusal(core, body)
    assert (status["code"], status["message"]) == (
        422, 'Binding "p" is invalid: [target.kind: Unsupported value: "Pod": supported values: '
             '"Node", "<empty>", target.name: Required value]'
    )


def _precondition(field: str, wanted: str, actual: str) -> dict[str, Any]:
    return {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'Operation cannot be fulfilled on pods "p": StorageError: invalid object, '
                   "Code: 4, Key: /registry/pods/default/p, ResourceVersion: 0, "
                   f"AdditionalErrorMsg: Precondition failed: {field} in precondition: {wanted}, "
                   f"{field} in object meta: {actual}",
        "reason": "Conflict",
        "details": {"name": "p", "kind": "pods"},
        "code": 409,
    }


def test_the_bindings_uid_and_resource_version_are_preconditions(core: Core) -> None:
    """A scheduler binds the pod it saw: not another pod of the same name made since."""
    pod = _pod(core)
    uid, rv = pod["metadata"]["uid"], pod["metadata"]["resourceVersion"]
    assert _refusal(core, _binding("node-1", uid="gone")) == _precondition("UID", "gone", uid)
    assert _refusal(core, _binding("node-1", resourceVersion="1")) == _precondition(
        "ResourceVersion", "1", rv)
    assert "nodeName" not in core.store.table.get(PODS.key, "default", "p").obj["spec"]
    bound = core.store.bind(PODS, "default", "p", _binding("node-1", uid=uid, resourceVersion=rv),
                            dry_run=False).obj
    assert bound["spec"]["nodeName"] == "node-1"


def test_a_pod_held_by_scheduling_gates_is_not_bound(core: Core) -> None:
    body = {"metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "i"}],
                     "schedulingGates": [{"name": "example.com/wait"}]}}
    core.store.create(PODS, "default", body)
    assert _refusal(core, _binding("node-1")) == _binding_conflict(
        "p", "pod p has non-empty .spec.schedulingGates")


def test_a_dry_run_binding_answers_the_bound_pod_and_stores_nothing(core: Core) -> None:
    before = _pod(core)
    rv = core.store.table.rv
    answer = core.store.bind(PODS, "default", "p", _binding("node-1"), dry_run=True)
    assert answer.obj["spec"]["nodeName"] == "node-1"
    assert core.store.table.rv == rv
    stored = core.store.table.get(PODS.key, "default", "p").obj
    assert "nodeName" not in stored["spec"] and stored == before


@pytest.mark.parametrize(
    "body",
    [
        {"metadata": {"name": "p"}, "target": {"kind": "Node"}},
        _binding(""),
        {"metadata": {"name": "p"}},
        {"metadata": {"name": "p"}, "target": None},
    ],
    ids=["no name", "empty name", "no target", "null target"],
)
def test_a_binding_must_name_its_node(core: Core, body: dict[str, Any]) -> None:
    _pod(core)
    assert _refusal(core, body) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'Binding "p" is invalid: target.name: Required value',
        "reason": "Invalid",
        "details": {"name": "p", "kind": "Binding", "causes": [
            {"reason": "FieldValueRequired", "message": "Required value", "field": "target.name"}
        ]},
        "code": 422,
    }
    assert "nodeName" not in core.store.table.get(PODS.key, "default", "p").obj["spec"]


def test_a_target_that_is_not_an_object_cannot_be_decoded(core: Core) -> None:
    _pod(core)
    status = _refusal(core, {"metadata": {"name": "p"}, "target": "node-1"})
    assert (status["code"], status["message"]) == (
        400, 'Binding in version "v1" cannot be handled as a Binding: json: cannot unmarshal '
             "string into Go struct field Binding.target of type v1.ObjectReference"
    )


def test_a_binding_body_must_be_an_object(core: Core) -> None:
    _pod(core)
    status = _refusal(core, ["node-1"])
    assert (status["code"], status["reason"], status["message"]) == (
        400, "BadRequest", "the request body must be a JSON object"
    )


def test_binding_a_missing_pod_is_not_found(core: Core) -> None:
    status = _refusal(core, _binding("node-1", name="nope"), name="nope")
    assert (status["code"], status["message"], status["details"]) == (
        404, 'pods "nope" not found', {"name": "nope", "kind": "pods"}
    )


def test_a_bound_pod_is_not_bound_again(core: Core) -> None:
    _pod(core)
    core.store.bind(PODS, "default", "p", _binding("node-1"), dry_run=False)
    stored = copy.deepcopy(core.store.table.get(PODS.key, "default", "p").obj)
    assert _refusal(core, _binding("node-2")) == _binding_conflict(
        "p", 'pod p is already assigned to node "node-1"')
    assert core.store.table.get(PODS.key, "default", "p").obj == stored


def _deleting(name: str) -> dict[str, Any]:
    return _binding_conflict(name, f"pod {name} is being deleted, cannot be assigned to a host")


def test_a_pod_being_deleted_is_not_bound(core: Core) -> None:
    _pod(core, finalizers=["example.com/hold"])
    delete(core.store, PODS, "default", "p", DeleteOptions())
    assert core.store.table.get(PODS.key, "default", "p").obj["metadata"]["deletionTimestamp"]
    assert _refusal(core, _binding("node-1")) == _deleting("p")
    assert "nodeName" not in core.store.table.get(PODS.key, "default", "p").obj["spec"]


def test_a_bound_pod_being_deleted_says_it_is_being_deleted(core: Core) -> None:
    """kube-apiserver's BindingREST looks at the deletion before the node."""
    _pod(core, finalizers=["example.com/hold"])
    core.store.bind(PODS, "default", "p", _binding("node-1"), dry_run=False)
    delete(core.store, PODS, "default", "p", DeleteOptions())
    assert _refusal(core, _binding("node-2")) == _deleting("p")
