"""Fuzzing the API server's request handling: whatever arrives, the answer is a Status with a
4xx code or a success, never a 500, and the server logs no error or traceback.

Bodies of every shape (nested past the server's limit too) under every content type,
patches of each type, selectors and other query parameters, and paths built from the
API's own words and garbage, all over real HTTP to one server for the module.
"""

from __future__ import annotations

import http.client
import json
import os
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from loguru import logger

from engine.cluster import running_apiserver
from engine.cluster.apiserver.encoding.json_documents import MAX_DEPTH
from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from tests.integration.apiserver.conftest import widget_crd

FUZZ = settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "150")), deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])
CONTENT_TYPES = (
    "application/json", "application/yaml", "application/vnd.kubernetes.protobuf",
    "application/merge-patch+json", "application/json-patch+json",
    "application/strategic-merge-patch+json", "application/apply-patch+yaml", "text/plain",
    "application/x-www-form-urlencoded", "", "application/json; charset=utf-8",
)
COLLECTIONS = (
    "/api/v1/namespaces/default/configmaps", "/api/v1/namespaces/default/pods",
    "/api/v1/namespaces/default/services", "/api/v1/namespaces", "/api/v1/nodes",
    "/apis/example.com/v1/namespaces/default/widgets",
    "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
    "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
    "/api/v1/namespaces/default/serviceaccounts/default/token",
)
OBJECTS = (
    "/api/v1/namespaces/default/configmaps/fuzzed", "/api/v1/namespaces/default/pods/fuzzed",
    "/apis/example.com/v1/namespaces/default/widgets/fuzzed",
    "/api/v1/namespaces/default/pods/fuzzed/status",
)

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(
    max_size=20)
documents = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.sampled_from(["apiVersion", "kind", "metadata", "name", "spec", "data", "status",
                         "labels", "containers", "op", "path", "value", "x"]) | st.text(
            max_size=8), children, max_size=4),
    max_leaves=30,
)


def _nested(depth: int) -> Any:
    value: Any = {}
    for _ in range(depth):
        value = {"x": value}
    return value


bodies = st.one_of(
    documents.map(lambda d: json.dumps(d).encode()),
    st.integers(MAX_DEPTH - 3, MAX_DEPTH * 3).map(lambda n: json.dumps(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "deep"},
         "data": _nested(n)}).encode()),
    st.binary(max_size=64),
)


class Client:
    """One kept-alive connection with the admin token."""

    def __init__(self, server: RunningApiServer) -> None:
        url = urlsplit(server.url)
        assert url.hostname is not None and url.port is not None
        self._connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        self._token = server.token

    def send(self, method: str, path: str, body: bytes = b"",
             content_type: str = "") -> tuple[int, bytes]:
        headers = {"Authorization": f"Bearer {self._token}"}
        if content_type:
            headers["Content-Type"] = content_type
        self._connection.request(method, path, body=body or None, headers=headers)
        response = self._connection.getresponse()
        return response.status, response.read()

    def close(self) -> None:
        self._connection.close()


