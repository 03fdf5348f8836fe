"""A machine file that cannot be read is one problem at its first line, in the system's
words (a missing file) or the decoder's (a file that is no UTF-8), not an exception."""

from __future__ import annotations

from pathlib import Path

from engine.definition.loader import parse_file


def test_a_missing_file_is_said_at_its_first_line_in_the_systems_words(tmp_path: Path) -> None:
    missing = tmp_path / "gone.yaml"
    definitions, problems = parse_file(missing)
    assert definitions == []
    assert [str(p) for p in problems] == [
        f"{missing}:1:1: error: cannot read the file: No such file or directory"]


def test_a_file_that_is_no_utf8_is_said_in_the_decoders_words(tmp_path: Path) -> None:
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"metadata: {name: caf\xe9}\n")
    definitions, problems = parse_file(latin)
    assert definitions == []
    assert [str(p) for p in problems] == [
        f"{latin}:1:1: error: cannot read the file: 'utf-8' codec can't decode byte 0xe9 in "
        "position 20: invalid continuation byte"]
