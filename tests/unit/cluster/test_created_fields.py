"""A create's managedFields taken from an earlier create of the same shape
(`patch/created_fields.py`) are exactly those a fresh comparison gives, and objects of one
template (values apart) are compared and encoded once."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from engine.cluster.apiserver.patch import created_fields, field_manager
from engine.cluster.apiserver.registry.builtins import CONFIGMAPS, EVENTS, PODS, SERVICES
from engine.cluster.apiserver.registry.resources import ResourceType
from tests.unit.cluster.store_support import ManualReactor, make_core


def _pod(env: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    container = {"name": "main", "image": "busybox", "env": env,
                 "ports": [{"containerPort": 8080}]}
    return {"metadata": {"labels": {"job": "a", "index": "0"}},
            "spec": {"containers": [container], **spec}}


def _event(**fields: Any) -> dict[str, Any]:
    return {"involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
            "reason": "Started", "message": "started", "type": "Normal", **fields}


# Each list: objects created one after the other, most of them the same shape as one before
# with some value changed, some differing in one thing the comparison depends on.
CASES: list[tuple[ResourceType, list[dict[str, Any]]]] = [
    (CONFIGMAPS, [
        {"data": {"a": "1"}}, {"data": {"a": "2"}}, {"data": {"b": "1"}}, {"data": {}},
        {"data": {"a": "1"}, "metadata": {"labels": {"x": "y"}}},
        {"data": {"a": "1"}, "metadata": {"labels": {"x": "z"}}},
        {"data": {"a": "1"}, "metadata": {"labels": {"w": "z"}}},
    ]),
    (EVENTS, [
        _event(), _event(message="other"), _event(reportingComponent=""),
        _event(reportingComponent="kubelet"), _event(reportingComponent="scheduler"),
        _event(count=1), _event(count=2), _event(source={"component": "kubelet"}),
        _event(source={}), _event(source={"host": "n"}),
    ]),
    (PODS, [
        _pod([{"name": "RANK", "value": "0"}]), _pod([{"name": "RANK", "value": "1"}]),
        _pod([{"name": "RANK"}]), _pod([{"name": "WORLD", "value": "1"}]),
        _pod([{"name": "RANK", "value": "0"}, {"name": "RANK", "value": "1"}]),
        _pod([{"name": "RANK", "value": "0"}, {"name": "RANK", "value": "2"}]),
        _pod([]), _pod([{"name": "RANK", "value": "0"}], nodeName="n"),
        _pod([{"name": "RANK", "value": "0"}], nodeName="m"),
        _pod([{"name": "RANK", "value": "0"}], restartPolicy="Never"),
    ]),
    (SERVICES, [
        {"spec": {"ports": [{"port": 80}], "selector": {"a": "1"}}},
        {"spec": {"ports": [{"port": 80}], "selector": {"a": "2"}}},
        {"spec": {"ports": [{"port": 81}], "selector": {"a": "1"}}},
        {"spec": {"ports": [{"port": 80, "protocol": "UDP"}], "selector": {"a": "1"}}},
        {"spec": {"clusterIP": "None", "ports": [{"port": 80}], "selector": {"a": "1"}}},
    ]),
]


def _created(rt: ResourceType, bodies: list[dict[str, Any]], *, fresh: bool) -> list[bytes]:
    store = make_core(ManualReactor()).store
    written = []
    for n, body in enumerate(bodies):
        if fresh:
            created_fields._KNOWN.clear()
        named = {**body, "metadata": {**body.get("metadata", {}), "name": f"o{n}"}}
        obj = store.create(rt, "default", named, field_manager="writer").entry.obj
        written.append(orjson.dumps(obj["metadata"]["managedFields"]))
    return written


@pytest.mark.parametrize(("rt", "bodies"), CASES, ids=[rt.plural for rt, _ in CASES])
def test_managed_fields_of_a_create_are_those_a_fresh_comparison_gives(
        rt: ResourceType, bodies: list[dict[str, Any]]) -> None:
    assert _created(rt, bodies, fresh=False) == _created(rt, bodies, fresh=True)


def test_objects_of_one_template_are_compared_and_encoded_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Pods that differ only in values (an env var's, a label's): one comparison, and every
    pod holds the one FieldsV1 document; another env var's name is another shape."""
    store = make_core(ManualReactor()).store
    created_fields._KNOWN.clear()
    compared: list[object] = []
    real = field_manager.compare
    monkeypatch.setattr(field_manager, "compare",
                        lambda *args: compared.append(args) or real(*args))
    documents = []
    for n, env in enumerate([[{"name": "RANK", "value": str(n)}] for n in range(4)]
                            + [[{"name": "WORLD", "value": "4"}]]):
        pod = _pod(env)
        pod["metadata"] = {"name": f"p{n}", "labels": {"job": "a", "index": str(n)}}
        obj = store.create(PODS, "default", pod, field_manager="writer").entry.obj
        (entry,) = obj["metadata"]["managedFields"]
        documents.append(entry["fieldsV1"])
    assert len(compared) == 2
    assert all(document is documents[0] for document in documents[:4])
    assert documents[4] is not documents[0]
    assert "k:{\"name\":\"WORLD\"}" in documents[4]["f:spec"]["f:containers"][
        "k:{\"name\":\"main\"}"]["f:env"]
