"""Stopping a child process of `up` (its engine, its node) as Kubernetes stops a container:
SIGTERM unless it has exited, its grace to finish, then SIGKILL with a warning. A fake
process records the signals: nothing is started."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from loguru import logger

from engine.subprocesses import stop_gracefully


class FakeProcess:
    """Exits on SIGTERM unless `stubborn`; `exited` before anything is sent."""

    def __init__(self, *, exited: bool = False, stubborn: bool = False) -> None:
        self.running = not exited
        self.stubborn = stubborn
        self.calls: list[Any] = []

    def poll(self) -> int | None:
        return None if self.running else 0

    def send_signal(self, sent: int) -> None:
        self.calls.append(sent)
        if not self.stubborn:
            self.running = False

    def wait(self, timeout: float | None = None) -> int:
        self.calls.append(("wait", timeout))
        if self.running and timeout is not None:
            raise subprocess.TimeoutExpired("child", timeout)
        return 0

    def kill(self) -> None:
        self.calls.append("kill")
        self.running = False


@pytest.fixture
def warnings() -> Iterator[list[str]]:
    said: list[str] = []
    sink = logger.add(lambda m: said.append(m.record["message"]), level="WARNING")
    yield said
    logger.remove(sink)


def test_a_running_child_gets_sigterm_and_its_grace(warnings: list[str]) -> None:
    child = FakeProcess()
    stop_gracefully(child, 5.0, "the engine")  # type: ignore[arg-type]
    assert child.calls == [signal.SIGTERM, ("wait", 5.0)]
    assert warnings == []


def test_a_child_that_has_exited_gets_no_signal() -> None:
    child = FakeProcess(exited=True)
    stop_gracefully(child, 5.0, "the engine")  # type: ignore[arg-type]
    assert child.calls == [("wait", 5.0)]


def test_a_child_still_running_after_its_grace_is_killed_saying_so(
    warnings: list[str]
) -> None:
    child = FakeProcess(stubborn=True)
    stop_gracefully(child, 2.5, "the node")  # type: ignore[arg-type]
    assert child.calls == [signal.SIGTERM, ("wait", 2.5), "kill", ("wait", None)]
    assert warnings == ["the node did not stop within 2.5s: killing it"]