@pytest.fixture(scope="module")
def fuzzed() -> Iterator[tuple[Client, list[str]]]:
    """A server with the Widget CRD, an object of each kind to patch, and the log it writes
    at ERROR or above."""
    errors: list[str] = []
    sink = logger.add(lambda message: errors.append(str(message)), level="ERROR")
    try:
        with running_apiserver() as server:
            client = Client(server)
            client.send("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                        json.dumps(widget_crd()).encode(), "application/json")
            yield client, errors
            client.close()
    finally:
        logger.remove(sink)


def _check(status: int, body: bytes, errors: list[str]) -> None:
    if status == 504:  # a resourceVersion the server has not reached: the watch cache's 504
        assert json.loads(body)["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
        return
    assert status < 500, body[:300]
    if status >= 400:
        answer = json.loads(body)
        assert (answer["kind"], answer["code"]) == ("Status", status)
    assert errors == []


@FUZZ
@given(path=st.sampled_from(COLLECTIONS), body=bodies,
       content_type=st.sampled_from(CONTENT_TYPES), method=st.sampled_from(["POST", "PUT"]))
def test_any_body_under_any_content_type_is_answered_without_a_500(
    fuzzed: tuple[Client, list[str]], path: str, body: bytes, content_type: str, method: str
) -> None:
    client, errors = fuzzed
    target = path if method == "POST" else OBJECTS[0]
    _check(*client.send(method, target, body, content_type), errors)


def test_plain_text_and_forms_are_415_with_the_accepted_types(
    fuzzed: tuple[Client, list[str]],
) -> None:
    client, _ = fuzzed
    for content_type in ("text/plain", "application/x-www-form-urlencoded"):
        status, body = client.send("POST", COLLECTIONS[0], b'{"metadata":{"name":"t"}}',
                                   content_type)
        assert status == 415
        assert json.loads(body)["message"] == (
            "the body of the request was in an unknown format - accepted media types include: "
            "application/json, application/yaml, application/vnd.kubernetes.protobuf")


@pytest.mark.parametrize(("target", "accepted"), [
    ("/api/v1/namespaces/default/configmaps/nobody-made-me",
     "application/json-patch+json, application/merge-patch+json, "
     "application/strategic-merge-patch+json, application/apply-patch+yaml"),
    ("/apis/example.com/v1/namespaces/default/widgets/nobody-made-me",
     "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"),
])
def test_a_patch_of_an_unknown_type_is_415_before_the_object_is_looked_up(
    fuzzed: tuple[Client, list[str]], target: str, accepted: str,
) -> None:
    """As kube-apiserver's PatchResource, which checks the Content-Type first: a missing
    object with an unknown patch type (or bad options) is 415, not 404 (or 400)."""
    client, _ = fuzzed
    for content_type in ("application/json", "text/plain; charset=utf-8"):
        status, body = client.send("PATCH", target + "?fieldManager=" + "x" * 200, b"{}",
                                   content_type)
        assert (status, json.loads(body)["message"]) == (
            415, "the body of the request was in an unknown format - accepted media types "
                 "include: " + accepted)


LONG = "9" * 5000
"""More digits than Python converts to an int (4,300): int() raised, and the server said 500."""
_TEMPLATE = {"spec": {"restartPolicy": "Never", "containers": [{"name": "a", "image": "b"}]}}


@pytest.mark.parametrize("case", [
    ("GET", f"/api/v1/pods?limit={LONG}", b"", "", 400, "limit: invalid integer value"),
    ("GET", f"/api/v1/pods?resourceVersion={LONG}", b"", "", 400, "value out of range"),
    ("DELETE", f"/api/v1/namespaces/default/configmaps/x?gracePeriodSeconds={LONG}", b"", "",
     400, "gracePeriodSeconds: invalid integer value"),
    ("POST", "/api/v1/namespaces/default/configmaps",
     f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: n, generation: {LONG}}}\n".encode(),
     "application/yaml", 400, "Exceeds the limit (4300 digits) for integer string conversion"),
    ("POST", "/apis/batch/v1/namespaces/default/jobs", json.dumps({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "n"},
        "spec": {"completions": 5, "completionMode": "Indexed", "template": _TEMPLATE,
                 "successPolicy": {"rules": [{"succeededIndexes": LONG}]}}}).encode(),
     "application/json", 422, "cannot convert string to integer for index"),
    ("POST", "/apis/apps/v1/namespaces/default/deployments", json.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "n"},
        "spec": {"selector": {"matchLabels": {"a": "b"}},
                 "strategy": {"rollingUpdate": {"maxSurge": LONG + "%"}},
                 "template": {"metadata": {"labels": {"a": "b"}},
                              "spec": {"containers": [{"name": "a", "image": "b"}]}}}}).encode(),
     # kube-apiserver checks a percent's form, not its number (strconv.Atoi fails, and
     # IsNotMoreThan100Percent takes it for no percent): the Deployment is created.
     "application/json", 201, ""),
], ids=["limit", "resourceVersion", "gracePeriodSeconds", "yaml-integer", "succeededIndexes",
        "maxSurge-percent"])
def test_a_number_of_thousands_of_digits_is_a_client_error_not_a_500(
    fuzzed: tuple[Client, list[str]], case: tuple[str, str, bytes, str, int, str],
) -> None:
    """Each case: method, path, body, content type, the code and words expected."""
    client, errors = fuzzed
    method, path, body, content_type, code, words = case
    status, answer = client.send(method, path, body, content_type)
    assert status == code, answer[:300]
    assert words in (json.loads(answer).get("message") or "")
    assert errors == []


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 487, 1000, 5000])
def test_a_body_nested_past_the_limit_is_400(fuzzed: tuple[Client, list[str]],
                                             depth: int) -> None:
    client, errors = fuzzed
    body = json.dumps({"apiVersion": "example.com/v1", "kind": "Widget",
                       "metadata": {"name": "deep"}, "spec": {"size": 1, "extra": _nested(
                           depth)}}, default=str) if depth < 900 else (
        '{"spec":' * depth + "{}" + "}" * depth)
    status, answer = client.send("POST", COLLECTIONS[5], body.encode(), "application/json")
    assert status == 400, answer[:200]
    assert errors == []


