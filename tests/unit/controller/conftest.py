"""Shared fixtures for the controller plumbing tests: a clock that moves only when told, and
the log records a test made."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from loguru import logger


class FakeClock:
    """A monotonic clock for injection: `now` stays put until `advance` moves it."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def records() -> Iterator[list[dict[str, Any]]]:
    """Every log record (DEBUG and up) made during the test, as loguru's record dicts."""
    captured: list[dict[str, Any]] = []
    sink = logger.add(lambda message: captured.append(dict(message.record)), level="DEBUG")
    yield captured
    logger.remove(sink)
