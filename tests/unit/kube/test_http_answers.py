"""Answers read by engine/kube/http.py's own header reading (`_Answer`, `_Headers`), fed
raw bytes through a socket pair: the body's framing and the connection's reuse come out
as the standard library's `email.parser` reading made them."""

from __future__ import annotations

import http.client
import socket
from collections.abc import Iterator

import pytest

from engine.kube.http import _Answer, _Headers


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    ours, theirs = socket.socketpair()
    yield ours, theirs
    ours.close()
    theirs.close()


def answer(pair: tuple[socket.socket, socket.socket], raw: bytes, *,
           response_class: type[http.client.HTTPResponse] = _Answer,
           method: str = "GET") -> http.client.HTTPResponse:
    ours, theirs = pair
    theirs.sendall(raw)
    theirs.shutdown(socket.SHUT_WR)
    response = response_class(ours, method=method)
    response.begin()
    return response


ANSWERS = [
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n"
    b'{"a":1}',
    b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end",
    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: Close\r\n\r\nok",
    b"HTTP/1.1 200 OK\r\n\r\nno length: read to the end",
    b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n",
    b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n"
    b"Keep-Alive: timeout=5\r\n\r\nok",
    b"HTTP/1.1 100 Continue\r\nX-A: b\r\n\r\nHTTP/1.1 409 Conflict\r\nCONTENT-LENGTH: 2\r\n\r\n{}",
    b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\nConnection: close\r\n\r\nbody",
    b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\nbody",
    b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nTransfer-Encoding: Chunked\r\n\r\n"
    b"2\r\nab\r\n0\r\n\r\n",
]


@pytest.mark.parametrize("raw", ANSWERS)
def test_an_answer_reads_as_the_standard_library_reads_it(raw: bytes) -> None:
    seen = []
    for response_class in (_Answer, http.client.HTTPResponse):
        ours, theirs = socket.socketpair()
        try:
            response = answer((ours, theirs), raw, response_class=response_class)
            seen.append((response.status, response.version, response.chunked,
                         response.length, response.will_close, response.read(),
                         response.isclosed()))
        finally:
            ours.close()
            theirs.close()
    assert seen[0] == seen[1]


def test_a_head_answer_has_no_body(pair: tuple[socket.socket, socket.socket]) -> None:
    response = answer(pair, b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", method="HEAD")
    assert response.length == 0 and response.read() == b""


def test_an_unknown_protocol_is_refused(pair: tuple[socket.socket, socket.socket]) -> None:
    with pytest.raises(http.client.UnknownProtocol):
        answer(pair, b"HTTP/2.0 200 OK\r\n\r\n")


def test_header_fields_by_any_case_joined_and_unfolded() -> None:
    headers = _Headers.parse([b"Warning: 299 - \"a\"\r\n", b"warning: 299 - \"b\"\r\n",
                              b"X-Folded: one\r\n", b"\ttwo\r\n", b"no colon\r\n",
                              b"Content-Length:  12 \r\n", b"\r\n", b"After: end\r\n"])
    assert headers.get("WARNING") == '299 - "a", 299 - "b"'
    assert headers.get("x-folded") == "one two"
    assert headers.get("content-length") == "12"
    assert headers.get("after") is None and headers.get("no colon") is None
    assert headers.get_all("Content-Length") == ["12"]
    assert headers.get_all("absent", []) == []