@FUZZ
@given(target=st.sampled_from(OBJECTS), content_type=st.sampled_from(CONTENT_TYPES),
       body=bodies)
def test_any_patch_is_answered_without_a_500(
    fuzzed: tuple[Client, list[str]], target: str, content_type: str, body: bytes
) -> None:
    client, errors = fuzzed
    client.send("POST", COLLECTIONS[0], b'{"metadata":{"name":"fuzzed"}}', "application/json")
    client.send("POST", COLLECTIONS[1], json.dumps({"metadata": {"name": "fuzzed"}, "spec": {
        "containers": [{"name": "a", "image": "b"}]}}).encode(), "application/json")
    query = "?fieldManager=fuzz" if content_type == "application/apply-patch+yaml" else ""
    _check(*client.send("PATCH", target + query, body, content_type), errors)


selector_text = st.text(alphabet="abc=!,()<> in notin exists.-/_\\12", max_size=24)


@FUZZ
@given(path=st.sampled_from(COLLECTIONS[:7]), params=st.dictionaries(
    st.sampled_from(["labelSelector", "fieldSelector", "limit", "continue", "resourceVersion",
                     "resourceVersionMatch", "timeoutSeconds", "fieldValidation", "dryRun",
                     "propagationPolicy", "gracePeriodSeconds", "pretty", "allowWatchBookmarks",
                     "sendInitialEvents"]),
    selector_text, max_size=4), method=st.sampled_from(["GET", "DELETE"]))
def test_any_query_is_answered_without_a_500(
    fuzzed: tuple[Client, list[str]], path: str, params: dict[str, str], method: str
) -> None:
    client, errors = fuzzed
    _check(*client.send(method, f"{path}?{urlencode(params)}"), errors)


segments = st.sampled_from(["api", "apis", "v1", "namespaces", "default", "pods", "status",
                            "watch", "example.com", "widgets", "scale", "log", "token",
                            "binding", "..", "%2F", "", "finalize"]) | st.text(max_size=6)


@FUZZ
@given(parts=st.lists(segments, min_size=1, max_size=8),
       method=st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]))
def test_any_path_is_answered_without_a_500(
    fuzzed: tuple[Client, list[str]], parts: list[str], method: str
) -> None:
    client, errors = fuzzed
    path = "/" + "/".join(quote(part, safe="%") for part in parts)
    body = b"{}" if method in ("POST", "PUT", "PATCH") else b""
    content_type = "application/merge-patch+json" if method == "PATCH" else "application/json"
    status, answer = client.send(method, path, body, content_type if body else "")
    assert status < 500, (path, answer[:300])
    assert errors == []


delete_values = scalars | st.lists(scalars, max_size=3) | st.dictionaries(
    st.sampled_from(["uid", "resourceVersion", "x"]), scalars, max_size=3) | st.integers(
    2**62, 2**70)
delete_options = st.dictionaries(
    st.sampled_from(["gracePeriodSeconds", "preconditions", "orphanDependents",
                     "propagationPolicy", "dryRun", "apiVersion", "kind", "x"]),
    delete_values, max_size=4)


@FUZZ
@given(target=st.sampled_from(OBJECTS[:3] + COLLECTIONS[:3]),
       options=delete_options | documents)
def test_any_delete_options_are_answered_without_a_500(
    fuzzed: tuple[Client, list[str]], target: str, options: Any
) -> None:
    client, errors = fuzzed
    client.send("POST", COLLECTIONS[0], b'{"metadata":{"name":"fuzzed"}}', "application/json")
    _check(*client.send("DELETE", target, json.dumps(options).encode(), "application/json"),
           errors)


versions = st.integers(0, 2**70).map(str) | selector_text


@FUZZ
@given(path=st.sampled_from(COLLECTIONS[:7]), params=st.dictionaries(
    st.sampled_from(["labelSelector", "fieldSelector", "resourceVersion", "resourceVersionMatch",
                     "allowWatchBookmarks", "sendInitialEvents", "continue", "limit"]),
    versions, max_size=4))
def test_any_watch_parameters_are_answered_without_a_500(
    fuzzed: tuple[Client, list[str]], path: str, params: dict[str, str]
) -> None:
    client, errors = fuzzed
    query = urlencode({**params, "watch": "1", "timeoutSeconds": "0"})
    _check(*client.send("GET", f"{path}?{query}"), errors)
