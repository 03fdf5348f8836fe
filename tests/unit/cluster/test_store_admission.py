"""What the store's admission steps do to a write, without HTTP: a pod's service account and
priority class looked up where the pod lives, refusals that name the pod as sent, the one
global default PriorityClass, cluster IPs and node ports held by the other services, and
fields no manager owns (added by admission, or unknown to the kind)."""

from __future__ import annotations

import secrets
from typing import Any

import orjson
import pytest

from engine.cluster.apiserver.core import Core
from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.registry import builtins as kinds
from tests.unit.cluster.store_support import ManualReactor, make_core

MERGE = "application/merge-patch+json"


@pytest.fixture
def core() -> Core:
    return make_core(ManualReactor())


def _pod(name: str = "p", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "i"}], **spec}}


def _refused(core: Core, rt: Any, ns: str, body: dict[str, Any]) -> dict[str, Any]:
    with pytest.raises(ApiError) as error:
        core.store.create(rt, ns, body)
    return error.value.to_status()


def _fields(obj: dict[str, Any], manager: str) -> Any:
    return next(e["fieldsV1"] for e in obj["metadata"]["managedFields"] if e["manager"] == manager)


# --- service accounts ----------------------------------------------------------------------


def test_a_pod_takes_its_service_account_from_its_own_namespace(core: Core) -> None:
    core.store.create(kinds.NAMESPACES, "", {"metadata": {"name": "team"}})
    robot = {"metadata": {"name": "robot"}, "automountServiceAccountToken": False,
             "imagePullSecrets": [{"name": "registry"}]}
    core.store.create(kinds.SERVICE_ACCOUNTS, "team", robot)
    pod = core.store.create(kinds.PODS, "team", _pod(serviceAccountName="robot"),
                            field_manager="me").entry.obj
    spec = pod["spec"]
    assert (spec["serviceAccountName"], spec["serviceAccount"]) == ("robot", "robot")
    assert spec["imagePullSecrets"] == [{"name": "registry"}]
    assert "volumes" not in spec and "volumeMounts" not in spec["containers"][0]
    # what admission added is no manager's: the creator owns what it sent (and defaults)
    owned = _fields(pod, "me")["f:spec"]
    assert "f:imagePullSecrets" not in owned and "f:serviceAccountName" in owned


def test_a_missing_service_account_refuses_the_pod_as_sent(core: Core) -> None:
    core.store.create(kinds.NAMESPACES, "", {"metadata": {"name": "team"}})
    core.store.create(kinds.SERVICE_ACCOUNTS, "default", {"metadata": {"name": "robot"}})
    why = ("error looking up service account team/robot: serviceaccount \"robot\" not found")
    named = _refused(core, kinds.PODS, "team", _pod(serviceAccountName="robot"))
    assert named == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f'pods "p" is forbidden: {why}', "reason": "Forbidden",
        "details": {"name": "p", "kind": "pods"}, "code": 403,
    }
    generated = {**_pod(serviceAccountName="robot"), "metadata": {"generateName": "worker-"}}
    assert _refused(core, kinds.PODS, "team", generated)["message"] == (
        f'pods "worker-" is forbidden: {why}'
    )


def test_an_unknown_priority_class_refuses_the_pod_as_sent(core: Core) -> None:
    status = _refused(core, kinds.PODS, "default", _pod(priorityClassName="urgent"))
    assert (status["code"], status["message"]) == (
        403, 'pods "p" is forbidden: no PriorityClass with name urgent was found'
    )


# --- the global default PriorityClass ------------------------------------------------------


def test_the_global_default_priority_class_may_be_updated_but_not_doubled(core: Core) -> None:
    body = {"metadata": {"name": "normal"}, "value": 100, "globalDefault": True}
    created = core.store.create(kinds.PRIORITY_CLASSES, "", body).entry.obj
    described = {**created, "description": "the default"}
    updated = core.store.update(kinds.PRIORITY_CLASSES, "", "normal", described).entry.obj
    assert updated["description"] == "the default" and updated["globalDefault"] is True
    second = {"metadata": {"name": "other"}, "value": 50, "globalDefault": True}
    status = _refused(core, kinds.PRIORITY_CLASSES, "", second)
    assert status["code"] == 403
    assert "PriorityClass normal is already marked as default" in status["message"]


# --- cluster IPs and node ports ------------------------------------------------------------


def _service(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"ports": [{"port": 80}], **spec}}


