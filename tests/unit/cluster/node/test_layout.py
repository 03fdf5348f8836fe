"""Container log files: `.log` is the latest attempt, `.previous.log` the one `lastState`
describes, also while the container waits to restart."""

from __future__ import annotations

from pathlib import Path

from engine.cluster.node.layout import NodeFiles


def files(tmp_path: Path) -> NodeFiles:
    return NodeFiles(logs_dir=tmp_path / "logs", state_dir=tmp_path / "state")


def write(node: NodeFiles, text: str, *, first: bool) -> None:
    node.begin_log("ns", "pod", "main", first=first).write_text(text)


def logs(node: NodeFiles) -> tuple[str | None, str | None]:
    found = (node.log("ns", "pod", "main"), node.log("ns", "pod", "main", previous=True))
    return tuple(p.read_text() if p.exists() else None for p in found)  # type: ignore[return-value]


def test_an_attempt_kept_as_previous_is_both_until_the_next_one_begins(tmp_path: Path) -> None:
    node = files(tmp_path)
    write(node, "one\n", first=True)
    assert logs(node) == ("one\n", None)
    node.keep_as_previous("ns", "pod", "main")
    assert logs(node) == ("one\n", "one\n")
    write(node, "two\n", first=False)
    assert logs(node) == ("two\n", "one\n")
    node.keep_as_previous("ns", "pod", "main")
    assert logs(node) == ("two\n", "two\n")
    write(node, "three\n", first=False)
    assert logs(node) == ("three\n", "two\n")
    assert sorted(p.name for p in node.log("ns", "pod", "main").parent.iterdir()) == [
        "main.log", "main.previous.log"]


def test_an_attempt_begun_without_being_kept_still_rotates(tmp_path: Path) -> None:
    node = files(tmp_path)
    write(node, "one\n", first=True)
    write(node, "two\n", first=False)
    assert logs(node) == ("two\n", "one\n")


def test_a_first_attempt_starts_clean_and_nothing_to_keep_is_no_error(tmp_path: Path) -> None:
    node = files(tmp_path)
    node.keep_as_previous("ns", "pod", "main")
    write(node, "old\n", first=True)
    node.keep_as_previous("ns", "pod", "main")
    write(node, "new\n", first=True)
    assert logs(node) == ("new\n", None)
