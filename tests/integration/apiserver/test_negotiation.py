"""The answer's media type follows the Accept header as kube-apiserver's negotiation does."""

from __future__ import annotations

import json

import pytest
import yaml

from engine.cluster.apiserver.endpoints.negotiation import answer_type
from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from tests.integration.apiserver.conftest import raw

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def test_a_media_type_the_server_cannot_write_is_406(server: RunningApiServer) -> None:
    answer = raw(server, "GET", CONFIGMAPS, headers={"Accept": "application/xml"})
    assert answer.status == 406
    assert json.loads(answer.body) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "only the following media types are accepted: application/json, "
                   "application/yaml, application/vnd.kubernetes.protobuf",
        "reason": "NotAcceptable", "code": 406}


def test_yaml_preferred_gets_yaml(server: RunningApiServer) -> None:
    raw(server, "POST", CONFIGMAPS, {"metadata": {"name": "shown"}, "data": {"a": "b"}})
    answer = raw(server, "GET", f"{CONFIGMAPS}/shown", headers={"Accept": "application/yaml"})
    assert answer.status == 200
    assert answer.headers["Content-Type"].startswith("application/yaml")
    assert yaml.safe_load(answer.body)["data"] == {"a": "b"}


@pytest.mark.parametrize(("accept", "answer"), [
    ("", "json"), ("*/*", "json"), ("application/json", "json"),
    ("application/yaml", "yaml"), ("application/xml, application/yaml;q=0.5", "yaml"),
    ("application/yaml;q=0.5, application/json", "json"),
    ("application/vnd.kubernetes.protobuf, */*", "json"),
    ("application/json;as=Table;v=v1;g=meta.k8s.io, application/json", "json"),
    ("application/xml", None), ("text/html, application/json;q=0", None),
])
def test_the_best_acceptable_type_is_chosen(accept: str, answer: str | None) -> None:
    assert answer_type(accept) == answer