def test_a_new_service_gets_a_cluster_ip_no_other_service_holds(
    core: Core, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the random pick made to hit the range's first address every time, the second
    service must find that address held and take the next."""
    monkeypatch.setattr(secrets, "randbelow", lambda n: 0)
    first = core.store.create(kinds.SERVICES, "default", _service("a")).entry.obj
    second = core.store.create(kinds.SERVICES, "default", _service("b")).entry.obj
    assert first["spec"]["clusterIP"] != second["spec"]["clusterIP"]
    assert second["spec"]["clusterIP"] == "10.96.0.3"


def test_a_node_port_another_service_holds_is_refused(core: Core) -> None:
    core.store.create(kinds.NAMESPACES, "", {"metadata": {"name": "other"}})
    ports = [{"port": 80, "nodePort": 30080}]
    core.store.create(kinds.SERVICES, "other", _service("web", type="NodePort", ports=ports))
    status = _refused(core, kinds.SERVICES, "default",
                      _service("web", type="NodePort", ports=ports))
    assert (status["code"], status["reason"]) == (422, "Invalid")
    assert status["details"]["causes"][0]["field"] == "spec.ports[0].nodePort"
    assert "provided port is already allocated" in status["message"]


def test_a_create_asking_for_the_node_port_of_the_service_of_its_name_is_refused_so(
    core: Core
) -> None:
    """kube-apiserver allocates a create's node ports before it stores the object: the
    existing service still holds them, so the answer is the allocator's 422, not a 409."""
    ports = [{"port": 80, "nodePort": 30080}]
    core.store.create(kinds.SERVICES, "default", _service("web", type="NodePort", ports=ports))
    status = _refused(core, kinds.SERVICES, "default",
                      _service("web", type="NodePort", ports=ports))
    assert (status["code"], status["details"]["causes"][0]["field"]) == (
        422, "spec.ports[0].nodePort")
    assert "provided port is already allocated" in status["message"]
    again = _refused(core, kinds.SERVICES, "default", _service("web", type="NodePort"))
    assert (again["code"], again["reason"]) == (409, "AlreadyExists")


def test_a_service_update_keeps_its_own_node_port(core: Core) -> None:
    ports = [{"port": 80, "nodePort": 30080}]
    created = core.store.create(kinds.SERVICES, "default",
                                _service("web", type="NodePort", ports=ports)).entry.obj
    labelled = {**created, "metadata": {**created["metadata"], "labels": {"a": "b"}}}
    updated = core.store.update(kinds.SERVICES, "default", "web", labelled).entry.obj
    assert updated["spec"]["ports"][0]["nodePort"] == 30080
    assert updated["metadata"]["labels"] == {"a": "b"}


# --- unknown fields belong to no manager ----------------------------------------------------


def test_unknown_fields_of_a_pod_are_no_managers(core: Core) -> None:
    """Upstream's field manager sees the decoded object, where unknown fields are gone."""
    body = _pod(extra=1)
    body["spec"]["containers"][0]["imagee"] = "x"
    written = core.store.create(kinds.PODS, "default", body, field_manager="me")
    assert sorted(written.warnings) == [
        'unknown field "spec.containers[0].imagee"', 'unknown field "spec.extra"'
    ]
    owned = _fields(written.entry.obj, "me")["f:spec"]
    assert "f:extra" not in owned
    assert "f:imagee" not in owned["f:containers"]['k:{"name":"c"}']
    patch = orjson.dumps({"spec": {"activeDeadlineSeconds": 5, "extra2": 1}})
    patched = core.store.patch(kinds.PODS, "default", "p", MERGE, patch, field_manager="you")
    assert patched.warnings == ['unknown field "spec.extra2"']
    assert _fields(patched.entry.obj, "you") == {"f:spec": {"f:activeDeadlineSeconds": {}}}


def test_unknown_fields_of_a_custom_resource_are_no_managers(core: Core) -> None:
    crd = {"metadata": {"name": "gadgets.example.com"}, "spec": {
        "group": "example.com", "scope": "Namespaced",
        "names": {"plural": "gadgets", "kind": "Gadget"},
        "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
            "openAPIV3Schema": {"type": "object", "properties": {"spec": {
                "type": "object", "properties": {"size": {"type": "integer"}}}}}}}],
    }}
    core.store.create(kinds.CRDS, "", crd)
    rt = core.registry.lookup("example.com", "v1", "gadgets")
    assert rt is not None
    body = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"},
            "spec": {"size": 1, "colour": "red"}}
    created = core.store.create(rt, "default", body, field_manager="me")
    assert created.warnings == ['unknown field "spec.colour"']
    assert _fields(created.entry.obj, "me") == {"f:spec": {".": {}, "f:size": {}}}
    patch = b'{"spec":{"size":2,"shade":"dark"}}'
    patched = core.store.patch(rt, "default", "g", MERGE, patch, field_manager="you")
    assert patched.warnings == ['unknown field "spec.shade"']
    assert _fields(patched.entry.obj, "you") == {"f:spec": {"f:size": {}}}


def test_what_the_registry_allocates_is_no_managers(core: Core) -> None:
    """A service's cluster IP and IP families are the registry's: neither the creator nor an
    update that makes the registry allocate them (ExternalName to ClusterIP) owns them, as
    upstream's field manager runs before the registry fills them in."""
    allocated = {"f:clusterIP", "f:clusterIPs", "f:ipFamilies", "f:ipFamilyPolicy"}
    created = core.store.create(kinds.SERVICES, "default", _service("s"),
                                field_manager="creator").entry.obj
    assert not allocated & set(_fields(created, "creator")["f:spec"])
    external = {"metadata": {"name": "x"},
                "spec": {"type": "ExternalName", "externalName": "example.com"}}
    core.store.create(kinds.SERVICES, "default", external, field_manager="creator")
    updated = core.store.update(kinds.SERVICES, "default", "x", _service("x", type="ClusterIP"),
                                field_manager="updater").entry.obj
    assert updated["spec"]["clusterIP"]
    assert not allocated & set(_fields(updated, "updater")["f:spec"])
