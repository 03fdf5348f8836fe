"""Requests meant to hurt the server: each is refused with kube-apiserver's code and a
Status, and nobody else waits for it.
"""

from __future__ import annotations

import json
import socket
import threading
from typing import Any
from urllib.parse import urlsplit

from loguru import logger

from engine.cluster.apiserver.endpoints.http_errors import MAX_HEADERS, MAX_REQUEST_LINE
from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from tests.integration.apiserver.conftest import RawResponse, raw

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def laughs(levels: int, width: int = 9) -> bytes:
    """A ConfigMap whose data is `width`**`levels` strings, written in a few hundred bytes."""
    lines = ["apiVersion: v1", "kind: ConfigMap", "metadata: {name: laughs}",
             'l0: &l0 ["lol"]']
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, levels + 1)]
    return "\n".join(lines).encode()


def status(response: RawResponse) -> dict[str, Any]:
    answer: dict[str, Any] = json.loads(response.body)
    assert (answer["kind"], answer["code"]) == ("Status", response.status)
    return answer


def test_a_yaml_alias_bomb_is_refused_while_other_requests_are_answered(
    server: RunningApiServer,
) -> None:
    """Ten levels of nine aliases (3.5 billion strings, once ten minutes of a stalled
    server) are refused as go-yaml refuses them; a GET sent meanwhile is answered."""
    answers: dict[str, RawResponse] = {}

    def bomb() -> None:
        answers["bomb"] = raw(server, "POST", CONFIGMAPS, laughs(10),
                              headers={"Content-Type": "application/yaml"})

    sender = threading.Thread(target=bomb)
    sender.start()
    answers["get"] = raw(server, "GET", CONFIGMAPS)
    sender.join(timeout=60)
    assert not sender.is_alive(), "the bomb was not answered"
    assert answers["get"].status == 200
    refused = status(answers["bomb"])
    assert refused["code"] == 400 and refused["reason"] == "BadRequest"
    assert refused["message"] == ("the request body could not be decoded: error converting YAML "
                                  "to JSON: yaml: document contains excessive aliasing")
    assert raw(server, "GET", f"{CONFIGMAPS}/laughs").status == 404


def test_a_few_yaml_aliases_are_still_accepted(server: RunningApiServer) -> None:
    body = (b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: anchors, labels: &l {a: b}}\n"
            b"data: {x: y}\n")
    created = raw(server, "POST", CONFIGMAPS, body, headers={"Content-Type": "application/yaml"})
    assert created.status == 201, created.body
    assert json.loads(created.body)["metadata"]["labels"] == {"a": "b"}


def test_a_delete_options_field_of_the_wrong_type_is_400_in_gos_words(
    server: RunningApiServer,
) -> None:
    raw(server, "POST", CONFIGMAPS, {"metadata": {"name": "target"}})
    for options, message in [
        ({"gracePeriodSeconds": "x"}, "json: cannot unmarshal string into Go struct field "
         "DeleteOptions.gracePeriodSeconds of type int64"),
        ({"gracePeriodSeconds": 1.5}, "json: cannot unmarshal number 1.5 into Go struct field "
         "DeleteOptions.gracePeriodSeconds of type int64"),
        ({"orphanDependents": "yes"}, "json: cannot unmarshal string into Go struct field "
         "DeleteOptions.orphanDependents of type bool"),
        ({"preconditions": {"uid": 7}}, "json: cannot unmarshal number into Go struct field "
         "DeleteOptions.preconditions.uid of type string"),
        ([1], "json: cannot unmarshal array into Go value of type v1.DeleteOptions"),
    ]:
        refused = raw(server, "DELETE", f"{CONFIGMAPS}/target", options)
        assert refused.status == 400, (options, refused.body)
        assert status(refused)["message"] == message
    assert raw(server, "GET", f"{CONFIGMAPS}/target").status == 200  # nothing was deleted
    deleted = raw(server, "DELETE", f"{CONFIGMAPS}/target", {"gracePeriodSeconds": 0})
    assert deleted.status == 200


def test_list_options_kube_apiserver_refuses_are_422(server: RunningApiServer) -> None:
    bogus = raw(server, "GET", f"{CONFIGMAPS}?resourceVersion=1&resourceVersionMatch=Bogus")
    assert bogus.status == 422
    assert status(bogus)["message"] == (
        'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: '
        '"Bogus": supported values: "Exact", "NotOlderThan", ""')
    alone = raw(server, "GET", f"{CONFIGMAPS}?resourceVersionMatch=NotOlderThan")
    assert alone.status == 422
    assert "forbidden unless resourceVersion is provided" in status(alone)["message"]


def test_a_resource_version_that_is_not_a_uint64_is_400_and_a_future_one_504(
    server: RunningApiServer,
) -> None:
    beyond = str(2**64)
    for query in (f"watch=1&resourceVersion={beyond}", f"resourceVersion={beyond}",
                  "watch=1&resourceVersion=abc"):
        refused = raw(server, "GET", f"{CONFIGMAPS}?{query}")
        assert refused.status == 400, (query, refused.body)
        assert "strconv.ParseUint" in status(refused)["message"]
    listed = raw(server, "GET", f"{CONFIGMAPS}?resourceVersion={2**63}")
    assert listed.status == 504, listed.body  # a list too, not only a watch
    future = raw(server, "GET", f"{CONFIGMAPS}?watch=1&resourceVersion={2**63}")
    assert future.status == 504
    answer = status(future)
    assert answer["reason"] == "Timeout"
    assert answer["message"].startswith(f"Timeout: Too large resource version: {2**63}, current:")
    assert answer["details"]["causes"] == [{"reason": "ResourceVersionTooLarge",
                                            "message": "Too large resource version"}]


