"""Parsing a watch body: events split across reads, a last line without its newline, ERROR
events as typed errors; the connection is given back when read to its end, closed otherwise."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from engine.kube.client import WatchStream
from engine.kube.errors import ApiError, Gone, Unavailable


class FakeResponse:
    """Hands out the given chunks one read at a time, then EOF (or the given error)."""

    def __init__(self, *chunks: bytes, error: Exception | None = None) -> None:
        self.chunks = list(chunks)
        self.error = error
        self.closed = self.released = 0

    def read1(self, amt: int) -> bytes:
        if self.chunks:
            return self.chunks.pop(0)
        if self.error is not None:
            raise self.error
        return b""

    def close(self) -> None:
        self.closed += 1

    def release(self) -> None:
        self.released += 1


def line(event_type: str, **obj: Any) -> bytes:
    return orjson.dumps({"type": event_type, "object": obj}) + b"\n"


def stream(response: FakeResponse) -> WatchStream:
    return WatchStream(response)  # type: ignore[arg-type]


def test_events_split_across_reads_and_a_last_line_without_newline() -> None:
    body = line("ADDED", n=1) + b"\n" + line("MODIFIED", n=2) + line("DELETED", n=3)[:-1]
    response = FakeResponse(body[:5], body[5:40], body[40:])
    events = list(stream(response))
    assert [(e["type"], e["object"]["n"]) for e in events] == [
        ("ADDED", 1), ("MODIFIED", 2), ("DELETED", 3)]
    assert (response.closed, response.released) == (0, 1)


def test_an_expired_resource_version_raises_gone_and_closes() -> None:
    error = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}
    response = FakeResponse(line("ADDED", n=1) + line("ERROR", **error))
    events = stream(response)
    assert next(events)["type"] == "ADDED"
    with pytest.raises(Gone, match="too old"):
        next(events)
    assert (response.closed, response.released) == (1, 0)


def test_other_error_events_and_garbage_raise_api_errors() -> None:
    with pytest.raises(ApiError) as failed:
        next(stream(FakeResponse(line("ERROR", code=500, message="boom"))))
    assert failed.value.status == 500 and str(failed.value) == "boom"
    with pytest.raises(ApiError) as garbage:
        next(stream(FakeResponse(b"{not json}\n")))
    assert garbage.value.reason == "InvalidWatchEvent"


def test_a_broken_connection_is_unavailable() -> None:
    response = FakeResponse(line("ADDED", n=1), error=ConnectionResetError("reset"))
    events = stream(response)
    next(events)
    with pytest.raises(Unavailable, match="reset"):
        next(events)
    assert (response.closed, response.released) == (1, 0)


def test_close_before_reading_releases_once_and_ends_iteration() -> None:
    response = FakeResponse(line("ADDED", n=1))
    events = stream(response)
    events.close()
    events.close()
    assert list(events) == []
    assert (response.closed, response.released) == (1, 0)
