"""Server-sent events: their wire format, and sending only the parts that changed."""

from __future__ import annotations

import json

from engine.app.web.stream import Changes, event


def test_an_event_is_one_json_data_line() -> None:
    sent = event("parts", {"state": "<b>Running</b>\nnext line"})

    lines = sent.decode().split("\n")
    assert lines[0] == "event: parts"
    assert lines[1].startswith("data: ")
    assert json.loads(lines[1][len("data: "):]) == {"state": "<b>Running</b>\nnext line"}
    assert lines[2:] == ["", ""]


def test_only_changed_parts_are_sent_again() -> None:
    changes = Changes()

    assert changes.since_last({"a": "1", "b": "2"}) == {"a": "1", "b": "2"}
    assert changes.since_last({"a": "1", "b": "2"}) == {}
    assert changes.since_last({"a": "1", "b": "3"}) == {"b": "3"}
    assert changes.since_last({"a": "1", "b": "3", "c": ""}) == {"c": ""}
