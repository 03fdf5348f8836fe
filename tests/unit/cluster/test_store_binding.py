"""The pods/binding subresource in the store, without HTTP: what a scheduler's POST of a
Binding does to the pod (node name, PodScheduled condition), and the refusals kube-apiserver's
BindingREST answers with (a target without a name, a pod already bound or being deleted)."""

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


def _binding(node: object) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}}


def _refusal(core: Core, body: object, name: str = "p") -> dict[str, Any]:
    with pytest.raises(ApiError) as error:
        core.store.bind(PODS, "default", name, body, dry_run=False)
    return error.value.to_status()


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


def test_binding_replaces_a_pod_scheduled_condition_and_keeps_the_others(core: Core) -> None:
    _pod(core)
    conditions = {"status": {"conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"},
        {"type": "example.com/Gate", "status": "True"},
    ]}}
    core.store.patch(PODS, "default", "p", MERGE, orjson.dumps(conditions), subresource="status")
    bound = core.store.bind(PODS, "default", "p", _binding("node-1"), dry_run=False).obj
    assert [(c["type"], c["status"]) for c in bound["status"]["conditions"]] == [
        ("example.com/Gate", "True"), ("PodScheduled", "True")
    ]
    assert "reason" not in bound["status"]["conditions"][1]


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
        {"target": {"kind": "Node"}},
        _binding(""),
        {"metadata": {"name": "p"}},
        {"target": None},
        {"target": "node-1"},
    ],
    ids=["no name", "empty name", "no target", "null target", "target not an object"],
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


def test_a_binding_body_must_be_an_object(core: Core) -> None:
    _pod(core)
    status = _refusal(core, ["node-1"])
    assert (status["code"], status["reason"], status["message"]) == (
        400, "BadRequest", "the request body must be a JSON object"
    )


def test_binding_a_missing_pod_is_not_found(core: Core) -> None:
    status = _refusal(core, _binding("node-1"), name="nope")
    assert (status["code"], status["message"], status["details"]) == (
        404, 'pods "nope" not found', {"name": "nope", "kind": "pods"}
    )


def test_a_bound_pod_is_not_bound_again(core: Core) -> None:
    _pod(core)
    core.store.bind(PODS, "default", "p", _binding("node-1"), dry_run=False)
    stored = copy.deepcopy(core.store.table.get(PODS.key, "default", "p").obj)
    assert _refusal(core, _binding("node-2")) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'Operation cannot be fulfilled on pods/binding "p": '
                   'pod p is already assigned to node "node-1"',
        "reason": "Conflict",
        "details": {"name": "p", "kind": "pods/binding"},
        "code": 409,
    }
    assert core.store.table.get(PODS.key, "default", "p").obj == stored


def _deleting(name: str) -> dict[str, Any]:
    return {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f'Operation cannot be fulfilled on pods/binding "{name}": '
                   f"pod {name} is being deleted, cannot be assigned to a host",
        "reason": "Conflict",
        "details": {"name": name, "kind": "pods/binding"},
        "code": 409,
    }


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
