"""What the server answers decodes into the official client's typed models without loss, and
is accepted back unchanged.

For every served kind (the bodies of `test_zero_values.py`, as Go clients send
them): the JSON of the stored object, read into its `kubernetes.client`
model (V1Pod, V1Service...) and serialized again, gives the same data (the
models write timestamps as `+00:00` and leave out nulls, which is all they may
change); the JSON re-posted as clients re-post it (`kubectl get -o json |
kubectl create -f -`: uid, resourceVersion and creationTimestamp dropped) is a
201 with the same stored object, and a PUT of it unchanged, server metadata
and all, is a 200 that changes nothing.
"""

from __future__ import annotations

import copy
import json
import re
import time
from typing import Any

import pytest
from kubernetes import client

from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from tests.integration.apiserver.conftest import raw
from tests.integration.apiserver.test_zero_values import (
    ALL_CASES,
    GO_CASES,
    GoCase,
    comparable,
    created,
)

_MODELS = {
    "Pod": "V1Pod", "Service": "V1Service", "ConfigMap": "V1ConfigMap", "Secret": "V1Secret",
    "Namespace": "V1Namespace", "Event": "CoreV1Event", "Node": "V1Node",
    "ControllerRevision": "V1ControllerRevision", "Lease": "V1Lease",
    "PriorityClass": "V1PriorityClass", "ServiceAccount": "V1ServiceAccount", "Role": "V1Role",
    "ClusterRole": "V1ClusterRole", "RoleBinding": "V1RoleBinding",
    "ClusterRoleBinding": "V1ClusterRoleBinding",
    "CustomResourceDefinition": "V1CustomResourceDefinition",
}
_JSON = "application/json"
_UTC_OFFSET = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)\+00:00$")


def _as_the_server_writes(value: Any) -> Any:
    """The models' serialization made comparable: timestamps back to `Z`, nulls left out."""
    if isinstance(value, dict):
        return {key: _as_the_server_writes(item) for key, item in value.items()
                if item is not None}
    if isinstance(value, list):
        return [_as_the_server_writes(item) for item in value]
    if isinstance(value, str) and (match := _UTC_OFFSET.match(value)):
        return f"{match[1]}Z"
    return value


@pytest.mark.parametrize("case", GO_CASES, ids=[case.kind for case in GO_CASES])
def test_the_answer_decodes_into_the_typed_model_without_loss(
        server: RunningApiServer, case: GoCase) -> None:
    created(server, case)
    answer = raw(server, "GET", f"{case.collection}/{case.name}")
    api = client.ApiClient()
    model = api.deserialize(answer.body.decode(), _MODELS[case.kind], _JSON)
    assert type(model).__name__ == _MODELS[case.kind]
    again = api.sanitize_for_serialization(model)
    assert _as_the_server_writes(again) == _as_the_server_writes(answer.json())


@pytest.mark.parametrize("case", ALL_CASES, ids=[case.kind for case in ALL_CASES])
def test_the_answer_reposted_as_clients_do_is_created_again(
        server: RunningApiServer, case: GoCase) -> None:
    stored = created(server, case)
    deleted = raw(server, "DELETE", f"{case.collection}/{case.name}",
                  {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})
    assert deleted.status in (200, 202), deleted.body
    _wait_gone(server, case)
    body = copy.deepcopy(stored)
    for key in ("uid", "resourceVersion", "creationTimestamp"):
        body["metadata"].pop(key)
    response = raw(server, "POST", case.collection, body)
    assert response.status == 201, response.body
    assert comparable(response.json()) == case.stored


@pytest.mark.parametrize("case", ALL_CASES, ids=[case.kind for case in ALL_CASES])
def test_the_answer_put_back_unchanged_changes_nothing(
        server: RunningApiServer, case: GoCase) -> None:
    stored = created(server, case)
    response = raw(server, "PUT", f"{case.collection}/{case.name}", stored)
    assert response.status == 200, response.body
    assert response.json() == stored


def test_a_typed_model_of_the_answer_is_accepted_back(server: RunningApiServer) -> None:
    """The Python client's own body for a pod it read: what `replace_namespaced_pod` sends."""
    case = GO_CASES[0]
    created(server, case)
    api = client.ApiClient()
    answer = raw(server, "GET", f"{case.collection}/{case.name}")
    pod = api.deserialize(answer.body.decode(), "V1Pod", _JSON)
    response = raw(server, "PUT", f"{case.collection}/{case.name}",
                   json.dumps(api.sanitize_for_serialization(pod)).encode())
    assert response.status == 200, response.body
    assert response.json() == answer.json()


def _wait_gone(server: RunningApiServer, case: GoCase) -> None:
    """Namespaces and CRDs have finalizers the server runs after the DELETE answer."""
    for _ in range(200):
        if raw(server, "GET", f"{case.collection}/{case.name}").status == 404:
            return
        time.sleep(0.05)
    raise AssertionError(f"{case.kind} {case.name} was never removed")
