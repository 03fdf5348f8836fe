"""Plain HTTP against the web view, as curl does it: no redirects followed, no JavaScript."""

from __future__ import annotations

import http.client
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from email.message import Message
from urllib.parse import urlsplit

import orjson

TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Message
    body: str


def _connection(url: str) -> tuple[http.client.HTTPConnection, str]:
    parts = urlsplit(url)
    assert parts.hostname is not None
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=TIMEOUT_S), path


def _headers(token: str | None, cookie: str | None) -> dict[str, str]:
    headers = {}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if cookie is not None:
        headers["Cookie"] = cookie
    return headers


def request(url: str, *, method: str = "GET", token: str | None = None,
            cookie: str | None = None, form: str | None = None) -> Answer:
    """One request; the answer as it came (a redirect is not followed)."""
    connection, path = _connection(url)
    headers = _headers(token, cookie)
    if form is not None:
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    try:
        connection.request(method, path, body=form, headers=headers)
        response = connection.getresponse()
        return Answer(response.status, response.headers, response.read().decode())
    finally:
        connection.close()


def session_cookie(answer: Answer) -> str:
    """`name=value` of the session cookie an answer sets."""
    set_cookie = answer.headers["Set-Cookie"]
    assert set_cookie is not None, answer
    return set_cookie.split(";", 1)[0]


@contextmanager
def event_stream(url: str, *, token: str) -> Iterator[Iterator[tuple[str, object]]]:
    """The server-sent events of `url`: (event name, its JSON data), until the block ends."""
    connection, path = _connection(url)
    connection.request("GET", path, headers={**_headers(token, None),
                                             "Accept": "text/event-stream"})
    response = connection.getresponse()
    assert response.status == 200, (response.status, response.read()[:500])
    assert response.headers["Content-Type"].startswith("text/event-stream")

    def events() -> Iterator[tuple[str, object]]:
        name, data = "message", b""
        while True:
            line = response.readline()
            if not line:
                return
            line = line.rstrip(b"\r\n")
            if line.startswith(b"event: "):
                name = line[len(b"event: "):].decode()
            elif line.startswith(b"data: "):
                data += line[len(b"data: "):]
            elif not line and data:
                yield name, orjson.loads(data)
                name, data = "message", b""

    try:
        yield events()
    finally:
        connection.close()


def until(events: Iterator[tuple[str, object]], *, seconds: float) -> Iterator[tuple[str, object]]:
    """`events` for at most `seconds` (checked as each arrives; the stream redraws every few
    seconds, so a quiet stream still gets here)."""
    deadline = time.monotonic() + seconds
    for item in events:
        yield item
        if time.monotonic() > deadline:
            return
