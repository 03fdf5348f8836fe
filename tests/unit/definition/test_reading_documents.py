"""Every document of a file is read with its own problems: those of an earlier document are
kept beside a later one's."""

from __future__ import annotations

from engine.definition.loader import read_text


def test_each_documents_problems_are_kept() -> None:
    raws, problems = read_text("a: 1\na: 2\n---\nb: 1\nb: 2\n", "f.yaml")
    assert [str(p) for p in problems] == ["f.yaml:2:1: error: duplicate key 'a'",
                                          "f.yaml:5:1: error: duplicate key 'b'"]
    assert [raw.usable for raw in raws] == [False, False]