def _send_raw(server: RunningApiServer, request: bytes) -> tuple[int, bytes]:
    """One request written as bytes on a fresh connection; the status code and body."""
    url = urlsplit(server.url)
    assert url.hostname is not None and url.port is not None
    with socket.create_connection((url.hostname, url.port), timeout=30) as connection:
        connection.sendall(request)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def test_requests_too_large_or_unreadable_get_a_status_and_one_quiet_log_line(
    server: RunningApiServer,
) -> None:
    logged: list[str] = []
    sink = logger.add(lambda message: logged.append(str(message)), level="DEBUG",
                      format="{level} {message}\n{exception}")
    # Each request ends where the parser gives up, so the server has read all of it and
    # its answer is not lost to a reset (a client that sends more gets it as Go's does).
    try:
        path = b"/api/v1/configmaps?labelSelector="
        line = b"GET " + path + b"a" * (MAX_REQUEST_LINE + 1 - len(path))
        for _ in range(3):
            code, body = _send_raw(server, line)
            assert code == 431
            answer = json.loads(body)
            assert (answer["kind"], answer["code"]) == ("Status", 431)
        headers = b"".join(b"X-%d: y\r\n" % i for i in range(MAX_HEADERS + 2))
        code, body = _send_raw(server, b"GET /api HTTP/1.1\r\n" + headers)
        assert (code, json.loads(body)["code"]) == (431, 431)
        code, body = _send_raw(server, b"GET /api HTTP/1.1\r\nHost: x\r\nBad Header\r\n")
        assert code == 400
        assert json.loads(body)["reason"] == "BadRequest"
    finally:
        logger.remove(sink)
    refusals = [line for line in logged if "unreadable request" in line]
    assert len(refusals) == 1, logged  # one line per client per minute
    assert refusals[0].startswith("WARNING")
    assert not any("Traceback" in line or line.startswith("ERROR") for line in logged), logged


def test_a_long_selector_kube_apiserver_reads_is_read(server: RunningApiServer) -> None:
    """100,000 characters of selector fit in net/http's 1 MiB: answered, here 400 for a
    label key longer than 63 characters, as kube-apiserver answers."""
    answer = raw(server, "GET", "/api/v1/namespaces/default/configmaps?labelSelector="
                 + "a" * 100_000)
    assert answer.status == 400
    assert status(answer)["reason"] == "BadRequest"


def test_a_json_patch_removing_metadata_is_400_and_changes_nothing(
    server: RunningApiServer,
) -> None:
    raw(server, "POST", CONFIGMAPS, {"metadata": {"name": "kept", "labels": {"a": "b"}}})
    answer = raw(server, "PATCH", f"{CONFIGMAPS}/kept", [{"op": "remove", "path": "/metadata"}],
                 headers={"Content-Type": "application/json-patch+json"})
    assert answer.status == 400
    assert status(answer)["message"] == (
        "the name of the object () does not match the name on the URL (kept)")
    assert json.loads(raw(server, "GET", f"{CONFIGMAPS}/kept").body)["metadata"]["labels"] == {
        "a": "b"}


def test_the_401_body_is_a_compact_status_like_every_other_answer(
    server: RunningApiServer,
) -> None:
    answer = raw(server, "GET", CONFIGMAPS, token="not-a-token")
    assert answer.status == 401
    # kube-apiserver's bytes: Go's json.Encoder ends the body with a newline.
    assert answer.body == (b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
                           b'"message":"Unauthorized","reason":"Unauthorized","code":401}\n')


def test_an_error_body_is_kube_apiservers_bytes(server: RunningApiServer) -> None:
    # The official Python client's e2e tests compare a 409's body as text: metav1.Status's
    # fields in Go's order (details before code) and json.Encoder's closing newline.
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "twice"}}
    assert raw(server, "POST", CONFIGMAPS, body).status == 201
    answer = raw(server, "POST", CONFIGMAPS, body)
    assert answer.status == 409
    assert answer.body == (
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        b'"message":"configmaps \\"twice\\" already exists","reason":"AlreadyExists",'
        b'"details":{"name":"twice","kind":"configmaps"},"code":409}\n')


def test_a_successful_body_ends_as_kube_apiservers(server: RunningApiServer) -> None:
    # Objects, lists and Statuses go through Go's json.Encoder (a closing newline); /version
    # through json.MarshalIndent (two-space indentation, no newline).
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ended"}}
    created = raw(server, "POST", CONFIGMAPS, body)
    assert created.status == 201
    assert created.body.endswith(b"}\n") and b"\n" not in created.body[:-1]
    listed = raw(server, "GET", CONFIGMAPS)
    assert listed.body.endswith(b"]}\n")
    deleted = raw(server, "DELETE", CONFIGMAPS + "/ended")
    assert deleted.status == 200 and deleted.body.endswith(b"}\n")
    version = raw(server, "GET", "/version")
    assert version.body.startswith(b'{\n  "major": "') and version.body.endswith(b"}")
