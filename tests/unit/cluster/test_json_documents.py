"""json_copy: a private, equal copy of any JSON document, whatever orjson can encode."""

from __future__ import annotations

from engine.cluster.apiserver.encoding.json_documents import json_copy


def test_the_copy_is_equal_and_shares_nothing() -> None:
    document = {"metadata": {"labels": {"a": "b"}}, "items": [{"x": 1.5}, True, None]}
    copied = json_copy(document)
    assert copied == document
    copied["metadata"]["labels"]["a"] = "changed"
    copied["items"][0]["x"] = 2
    assert document == {"metadata": {"labels": {"a": "b"}}, "items": [{"x": 1.5}, True, None]}


def test_what_orjson_cannot_encode_is_still_copied() -> None:
    document = {"big": 2**70, 1: ["int key"]}
    copied = json_copy(document)
    assert copied == document
    copied[1].append("more")
    assert document[1] == ["int key"]
