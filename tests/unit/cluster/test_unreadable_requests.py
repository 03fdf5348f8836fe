"""A request the HTTP parser cannot read, answered as net/http answers it and logged
quietly: 431 once the request line or headers are too large, 400 otherwise, each with a
Status body; and at most one log line per client per minute, for a bounded number of
clients (anyone who can connect must not be able to fill the log)."""

from __future__ import annotations

import pytest
from aiohttp.http_exceptions import BadHttpMessage, BadStatusLine, LineTooLong

from engine.cluster.apiserver.endpoints import http_errors
from engine.cluster.apiserver.endpoints.http_errors import (
    HTTP_LIMITS,
    unreadable_request_status,
)


def test_the_limits_are_net_https_one_mebibyte_of_header() -> None:
    assert HTTP_LIMITS == {"max_line_size": 1 << 20, "max_field_size": 64 << 10,
                           "max_headers": 128}


@pytest.mark.parametrize("refusal", [
    LineTooLong(b"GET /api?x=...", 1 << 20),
    BadHttpMessage("Too many headers received"),
])
def test_a_request_too_large_to_read_is_431(refusal: BadHttpMessage) -> None:
    assert unreadable_request_status(refusal) == (431, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "Request Header Fields Too Large: the request line may be at most 1048576 "
                   "bytes, a header line 65536 bytes, with at most 128 headers",
        "reason": "", "code": 431})


def test_any_other_unreadable_request_is_400_saying_what_the_parser_said() -> None:
    code, body = unreadable_request_status(BadStatusLine(b"GARBAGE"))
    assert (code, body["reason"], body["code"]) == (400, "BadRequest", 400)
    assert body["message"] == ("the request could not be read as HTTP: "
                               "Bad status line \"b'GARBAGE'\"")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(http_errors.time, "monotonic", fake)
    return fake


def test_one_log_line_per_client_per_minute(clock: Clock) -> None:
    throttle = http_errors._Throttle()
    assert throttle.allows("10.0.0.1") and throttle.allows("10.0.0.2")
    clock.now += 59.9
    assert not throttle.allows("10.0.0.1")
    clock.now += 0.1
    assert throttle.allows("10.0.0.1")


def test_the_throttle_forgets_the_longest_quiet_client_beyond_its_bound(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http_errors, "_REMEMBERED", 3)
    throttle = http_errors._Throttle()
    for client in ("a", "b", "c"):
        assert throttle.allows(client)
    assert not throttle.allows("a")  # refused, and not refreshed
    assert throttle.allows("d")  # "a" is the oldest remembered: forgotten
    assert throttle.allows("a")
    assert not throttle.allows("c")
    clock.now += 60
    assert throttle.allows("c")  # logged again: now the latest remembered
    assert throttle.allows("e")  # forgets "d", the oldest, not "c"
    assert not throttle.allows("c")
