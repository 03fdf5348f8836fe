"""Termination messages as the kubelet builds them: the message file's last 4 KiB, or under
FallbackToLogsOnError the last 80 log lines cut to their last 2 KiB, and the pod's 12 KiB budget
shared by its containers."""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from engine.cluster.node.status import phases, termination

FALLBACK = {"name": "main", "terminationMessagePolicy": "FallbackToLogsOnError"}
FILE = {"name": "main", "terminationMessagePolicy": "File"}


def lines(count: int, width: int = 8) -> bytes:
    return b"".join(f"{n:0{width - 1}d}\n".encode() for n in range(count))


def test_the_message_file_is_read_from_its_end(tmp_path: Path) -> None:
    path = tmp_path / "termination-log"
    assert termination.read_tail(path, 4096) is None
    path.write_bytes(b"a" * 10 + b"b" * 4096)
    assert termination.read_tail(path, termination.MAX_MESSAGE_BYTES) == b"b" * 4096
    path.write_bytes(b"short")
    assert termination.read_tail(path, 4096) == b"short"


def test_tail_lines_do_not_count_a_last_line_without_newline() -> None:
    assert termination.tail_lines(b"a\nb\nc", 1) == b"b\nc"
    assert termination.tail_lines(b"a\nb\nc\n", 1) == b"c\n"
    assert termination.tail_lines(b"a\nb\n", 2) == b"a\nb\n"
    assert termination.tail_lines(b"a\nb\n", 5) == b"a\nb\n"


def test_a_log_gives_its_last_80_lines_then_their_last_2048_bytes() -> None:
    assert termination.log_message(lines(100)) == lines(100)[20 * 8:]
    assert len(termination.log_message(lines(79))) == 79 * 8
    long_lines = lines(80, width=100)
    assert termination.log_message(long_lines) == long_lines[-2048:]


def test_reading_only_the_logs_end_gives_what_the_whole_log_gives() -> None:
    for log in (lines(500), lines(500, width=3), lines(90, width=30), lines(10) + b"partial"):
        end = log[-(termination.MAX_LOG_BYTES + 1):]
        assert termination.log_message(end) == termination.log_message(log)


def message(container: dict[str, Any], code: int, written: bytes | None,
            log: bytes | None = b"last words\n") -> str | None:
    def read_log() -> bytes | None:
        assert container.get("terminationMessagePolicy") == "FallbackToLogsOnError", (
            "the log is read only for the fallback")
        return log

    return termination.container_message(container, exit_code=code, written=written,
                                         log_end=read_log)


@pytest.mark.parametrize(
    ("container", "code", "written", "expected"),
    [
        (FILE, 1, b"boom\n", "boom\n"),
        (FILE, 0, b"done", "done"),
        (FILE, 1, b"", None),
        (FILE, 1, None, None),
        (FALLBACK, 1, b"boom", "boom"),
        (FALLBACK, 1, b"", "last words\n"),
        (FALLBACK, 2, None, "last words\n"),
        (FALLBACK, 0, b"", None),
        (FALLBACK, 0, None, None),
    ],
)
def test_which_message_a_container_gets(container: dict[str, Any], code: int,
                                        written: bytes | None, expected: str | None) -> None:
    assert message(container, code, written) == expected


def test_an_empty_or_missing_log_gives_no_message_and_bad_bytes_are_replaced() -> None:
    assert message(FALLBACK, 1, b"", log=b"") is None
    assert message(FALLBACK, 1, None, log=None) is None
    assert message(FILE, 1, b"caf\xc3") == "caf\ufffd"


def test_the_message_path_defaults_as_the_api_server_does() -> None:
    assert termination.message_path({}) == PurePosixPath("/dev/termination-log")
    assert termination.message_path({"terminationMessagePath": "/tmp/../msg"}) == PurePosixPath(
        "/msg")


def status(name: str, text: str, *, last: str = "") -> dict[str, Any]:
    return {"name": name, "state": phases.terminated(1, message=text),
            "lastState": phases.terminated(2, message=last) if last else {}}


def test_the_pod_budget_is_shared_evenly_and_cuts_from_the_start() -> None:
    one = termination.fit_pod_budget([status("a", "x" * 4096)], 1)
    assert one[0]["state"]["terminated"]["message"] == "x" * 4096
    five = termination.fit_pod_budget([status("a", "y" * 4000 + "z", last="w" * 3000)], 5)
    cut = 12 * 1024 // 5
    assert five[0]["state"]["terminated"]["message"] == "y" * cut
    assert five[0]["lastState"]["terminated"]["message"] == "w" * cut
    assert five[0]["state"]["terminated"]["exitCode"] == 1


def test_the_budget_leaves_the_statuses_it_was_given_alone() -> None:
    given = [status("a", "é" * 3000), {"name": "b", "state": phases.running("t"),
                                       "lastState": {}}]
    fitted = termination.fit_pod_budget(given, 6)
    assert given[0]["state"]["terminated"]["message"] == "é" * 3000
    assert fitted[0]["state"]["terminated"]["message"] == "é" * 1024
    assert fitted[1] == given[1]
    odd = termination.fit_pod_budget([status("a", "é" * 3000)], 7)
    assert odd[0]["state"]["terminated"]["message"] == "é" * 877 + "\ufffd"


def test_a_message_exactly_at_its_share_is_kept_whole() -> None:
    at_limit = termination.fit_pod_budget([status("a", "m" * 4096)], 3)
    assert at_limit[0]["state"]["terminated"]["message"] == "m" * 4096
    over = termination.fit_pod_budget([status("a", "m" * 4097)], 3)
    assert over[0]["state"]["terminated"]["message"] == "m" * 4096
